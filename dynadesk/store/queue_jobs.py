"""SQL for the coordinator's own copy of every job it sent: what binds a worker's result to the job.

The broker is writable by anyone holding its password, so the coordinating workspace keeps, here and never on
the broker, the digest of each job's payload (model files, spec, data, request with its limits) and the
challenge it issued for the job's current round, with how many results it has refused. A worker's signed
result must name this payload digest and answer this challenge (see :mod:`dynadesk.queue.identity`); each
refusal draws a new challenge, so a result signed for an earlier round never stands again. Jobs sent before
this table existed have no row: the coordinator says so and fails their run rather than trusting the broker.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

from sqlite_utils import Database, Migrations

from dynadesk.store.datasets import now_iso

if TYPE_CHECKING:
    from dynadesk.store import Store

migrations = Migrations("dynadesk.queue_jobs")


@migrations()
def m001_queue_jobs(db: Database) -> None:
    """The coordinator's copy of each job it sent (see this module's docstring)."""
    db.execute("""
        CREATE TABLE queue_jobs (
            job TEXT PRIMARY KEY,
            run_id INTEGER NOT NULL,
            payload_digest TEXT NOT NULL,
            challenge TEXT NOT NULL,
            refusals INTEGER NOT NULL DEFAULT 0,
            last_refusal TEXT,
            created_at TEXT NOT NULL
        )""")


@dataclass(frozen=True)
class SentJob:
    """One job as the coordinator sent it: the payload digest and the challenge a result must answer."""

    job: str
    run_id: int
    payload_digest: str
    challenge: str
    refusals: int
    last_refusal: str | None


def record(store: Store, job: str, run_id: int, payload_digest: str, challenge: str) -> None:
    """Remember a job just sent (before its message goes out, so no result can arrive for an unknown job)."""
    with store.atomic() as db:
        db.execute("INSERT INTO queue_jobs (job, run_id, payload_digest, challenge, created_at) "
                   "VALUES (?, ?, ?, ?, ?)", [job, run_id, payload_digest, challenge, now_iso()])


def get(store: Store, job: str) -> SentJob | None:
    """The coordinator's copy of ``job``; None for a job this workspace has no record of."""
    row = store.db.execute("SELECT job, run_id, payload_digest, challenge, refusals, last_refusal FROM queue_jobs "
                           "WHERE job = ?", [job]).fetchone()
    return SentJob(*row) if row else None


def refused(store: Store, job: str, why: str, new_challenge: str) -> int:
    """Count one more refused result of ``job`` and issue ``new_challenge`` for its next round; the count now."""
    with store.atomic() as db:
        db.execute("UPDATE queue_jobs SET refusals = refusals + 1, last_refusal = ?, challenge = ? WHERE job = ?",
                   [why[:2000], new_challenge, job])
    got = get(store, job)
    return got.refusals if got else 0


def attach(store: Store) -> None:
    """Nothing to attach: the functions above take the store (as :mod:`dynadesk.store.worker_keys` does)."""
