"""Where the server database lives: a SQLite file (a lab's own board, the demo) or PostgreSQL (a
public board run by several server processes and machines).
:func:`~dynadesk.sync.server.connect.open_backend` picks one from
the ``--db`` value; :class:`~dynadesk.sync.server.db.ServerDB` holds all SQL and talks to both alike.

A backend gives two things: ``conn`` for one-statement reads, and :meth:`Backend.tx`, one write
transaction that every writer of every process takes in turn (SQLite: a file lock next to the
database; PostgreSQL: a transaction-scoped advisory lock taken first), so the transparency log
stays one hash chain however many processes append to it. Driver errors are translated into
:class:`~dynadesk.errors.StoreError` at this boundary.
"""

from __future__ import annotations

import abc
import fcntl
import os
import sqlite3
import threading
from collections.abc import Iterator, Sequence
from contextlib import AbstractContextManager, contextmanager
from pathlib import Path
from typing import Any, Protocol

from dynadesk.errors import StoreError
from dynadesk.sync.server.checkpoint import WAL_SIZE_LIMIT, Checkpointer
from dynadesk.sync.server.dialect import SQLITE, Dialect


class Cursor(Protocol):
    @property
    def rowcount(self) -> int: ...

    def fetchone(self) -> Any: ...

    def fetchall(self) -> list[Any]: ...


class Executor(Protocol):
    """Anything that runs one statement with ``?`` placeholders: ``ServerDB.conn``, a transaction."""

    def execute(self, sql: str, params: Sequence[Any] = ..., /) -> Cursor: ...


class Tx:
    """One open transaction (or migration step) on either dialect; statements use ``?`` placeholders."""

    def __init__(self, raw: Any, dialect: Dialect):
        self.raw, self.dialect = raw, dialect

    def execute(self, sql: str, params: Sequence[Any] = (), /) -> Cursor:
        if params or not self.dialect.postgres:
            return self.raw.execute(self.dialect.sql(sql), params)  # type: ignore[no-any-return]
        return self.raw.execute(sql)  # type: ignore[no-any-return]  # psycopg: no placeholders, no %% escaping

    def write_all(self, statements: Sequence[tuple[str, Sequence[Any]]]) -> None:
        """Several writes to different tables whose results nobody reads, as one statement on PostgreSQL (each a
        data-modifying ``WITH`` part: one round trip and one parse, not one per write; they share a snapshot and
        foreign keys are checked at the statement's end), one after another on SQLite. The same statements, so
        the same rows, on both."""
        if not self.dialect.postgres or len(statements) < 2:
            for sql, params in statements:
                self.execute(sql, params)
            return
        parts = [f"w{i} AS ({sql})" for i, (sql, _) in enumerate(statements[:-1])]
        sql = f"WITH {', '.join(parts)} {statements[-1][0]}"
        self.execute(sql, [p for _, params in statements for p in params])

    def executemany(self, sql: str, rows: Sequence[Sequence[Any]]) -> None:
        if self.dialect.postgres:
            with self.raw.cursor() as cur:
                cur.executemany(self.dialect.sql(sql), rows)
        else:
            self.raw.executemany(sql, rows)

    def bulk_insert(self, table: str, columns: Sequence[str], rows: Sequence[Sequence[Any]]) -> None:
        """Many rows into one table at once: PostgreSQL's ``COPY ... FROM STDIN``, SQLite's ``executemany``
        (bulk imports and benchmarks; names are the caller's constants, never input)."""
        cols = ", ".join(columns)
        if self.dialect.postgres:
            with self.raw.cursor() as cur, cur.copy(f"COPY {table} ({cols}) FROM STDIN") as copy:
                for row in rows:
                    copy.write_row(row)
        else:
            self.raw.executemany(f"INSERT INTO {table} ({cols}) VALUES ({', '.join('?' * len(columns))})", rows)

    def ddl(self, statement: str) -> None:
        """A schema statement with this dialect's column types."""
        self.execute(self.dialect.ddl(statement))


