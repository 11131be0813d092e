"""Which process holds a run in ``running``, and what the next open of the workspace does when it is gone.

Why: a run's final state is written by the process that started it (the CLI, the app, a queue coordinator). When
that process dies at once (SIGKILL, a power cut, the app closed by the machine) nobody writes it, and the run would
read ``running`` forever. So every move to ``running`` records its owner here: the pid, the host and the
process's start time. A pid alone is not enough: pids are recycled, and a new process that happens to get the
same pid must not keep a dead run ``running``; the start time tells the two apart. :func:`interrupt_orphans`,
called when a workspace is opened (and before each run), marks every ``running`` run of this host whose owner is
gone ``interrupted``, naming why and how to finish it; a run whose owner is alive is left alone, and a run of
another host (a workspace on a shared disk) is left to that host, which alone can see its processes.
"""

from __future__ import annotations

import os
import socket
import sqlite3
from dataclasses import dataclass
from typing import TYPE_CHECKING

import psutil
from sqlite_utils import Database, Migrations

from dynadesk.errors import RunStateError, StoreError
from dynadesk.store.datasets import now_iso
from dynadesk.store.evaluations_records import RunChange

if TYPE_CHECKING:
    from dynadesk.store import Store

migrations = Migrations("dynadesk.run_owner")

START_TOLERANCE_S = 1.0  # psutil derives a start time from boot time + clock ticks: equal to well under a second

__all__ = ["Owner", "current_owner", "interrupt_orphans", "interrupt_orphans_on_open", "owner_gone", "record_owner"]


@migrations()
def m001_run_owners(db: Database) -> None:
    """The process holding each ``running`` run (see this module's docstring)."""
    db.execute("""
        CREATE TABLE run_owners (
            evaluation_id INTEGER PRIMARY KEY REFERENCES evaluations(id) ON DELETE CASCADE,
            pid INTEGER NOT NULL,
            host TEXT NOT NULL,
            started REAL,
            recorded_at TEXT NOT NULL
        )""")


@dataclass(frozen=True)
class Owner:
    """A process: its pid, host and start time (seconds since the epoch; None when it could not be read)."""

    pid: int
    host: str
    started: float | None


def process_start(pid: int) -> float | None:
    """The start time of process ``pid``, or None when there is no such process (or it cannot be read)."""
    try:
        return float(psutil.Process(pid).create_time())
    except (psutil.Error, OSError, ValueError):
        return None


def current_owner() -> Owner:
    """This process as a run's owner."""
    return Owner(os.getpid(), socket.gethostname(), process_start(os.getpid()))


def record_owner(store: Store, run_id: int, owner: Owner | None = None) -> None:
    """Record ``owner`` (default: this process) as the process holding run ``run_id`` in ``running``."""
    owner = owner or current_owner()
    with store.atomic() as db:
        db.execute("INSERT OR REPLACE INTO run_owners(evaluation_id, pid, host, started, recorded_at)"
                   " VALUES (?,?,?,?,?)", [run_id, owner.pid, owner.host, owner.started, now_iso()])


def owner_gone(owner: Owner) -> str | None:
    """Why ``owner`` (a process of this host) no longer runs, or None while it does."""
    now_started = process_start(owner.pid)
    if now_started is None:
        return f"the worker (pid {owner.pid} on {owner.host}) is gone"
    if owner.started is not None and abs(now_started - owner.started) > START_TOLERANCE_S:
        return (f"the worker (pid {owner.pid} on {owner.host}) is gone: pid {owner.pid} is now another process,"
                f" started after the run's")
    return None


def _running(db: Database) -> list[tuple[int, Owner | None]]:
    """Every ``running`` run with its recorded owner; a run from before owners were recorded falls back on its
    ``pid``/``host`` columns (start time unknown); None when neither names a process."""
    rows = db.execute(
        "SELECT e.id, o.pid, o.host, o.started, e.pid, e.host FROM evaluations e"
        " LEFT JOIN run_owners o ON o.evaluation_id = e.id WHERE e.status = 'running' ORDER BY e.id").fetchall()
    out: list[tuple[int, Owner | None]] = []
    for run_id, opid, ohost, ostarted, pid, host in rows:
        if opid is not None:
            out.append((int(run_id), Owner(int(opid), str(ohost), ostarted)))
        elif pid is not None and host is not None:
            out.append((int(run_id), Owner(int(pid), str(host), None)))
        else:
            out.append((int(run_id), None))
    return out


def interrupt_orphans(store: Store) -> list[int]:
    """Mark every ``running`` run of this host whose owner is gone ``interrupted`` (resumable), with the reason in
    its error; returns their ids. Runs owned by a live process, by another host, or by no recorded process (a run
    being created) are left alone. A run that moved on meanwhile (its owner finished it) is skipped."""
    host = socket.gethostname()
    marked: list[int] = []
    for run_id, owner in _running(store.db):
        if owner is None or owner.host != host:
            continue
        why = owner_gone(owner)
        if why is None:
            continue
        try:
            store.evaluations.transition(
                run_id, "interrupted", RunChange(verdict="interrupted", finished_at=now_iso(),
                                                 error=f"{why}; the app or machine stopped during the run; "
                                                       f"finish it with 'dynadesk eval --resume {run_id}'"))
        except RunStateError:
            continue
        marked.append(run_id)
    return marked


def interrupt_orphans_on_open(store: Store) -> list[int]:
    """:func:`interrupt_orphans` as the workspace's open path runs it: best effort, since a read-only workspace
    (or a full disk) must still open for reading; the runs are then marked by the next open that can write."""
    try:
        return interrupt_orphans(store)
    except (StoreError, sqlite3.Error):
        return []


def attach(store: Store) -> None:
    """Nothing to attach: the functions above take the store."""
