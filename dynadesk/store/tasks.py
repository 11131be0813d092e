"""SQL for the workspace's own task definitions (``dynadesk tasks add FILE.yaml``).

A row keeps the file's text as given (``tasks show`` prints what the owner wrote), the parsed
definition as canonical JSON and its digest. Opening the store registers its tasks with
:mod:`dynadesk.tasks`, so every ``get_task`` / ``load_tasks`` in the process sees them.
"""

from __future__ import annotations

import json
import os
import sqlite3
import threading
import weakref
from collections import OrderedDict
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from sqlite_utils import Database, Migrations

from dynadesk import task_sources
from dynadesk import tasks as _tasks
from dynadesk.canonical import canonical_bytes
from dynadesk.errors import AlreadyExistsError, NotFoundError, ValidationError
from dynadesk.store.datasets import now_iso

if TYPE_CHECKING:
    from dynadesk.store import Store

migrations = Migrations("dynadesk.tasks")


@migrations()
def m001_tasks(db: Database) -> None:
    db.execute("""
        CREATE TABLE workspace_tasks (
            name TEXT PRIMARY KEY,
            digest TEXT NOT NULL,
            definition TEXT NOT NULL,
            source_text TEXT NOT NULL,
            added_at TEXT NOT NULL
        )""")


@dataclass(frozen=True)
class WorkspaceTask:
    task: _tasks.Task
    digest: str
    source_text: str
    added_at: str


# (table, what it is) whose ``task`` column keeps a task in use
_USERS = (("datasets", "dataset(s)"), ("rounds", "annotation round(s)"), ("evaluations", "run(s)"),
          ("models", "model(s)"), ("annotated_examples", "annotated example(s)"))


class TaskRepo:
    def __init__(self, store: Store):
        self.store = store
        self._parsed: dict[str, _tasks.Task] = {}

    def add(self, task: _tasks.Task, source_text: str) -> WorkspaceTask:
        """Store a validated task; a name already used (bundled or here) is refused."""
        if task.name in _tasks.bundled_task_names():
            raise AlreadyExistsError(f"task '{task.name}' is a bundled task; choose another name")
        digest = _tasks.task_digest(task)
        definition = canonical_bytes(task.to_dict()).decode()
        added = now_iso()
        try:
            with self.store.atomic() as db:
                db.execute("INSERT INTO workspace_tasks(name, digest, definition, source_text, added_at) "
                           "VALUES (?, ?, ?, ?, ?)", [task.name, digest, definition, source_text, added])
        except sqlite3.IntegrityError as exc:
            existing = self.get(task.name)
            same = " (the same definition)" if existing.digest == digest else f" as {existing.digest}"
            raise AlreadyExistsError(f"task '{task.name}' is already in this workspace{same}") from exc
        return WorkspaceTask(task, digest, source_text, added)

    def get(self, name: str) -> WorkspaceTask:
        row = self.store.db.execute(
            "SELECT name, digest, definition, source_text, added_at FROM workspace_tasks WHERE name = ?",
            [name]).fetchone()
        if row is None:
            raise NotFoundError(f"no workspace task '{name}' (add one with: dynadesk tasks add FILE.yaml)")
        return WorkspaceTask(self._task(row[1], row[2]), row[1], row[3], row[4])

    def by_digest(self, digest: str) -> WorkspaceTask | None:
        row = self.store.db.execute("SELECT name FROM workspace_tasks WHERE digest = ?", [digest]).fetchone()
        return self.get(row[0]) if row else None

    def all(self) -> dict[str, _tasks.Task]:
        rows = self.store.db.execute("SELECT name, digest, definition FROM workspace_tasks ORDER BY name").fetchall()
        return {name: self._task(digest, definition) for name, digest, definition in rows}

    def usage(self, name: str) -> list[str]:
        """What keeps ``name`` in use: ``["2 dataset(s)", ...]``; empty when it can go."""
        out = []
        for table, what in _USERS:
            n = self.store.db.execute(f"SELECT COUNT(*) FROM {table} WHERE task = ?", [name]).fetchone()[0]
            if n:
                out.append(f"{n} {what}")
        return out

    def remove(self, name: str) -> None:
        """Remove a workspace task; refused while data, rounds, models or runs use it."""
        self.get(name)
        with self.store.atomic() as db:
            used = self.usage(name)
            if used:
                raise ValidationError(f"task '{name}' is in use ({', '.join(used)}); remove those first")
            db.execute("DELETE FROM workspace_tasks WHERE name = ?", [name])

    def _task(self, digest: str, definition: str) -> _tasks.Task:
        task = self._parsed.get(digest)
        if task is None:
            task = _tasks.Task.from_dict({**json.loads(definition), "source": "workspace"})
            self._parsed[digest] = task
        return task

    def _source(self) -> dict[str, _tasks.Task]:
        """The workspace's tasks for :func:`dynadesk.tasks.load_tasks`, which any thread may call (the app's GUI
        thread while a worker closes this store, say): read over a short-lived connection of the caller's own,
        never over the store's (one SQLite connection used from two threads at once crashes the process)."""
        path = self.store.path
        if path is None:
            try:
                return self.all()
            except sqlite3.ProgrammingError:  # the store was closed
                return {}
        rows = _READERS.rows(Path(path), "SELECT name, digest, definition FROM workspace_tasks ORDER BY name")
        return {name: self._task(digest, definition) for name, digest, definition in rows or ()}