class Backend(abc.ABC):
    """What :class:`ServerDB` needs of a database, whichever it is (SQLite and PostgreSQL implement it)."""

    dialect: Dialect
    name: str  # the database as messages name it (a path, or a URL without its password)
    path: Path | None = None  # the SQLite file, if any
    conn: Executor  # one-statement reads (and, on SQLite, the only connection)
    lock: AbstractContextManager[Any]  # held around uses of ``conn`` that must not interleave across threads
    checkpointer: Checkpointer | None = None

    @abc.abstractmethod
    def tx(self) -> AbstractContextManager[Tx]:
        """One write transaction, holding the writers' lock (every process's) for its whole length."""

    def data_version(self) -> int | None:
        """A number that changes when another connection commits (SQLite), or None when there is none."""
        return None

    def integrity_check(self) -> str:
        return "ok"

    @abc.abstractmethod
    def close(self) -> None:
        """Release the connection(s), the lock and any background checkpointer."""


class SQLiteBackend(Backend):
    """One connection per process, guarded by a thread lock; writers of all processes (server workers,
    the admin CLI) queue on a file lock, so SQLite never has to arbitrate between them.

    Server workers queue on the flock, which wakes a waiter as soon as it is released; SQLite's own busy
    handler would instead sleep in growing steps (1, 2, 5, 10 ms ...) under contention."""

    dialect = SQLITE

    def __init__(self, path: str | Path, *, background_checkpoint: bool = False):
        self.path = Path(path)
        self.name = str(self.path)
        try:
            self._lock_fd = os.open(str(self.path) + ".lock", os.O_RDWR | os.O_CREAT, 0o600)
        except OSError as exc:
            raise StoreError(f"cannot create the lock file next to server database {self.path}: {exc}") from exc
        self.lock = threading.RLock()
        try:
            self.sqlite = sqlite3.connect(str(self.path), timeout=30, check_same_thread=False, isolation_level=None)
            for pragma in ("journal_mode=WAL", "foreign_keys=ON", "synchronous=NORMAL", "busy_timeout=30000"):
                self.sqlite.execute(f"PRAGMA {pragma}")
        except sqlite3.DatabaseError as exc:
            os.close(self._lock_fd)
            raise StoreError(f"cannot open server database {self.path}: {exc}") from exc
        self.conn = self.sqlite
        if background_checkpoint:
            self.sqlite.execute("PRAGMA wal_autocheckpoint=0")
            self.sqlite.execute(f"PRAGMA journal_size_limit={WAL_SIZE_LIMIT}")
            self.checkpointer = Checkpointer(self.path)

    @contextmanager
    def tx(self) -> Iterator[Tx]:
        with self.lock:
            fcntl.flock(self._lock_fd, fcntl.LOCK_EX)
            try:
                try:
                    self.sqlite.execute("BEGIN IMMEDIATE")
                except sqlite3.Error as exc:
                    raise StoreError(f"server database {self.path}: {exc}") from exc
                try:
                    yield Tx(self.sqlite, SQLITE)
                except BaseException:
                    self.sqlite.execute("ROLLBACK")
                    raise
                try:
                    self.sqlite.execute("COMMIT")
                except sqlite3.Error as exc:
                    raise StoreError(f"server database {self.path}: {exc}") from exc
            finally:
                fcntl.flock(self._lock_fd, fcntl.LOCK_UN)

    def data_version(self) -> int | None:
        with self.lock:
            return int(self.sqlite.execute("PRAGMA data_version").fetchone()[0])

    def integrity_check(self) -> str:
        """SQLite's ``PRAGMA integrity_check``: ``"ok"`` or the problems found."""
        with self.lock:
            return "; ".join(str(r[0]) for r in self.sqlite.execute("PRAGMA integrity_check").fetchall())

    def close(self) -> None:
        if self.checkpointer is not None:
            self.checkpointer.stop()
        self.sqlite.close()
        os.close(self._lock_fd)
