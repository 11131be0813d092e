"""The PostgreSQL backend: a psycopg connection pool, one advisory lock for writers, and the one
place psycopg errors become :class:`~dynadesk.errors.StoreError` / :class:`~dynadesk.errors.ConfigError`.

Every write transaction takes ``pg_advisory_xact_lock(LOG_LOCK)`` first: appending to the hash chain
reads the head and writes the next entry, and two processes doing that at once would both compute the
same ``seq`` (on a prototype, 250 of 320 concurrent uploads failed on the unique key without it). The
lock is held until commit or rollback, so a crashed writer can never leave it taken.

Round trips are what an upload's database work costs the serving process (~50 us of client CPU each; issue 50
item 4): a transaction's ``BEGIN`` and lock go as one query, and a borrowed connection is not probed with an extra
one; a connection the database dropped (a restart, a failover) is found by its first statement instead, then the
pool's idle connections are checked and that statement runs once more. (Sending the last write and ``COMMIT`` as one
pipeline was measured too: it cost more client CPU than the round trip it saved, as in docs/operators.md.)
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from typing import Any, TypeVar
from urllib.parse import urlsplit

import psycopg
from psycopg.conninfo import conninfo_to_dict, make_conninfo
from psycopg_pool import ConnectionPool

from dynadesk.errors import ConfigError, StoreError
from dynadesk.sync.server.backend import Backend, Tx
from dynadesk.sync.server.dialect import POSTGRES, redact

LOG_LOCK = 0x44594E41  # "DYNA": the advisory lock key every writer of one database takes first
_BEGIN = f"BEGIN; SELECT pg_advisory_xact_lock({LOG_LOCK})"  # no parameters: one simple query, one round trip
POOL_SIZE = 8  # connections per process: the upload threads, the app's read threads and the admin
CONNECT_TIMEOUT_S = 10
POOL_TIMEOUT_S = 5
"""How long a request waits for a pooled connection: in an outage it gets its 503 after this, not after 30 s."""
T = TypeVar("T")


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
        def run(raw: psycopg.Connection[Any]) -> _Rows:
            cur = Tx(raw, POSTGRES).execute(sql, params)
            rows = cur.fetchall() if getattr(cur, "description", None) else []
            return _Rows(rows, cur.rowcount)

        raw, rows = self.backend.first(run)  # a read: run again on a live connection if this one was dropped
        self.backend.pool.putconn(raw)
        return rows


def _rollback(raw: psycopg.Connection[Any]) -> None:
    """End a failed transaction (its error is what the caller reports, not this one's)."""
    if raw.broken or raw.info.transaction_status == psycopg.pq.TransactionStatus.IDLE:
        return
    try:
        raw.execute("ROLLBACK")
    except psycopg.Error:
        pass  # the pool discards or resets the connection when it is given back


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
            name="dynadesk-server")  # no probe on each borrow (a round trip): see first()
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

    def first(self, statement: Callable[[psycopg.Connection[Any]], T]) -> tuple[psycopg.Connection[Any], T]:
        """A borrowed connection (the caller gives it back with ``pool.putconn``) and what ``statement`` returned
        on it. A connection the database dropped fails its first statement: then the pool's idle connections are
        checked (dead ones replaced) and ``statement`` runs once more, so nothing probes every borrow. Only for a
        first statement that changed nothing when it failed (a read, ``BEGIN``)."""
        with self._errors():
            for retry in (False, True):
                raw = self.pool.getconn()
                try:
                    return raw, statement(raw)
                except psycopg.OperationalError:
                    self.pool.putconn(raw)  # a broken connection is discarded, not pooled again
                    if retry or not raw.broken:
                        raise
                    self.pool.check()
                except BaseException:
                    self.pool.putconn(raw)
                    raise
        raise AssertionError("unreachable")  # pragma: no cover

    @contextmanager
    def tx(self) -> Iterator[Tx]:
        raw, _ = self.first(lambda c: c.execute(_BEGIN))
        try:
            with self._errors():
                try:
                    yield Tx(raw, POSTGRES)
                    raw.execute("COMMIT")
                except BaseException:
                    _rollback(raw)
                    raise
        finally:
            self.pool.putconn(raw)

    def integrity_check(self) -> str:
        """PostgreSQL checks its own pages; ``"ok"`` here means the database answers a query."""
        with self.connection() as raw:
            raw.execute("SELECT 1").fetchone()
        return "ok"

    def close(self) -> None:
        if not self._closed.is_set():
            self._closed.set()
            self.pool.close()
