"""The PostgreSQL backend: a psycopg connection pool, one advisory lock for writers, and the one
place psycopg errors become :class:`~dynadesk.errors.StoreError` / :class:`~dynadesk.errors.ConfigError`.

Every write transaction takes ``pg_advisory_xact_lock(LOG_LOCK)`` first: appending to the hash chain
reads the head and writes the next entry, and two processes doing that at once would both compute the
same ``seq`` (on a prototype, 250 of 320 concurrent uploads failed on the unique key without it). The
lock is held until commit or rollback, so a crashed writer can never leave it taken.
"""

from __future__ import annotations

import threading
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from typing import Any
from urllib.parse import urlsplit

import psycopg
from psycopg.conninfo import conninfo_to_dict, make_conninfo
from psycopg_pool import ConnectionPool

from dynadesk.errors import ConfigError, StoreError
from dynadesk.sync.server.backend import Backend, Tx
from dynadesk.sync.server.dialect import POSTGRES, redact

LOG_LOCK = 0x44594E41  # "DYNA": the advisory lock key every writer of one database takes first
POOL_SIZE = 8  # connections per process: the upload threads, the app's read threads and the admin
CONNECT_TIMEOUT_S = 10
POOL_TIMEOUT_S = 5
"""How long a request waits for a pooled connection: in an outage it gets its 503 after this, not after 30 s."""


def _first_line(exc: BaseException) -> str:
    """libpq's message on one line, without its generic lead-in."""
    text = " ".join(str(exc).split()).removeprefix("connection failed: ")
    return text or type(exc).__name__


class _Rows:
    """A finished statement's rows (the pooled connection is already back in the pool)."""

    def __init__(self, rows: list[Any], rowcount: int):
        self._rows, self.rowcount = rows, rowcount

    def fetchone(self) -> Any:
        return self._rows[0] if self._rows else None

    def fetchall(self) -> list[Any]:
        return list(self._rows)


class _NoLock:
    """PostgreSQL serves concurrent reads itself: nothing to hold between threads of one process."""

    def __enter__(self) -> None:
        return None

    def __exit__(self, *exc: object) -> None:
        return None


class _PoolReader:
    """``ServerDB.conn`` on PostgreSQL: each statement runs on a pooled connection (autocommit)."""

    def __init__(self, backend: PostgresBackend):
        self.backend = backend

    def execute(self, sql: str, params: Sequence[Any] = (), /) -> _Rows:
        with self.backend.connection() as raw:
            cur = Tx(raw, POSTGRES).execute(sql, params)
            rows = cur.fetchall() if getattr(cur, "description", None) else []
            return _Rows(rows, cur.rowcount)


class PostgresBackend(Backend):
    dialect = POSTGRES

    def __init__(self, url: str, pool_size: int = POOL_SIZE):
        self.name = redact(url)
        try:
            urlsplit(url).port  # noqa: B018 - raises ValueError on a port that is not a number
            params = conninfo_to_dict(url)
        except (ValueError, psycopg.Error) as exc:
            raise ConfigError(f"--db {self.name}: not a valid PostgreSQL URL: {_first_line(exc)}"
                              " (expected postgresql://user:password@host:port/dbname)") from exc
        params.setdefault("connect_timeout", CONNECT_TIMEOUT_S)
        params.setdefault("application_name", "dynadesk-server")
        conninfo = make_conninfo(**params)  # type: ignore[arg-type]
        try:  # one direct attempt first: a wrong password or a stopped server is reported at once, by name
            psycopg.connect(conninfo, autocommit=True).close()
        except psycopg.Error as exc:
            raise StoreError(f"cannot connect to PostgreSQL database {self.name}: {_first_line(exc)}") from exc
        self.pool: ConnectionPool[psycopg.Connection[Any]] = ConnectionPool(
            conninfo, min_size=1, max_size=pool_size, kwargs={"autocommit": True}, open=True, timeout=POOL_TIMEOUT_S,
            check=ConnectionPool.check_connection, name="dynadesk-server")  # an empty query on each borrow
        # (~0.1 ms): after a database restart or failover every request still gets a live connection
        self.lock = _NoLock()
        self.conn = _PoolReader(self)
        self._closed = threading.Event()

    @contextmanager
    def _errors(self) -> Iterator[None]:
        try:
            yield
        except psycopg.Error as exc:
            raise StoreError(f"PostgreSQL database {self.name}: {_first_line(exc)}") from exc

    @contextmanager
    def connection(self) -> Iterator[psycopg.Connection[Any]]:
        with self._errors(), self.pool.connection() as raw:
            yield raw

    @contextmanager
    def tx(self) -> Iterator[Tx]:
        with self.connection() as raw, raw.transaction():
            raw.execute("SELECT pg_advisory_xact_lock(%s)", [LOG_LOCK])
            yield Tx(raw, POSTGRES)

    def integrity_check(self) -> str:
        """PostgreSQL checks its own pages; ``"ok"`` here means the database answers a query."""
        with self.connection() as raw:
            raw.execute("SELECT 1").fetchone()
        return "ok"

    def close(self) -> None:
        if not self._closed.is_set():
            self._closed.set()
            self.pool.close()
