"""Core schema: workspace metadata (key/value), shared by every area; the database file's mode.

The database holds the annotation HMAC secret and every recorded response,
so it and its WAL/shared-memory files are readable by their owner only
(SQLite gives ``-wal``/``-shm`` the database file's mode when it creates them).
"""

from __future__ import annotations

import os
import sqlite3
import stat
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import TYPE_CHECKING, Any

from sqlite_utils import Database, Migrations

from dynadesk.errors import StoreError

if TYPE_CHECKING:
    from dynadesk.store import Store

PRIVATE_FILE_MODE = 0o600
SIDE_FILES = ("-wal", "-shm", "-journal")

migrations = Migrations("dynadesk.core")


@migrations()
def m001_meta(db: Database) -> None:
    db.table("meta").create({"key": str, "value": str}, pk="key")


def get_meta(db: Database, key: str) -> str | None:
    row = db.execute("SELECT value FROM meta WHERE key = ?", [key]).fetchone()
    return row[0] if row else None


def set_meta(db: Database, key: str, value: str) -> None:
    db.execute("INSERT INTO meta(key, value) VALUES(?, ?) ON CONFLICT(key) DO UPDATE SET value = excluded.value",
               [key, value])


def make_private(db_path: Path) -> None:
    """Create ``db_path`` as 0600 when missing; narrow it and its side files to 0600 when wider.

    An existing database file is never opened here: closing any descriptor of it drops every POSIX lock
    this process's SQLite connections hold on it, so a store opened on one thread while another thread's
    connection was in use lost that connection's locks (writes of other processes were then lost: issue 37)."""
    if not db_path.exists():
        fd = os.open(db_path, os.O_RDONLY | os.O_CREAT, PRIVATE_FILE_MODE)
        os.close(fd)
    for path in [db_path, *(db_path.with_name(db_path.name + suffix) for suffix in SIDE_FILES)]:
        try:
            mode = stat.S_IMODE(path.stat().st_mode)
        except FileNotFoundError:
            continue
        if mode & ~PRIVATE_FILE_MODE:
            os.chmod(path, mode & PRIVATE_FILE_MODE)


@contextmanager
def disk_full_is_store_error(path: Path | None) -> Iterator[None]:
    """SQLite's SQLITE_FULL ("database or disk is full") as a :class:`StoreError` naming the database: the
    statement or transaction was rolled back, so nothing of it is stored."""
    try:
        yield
    except sqlite3.OperationalError as exc:
        if "disk is full" not in str(exc):
            raise
        raise StoreError(f"the disk holding {path} is full: {exc}; nothing of this change was written "
                         "(rolled back); free some space and try again") from exc


class Repo:
    """What every area's repository is built on: it keeps the :class:`Store` it was attached to and reads the
    connection through it, so each area holds one way to reach the database, not its own copy of this."""

    def __init__(self, store: Store) -> None:
        self._store = store

    @property
    def db(self) -> Database:
        return self._store.db


class Record:
    """What a stored row's value type (a dataclass) adds: its fields as a plain dict, the form ``--json`` and the
    APIs print. Shallow on purpose: a field holding a dict or list is handed on as it is, not copied."""

    def to_dict(self) -> dict[str, Any]:
        return dict(self.__dict__)
