"""Where :func:`dynadesk.tasks.load_tasks` finds tasks beyond the bundled folder, and the one lookup a request pins.

A workspace may hold its own task definitions (``dynadesk tasks add FILE.yaml``, kept in the store's
``workspace_tasks`` table). Every caller resolves a task through :func:`~dynadesk.tasks.load_tasks` /
:func:`~dynadesk.tasks.get_task`, so the workspace's tasks join the bundled ones there, through the sources an open
store registers here.

A lookup checks the bundled folder's files (a glob and their stat) and reads the workspace's task table. One request
of the hub asked for its task five times or more (choosing the target, checking the inputs, the round, the example):
inside :func:`one_lookup` the first answer stands for the rest of the block, so a request also sees one version of
the tasks from start to end.
"""

from __future__ import annotations

import contextvars
import os
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from dynadesk.tasks import Task

_SOURCES: dict[str, Callable[[], dict[str, Task] | None]] = {}
_PINNED: contextvars.ContextVar[dict[str, Task] | None] = contextvars.ContextVar("dynadesk_tasks_pinned",
                                                                                 default=None)


def register_task_source(key: str, source: Callable[[], dict[str, Task] | None]) -> None:
    """Let :func:`~dynadesk.tasks.load_tasks` see the tasks ``source`` returns (an open workspace store). ``key``:
    ``"<database path>#<store id>"``; stores over one database file (an absolute path) are read once per call (the
    hub opens a store per worker thread); a gone store's source answers None and the next one of that file is read
    instead."""
    _SOURCES[key] = source


def unregister_task_source(key: str) -> None:
    _SOURCES.pop(key, None)


def workspace_tasks() -> dict[str, Task]:
    """Every registered workspace's own tasks, by name (the first source of a name wins)."""
    out: dict[str, Task] = {}
    read: set[str] = set()
    for key, source in list(_SOURCES.items()):
        database = key.rpartition("#")[0]
        if database in read:
            continue
        found = source()
        if found is None:
            continue
        if os.path.isabs(database):  # a file; an in-memory store or a CLI context is its own source
            read.add(database)
        for name, task in found.items():
            out.setdefault(name, task)
    return out


@contextmanager
def one_lookup() -> Iterator[None]:
    """Inside the block (this thread or task only), :func:`~dynadesk.tasks.load_tasks` of the default tasks answers
    what its first call in the block found. Not for code that adds or changes tasks within the block."""
    token = _PINNED.set({})
    try:
        yield
    finally:
        _PINNED.reset(token)


def pinned() -> dict[str, Task] | None:
    """The tasks pinned in this block (None outside :func:`one_lookup`, or before its first lookup)."""
    found = _PINNED.get()
    return found or None


def pin(found: dict[str, Task]) -> None:
    """Keep ``found`` for the rest of the :func:`one_lookup` block (outside one: nothing)."""
    current = _PINNED.get()
    if current is not None and not current:
        current.update(found)