class _ReadOnlyConnections:
    """Read-only connections to workspace databases, kept between task lookups and shared by every thread.

    A lookup opened one connection per call, ~1 ms: 13 % of the hub's CPU under 30 users (each prediction, vote
    and stats poll looks its task up). One lock serialises their use (a lookup's query takes ~50 us; one SQLite
    connection used from two threads at once crashes the process, see ``_source``). A connection is reopened when
    the path names another file than it was opened on (a workspace removed and made again), closed when a store
    over its file closes (so the file can be deleted, on Windows too), and at most :attr:`KEEP` are held, the least
    recently used closed first (a test session opens thousands of workspaces)."""

    KEEP = 8

    def __init__(self) -> None:
        self.held: OrderedDict[Path, tuple[tuple[int, int], sqlite3.Connection]] = OrderedDict()
        self._lock = threading.Lock()

    def rows(self, path: Path, sql: str) -> list[Any] | None:
        """``sql``'s rows from ``path``, or None when the file is gone or cannot answer (not yet migrated)."""
        with self._lock:
            try:
                st = os.stat(path)
            except OSError:
                self._close(path)
                return None
            ident = (st.st_dev, st.st_ino)
            held = self.held.get(path)
            if held is not None and held[0] != ident:
                self._close(path)
                held = None
            try:
                if held is None:
                    conn = sqlite3.connect(f"{path.resolve().as_uri()}?mode=ro", uri=True, timeout=5,
                                           check_same_thread=False)
                    held = self.held[path] = (ident, conn)
                    while len(self.held) > self.KEEP:
                        self._close(next(iter(self.held)))
                self.held.move_to_end(path)
                return held[1].execute(sql).fetchall()
            except sqlite3.Error:
                self._close(path)
                return None

    def close(self, path: Path) -> None:
        """Close the connection to ``path``'s file, if one is held (its store closed)."""
        with self._lock:
            self._close(path)

    def _close(self, path: Path) -> None:
        held = self.held.pop(path, None)
        if held is not None:
            held[1].close()


_READERS = _ReadOnlyConnections()


def source_key(store: Store) -> str:
    return f"{store.path}#{id(store)}"


def attach(store: Store) -> None:
    """Attach the repo and register its tasks, by weak reference: a dropped store stops being a source."""
    store.tasks = TaskRepo(store)
    ref = weakref.ref(store.tasks)

    def source() -> dict[str, _tasks.Task] | None:
        repo = ref()
        return repo._source() if repo is not None else None

    task_sources.register_task_source(source_key(store), source)


def detach(store: Store) -> None:
    task_sources.unregister_task_source(source_key(store))
    if store.path is not None:
        _READERS.close(Path(store.path))
