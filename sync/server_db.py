"""The leaderboard server's own SQLite database: the only place server SQL lives.

Tables: ``keys`` (registered submitter keys, with revocation), ``board_datasets``
(the datasets each task's board accepts, by name and digest), ``bundles`` (the
exact signed bytes of every accepted bundle), ``log`` (the transparency hash
chain) and ``board`` (the latest bundle of each model and submitter, so a
board query never scans all bundles). An upload is one ``BEGIN IMMEDIATE``
transaction: bundle row, log entry and board row appear together or not at all.

Schema changes after version 1 are numbered :data:`MIGRATIONS`, applied in order on open
(``meta.schema_version`` records the last one), so an existing database upgrades.
Version 2 adds ``meta.config_version``, bumped by triggers on every change to ``keys`` or
``board_datasets``: uploads read keys and datasets from an in-process cache that is
revalidated with ``PRAGMA data_version`` (any other connection committed?) and, only then,
that one counter, so an admin revoking a key in another process takes effect at once.
"""

from __future__ import annotations

import fcntl
import json
import os
import sqlite3
import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from dynadesk.errors import AlreadyExistsError, NotFoundError, ReplayError, StoreError
from dynadesk.sync.checkpoint import WAL_SIZE_LIMIT, Checkpointer

# (seq, bundle_id, bundle_sha256, received_at, prev_hash) -> hex; the rule lives in translog.py
EntryHashFn = Callable[[int, str, str, str, str], str]

SCHEMA = [
    """CREATE TABLE IF NOT EXISTS meta (key TEXT PRIMARY KEY, value TEXT NOT NULL)""",
    """CREATE TABLE IF NOT EXISTS keys (
        fingerprint TEXT PRIMARY KEY, public_key BLOB NOT NULL, name TEXT NOT NULL,
        added_at TEXT NOT NULL, revoked_at TEXT, revoke_reason TEXT)""",
    """CREATE TABLE IF NOT EXISTS board_datasets (
        task TEXT NOT NULL, name TEXT NOT NULL, split TEXT NOT NULL, digest TEXT NOT NULL,
        size INTEGER NOT NULL, added_at TEXT NOT NULL, PRIMARY KEY (task, name))""",
    """CREATE TABLE IF NOT EXISTS bundles (
        seq INTEGER PRIMARY KEY, id TEXT NOT NULL UNIQUE, task TEXT NOT NULL, model_name TEXT NOT NULL,
        model_digest TEXT NOT NULL, key_fingerprint TEXT NOT NULL REFERENCES keys(fingerprint),
        created_at TEXT NOT NULL, received_at TEXT NOT NULL, raw BLOB NOT NULL)""",
    """CREATE INDEX IF NOT EXISTS bundles_task ON bundles(task, seq)""",
    """CREATE TABLE IF NOT EXISTS log (
        seq INTEGER PRIMARY KEY, bundle_id TEXT NOT NULL UNIQUE, bundle_sha256 TEXT NOT NULL,
        received_at TEXT NOT NULL, prev_hash TEXT NOT NULL, entry_hash TEXT NOT NULL)""",
    """CREATE TABLE IF NOT EXISTS board (
        task TEXT NOT NULL, model_name TEXT NOT NULL, key_fingerprint TEXT NOT NULL,
        bundle_id TEXT NOT NULL, created_at TEXT NOT NULL, model_digest TEXT NOT NULL, metrics TEXT NOT NULL,
        PRIMARY KEY (task, model_name, key_fingerprint))""",
]
_BUMP = "UPDATE meta SET value = CAST(value AS INTEGER) + 1 WHERE key = 'config_version'"
MIGRATIONS: list[list[str]] = [  # MIGRATIONS[i] takes schema version i + 1 to i + 2; never edit an applied one
    ["INSERT OR IGNORE INTO meta(key, value) VALUES ('config_version', '1')"]
    + [f"CREATE TRIGGER IF NOT EXISTS {table}_{op.lower()}_config AFTER {op} ON {table} BEGIN {_BUMP}; END"
       for table in ("keys", "board_datasets") for op in ("INSERT", "UPDATE", "DELETE")],
]
SCHEMA_VERSION = str(1 + len(MIGRATIONS))


def now_iso() -> str:
    return datetime.now(UTC).isoformat(timespec="milliseconds")


@dataclass(frozen=True)
class KeyRow:
    fingerprint: str
    public_key: bytes
    name: str
    added_at: str
    revoked_at: str | None
    revoke_reason: str | None

    def to_dict(self) -> dict[str, Any]:
        return {"fingerprint": self.fingerprint, "public_key": self.public_key.hex(), "name": self.name,
                "added_at": self.added_at, "revoked_at": self.revoked_at, "revoke_reason": self.revoke_reason}


@dataclass(frozen=True)
class UploadConfig:
    """What an upload is checked against: registered keys and each task's accepted datasets."""

    keys: dict[str, KeyRow]
    datasets: dict[str, dict[tuple[str, str], dict[str, Any]]]  # task -> (task, name) -> dataset row


class ServerDB:
    """One connection per process, guarded by a thread lock; writers of all processes (server workers,
    the admin CLI) queue on a file lock, so SQLite never has to arbitrate between them.

    ``background_checkpoint=True`` (the serving app) moves WAL checkpoints to a :class:`Checkpointer`
    thread so no upload waits for one."""

    def __init__(self, path: str | Path, *, background_checkpoint: bool = False):
        self.path = Path(path)
        try:
            self._lock_fd = os.open(str(self.path) + ".lock", os.O_RDWR | os.O_CREAT, 0o600)
        except OSError as exc:
            raise StoreError(f"cannot create the lock file next to server database {self.path}: {exc}") from exc
        self.lock = threading.RLock()
        try:
            self.conn = sqlite3.connect(str(self.path), timeout=30, check_same_thread=False, isolation_level=None)
            for pragma in ("journal_mode=WAL", "foreign_keys=ON", "synchronous=NORMAL", "busy_timeout=30000"):
                self.conn.execute(f"PRAGMA {pragma}")
            with self._file_lock(), self._tx():
                self._migrate()
        except sqlite3.DatabaseError as exc:
            raise StoreError(f"cannot open server database {self.path}: {exc}") from exc
        self._board_cache: dict[str, tuple[tuple[int, int], list[dict[str, Any]]]] = {}
        self._config: tuple[int, str | None, UploadConfig] | None = None  # (data_version, config_version, ...)
        self.checkpointer: Checkpointer | None = None
        if background_checkpoint:
            self.conn.execute("PRAGMA wal_autocheckpoint=0")
            self.conn.execute(f"PRAGMA journal_size_limit={WAL_SIZE_LIMIT}")
            self.checkpointer = Checkpointer(self.path)

    def _migrate(self) -> None:
        """Create the version-1 tables if missing, then apply the migrations this database lacks."""
        for stmt in SCHEMA:
            self.conn.execute(stmt)
        self.conn.execute("INSERT OR IGNORE INTO meta(key, value) VALUES ('schema_version', '1')")
        current = int(self.conn.execute("SELECT value FROM meta WHERE key = 'schema_version'").fetchone()[0])
        if current > int(SCHEMA_VERSION):
            raise StoreError(f"server database {self.path} has schema version {current}, newer than this"
                             f" program's {SCHEMA_VERSION} (upgrade dynadesk)")
        for version in range(current, int(SCHEMA_VERSION)):
            for stmt in MIGRATIONS[version - 1]:
                self.conn.execute(stmt)
            self.conn.execute("UPDATE meta SET value = ? WHERE key = 'schema_version'", [str(version + 1)])

    def schema_version(self) -> int:
        with self.lock:
            return int(self.conn.execute("SELECT value FROM meta WHERE key = 'schema_version'").fetchone()[0])

    @contextmanager
    def _tx(self) -> Iterator[sqlite3.Connection]:
        self.conn.execute("BEGIN IMMEDIATE")
        try:
            yield self.conn
        except BaseException:
            self.conn.execute("ROLLBACK")
            raise
        self.conn.execute("COMMIT")

    @contextmanager
    def tx(self) -> Iterator[sqlite3.Connection]:
        """One write transaction, serialised across threads (lock) and processes (flock on DB + '.lock').

        Server workers queue on the flock, which wakes a waiter as soon as it is released; SQLite's own
        busy handler would instead sleep in growing steps (1, 2, 5, 10 ms ...) under contention.
        """
        with self.lock, self._file_lock(), self._tx() as conn:
            yield conn

    @contextmanager
    def _file_lock(self) -> Iterator[None]:
        fcntl.flock(self._lock_fd, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(self._lock_fd, fcntl.LOCK_UN)

    def close(self) -> None:
        if self.checkpointer is not None:
            self.checkpointer.stop()
        self.conn.close()
        os.close(self._lock_fd)

    # ------------------------------------------------------------------ keys
    def add_key(self, fingerprint: str, public_key: bytes, name: str) -> KeyRow:
        with self.tx() as c:
            row = c.execute("SELECT revoked_at FROM keys WHERE fingerprint = ?", [fingerprint]).fetchone()
            if row is not None:
                state = "revoked" if row[0] else "registered"
                raise AlreadyExistsError(f"key {fingerprint} is already {state}"
                                         + (" (a revoked key cannot be re-added)" if row[0] else ""))
            c.execute("INSERT INTO keys(fingerprint, public_key, name, added_at) VALUES (?,?,?,?)",
                      [fingerprint, public_key, name, now_iso()])
            self._config = None
        return self.get_key(fingerprint)

    def revoke_key(self, fingerprint: str, reason: str = "") -> KeyRow:
        with self.tx() as c:
            cur = c.execute("UPDATE keys SET revoked_at = ?, revoke_reason = ? WHERE fingerprint = ?"
                            " AND revoked_at IS NULL", [now_iso(), reason, fingerprint])
            self._config = None
            if cur.rowcount == 0:
                self.get_key(fingerprint)  # raises NotFoundError when unknown
        return self.get_key(fingerprint)

    def get_key(self, fingerprint: str) -> KeyRow:
        with self.lock:
            row = self.conn.execute("SELECT fingerprint, public_key, name, added_at, revoked_at, revoke_reason"
                                    " FROM keys WHERE fingerprint = ?", [fingerprint]).fetchone()
        if row is None:
            raise NotFoundError(f"no key with fingerprint {fingerprint} is registered")
        return KeyRow(row[0], bytes(row[1]), *row[2:])

    def list_keys(self) -> list[KeyRow]:
        with self.lock:
            rows = self.conn.execute("SELECT fingerprint, public_key, name, added_at, revoked_at, revoke_reason"
                                     " FROM keys ORDER BY added_at, fingerprint").fetchall()
        return [KeyRow(r[0], bytes(r[1]), *r[2:]) for r in rows]

    # ------------------------------------------------------------------ datasets
    def add_dataset(self, task: str, name: str, split: str, digest: str, size: int, replace: bool = False) -> None:
        with self.tx() as c:
            if not replace and c.execute("SELECT 1 FROM board_datasets WHERE task = ? AND name = ?",
                                         [task, name]).fetchone():
                raise AlreadyExistsError(f"task '{task}' already accepts a dataset named '{name}' (use --replace)")
            c.execute("INSERT OR REPLACE INTO board_datasets(task, name, split, digest, size, added_at)"
                      " VALUES (?,?,?,?,?,?)", [task, name, split, digest, size, now_iso()])
            self._config = None

    def remove_dataset(self, task: str, name: str) -> None:
        with self.tx() as c:
            self._config = None
            if c.execute("DELETE FROM board_datasets WHERE task = ? AND name = ?", [task, name]).rowcount == 0:
                raise NotFoundError(f"task '{task}' has no dataset named '{name}'")

    def datasets(self, task: str | None = None) -> list[dict[str, Any]]:
        with self.lock:
            rows = self.conn.execute("SELECT task, name, split, digest, size, added_at FROM board_datasets"
                                     " WHERE (? IS NULL OR task = ?) ORDER BY task, name", [task, task]).fetchall()
        return [dict(zip(("task", "name", "split", "digest", "size", "added_at"), r)) for r in rows]

    def upload_config(self) -> UploadConfig:
        """Keys and datasets for checking an upload, cached until any of them changes in any process."""
        with self.lock:
            version = self.conn.execute("PRAGMA data_version").fetchone()[0]
            cached = self._config
            if cached is not None and cached[0] == version:
                return cached[2]
            row = self.conn.execute("SELECT value FROM meta WHERE key = 'config_version'").fetchone()
            config_version = row[0] if row else None
            if cached is not None and config_version is not None and cached[1] == config_version:
                self._config = (version, config_version, cached[2])  # others committed uploads only
                return cached[2]
            keys = {k.fingerprint: k for k in self.list_keys()}
            datasets: dict[str, dict[tuple[str, str], dict[str, Any]]] = {}
            for d in self.datasets():
                datasets.setdefault(d["task"], {})[(d["task"], d["name"])] = d
            config = UploadConfig(keys, datasets)
            self._config = (version, config_version, config)
            return config

    # ------------------------------------------------------------------ bundles + log
    def accept(self, *, entry_hash_fn: EntryHashFn, **bundle: Any) -> dict[str, Any]:
        """Store a verified bundle, append it to the log and update the board, atomically.

        ``bundle`` holds bundle_id, raw, bundle_sha256, task, model_name, model_digest,
        key_fingerprint, created_at and metrics (the board's compact form).
        ``entry_hash_fn(seq, bundle_id, bundle_sha256, received_at, prev_hash) -> hex`` is the
        log's hash rule (kept in translog.py so clients verify with the same code).
        """
        with self.tx() as c:
            out = self._accept(c, entry_hash_fn, **bundle)
        if self.checkpointer is not None:
            self.checkpointer.committed()
        return out

    def accept_many(self, bundles: list[dict[str, Any]], entry_hash_fn: EntryHashFn) -> list[dict[str, Any]]:
        """Several verified bundles in one transaction (bulk import, benchmarks): all or none."""
        with self.tx() as c:
            out = [self._accept(c, entry_hash_fn, **b) for b in bundles]
        if self.checkpointer is not None:
            self.checkpointer.committed(len(bundles))
        return out

    @staticmethod
    def _accept(c: sqlite3.Connection, entry_hash_fn: EntryHashFn, *, bundle_id: str, raw: bytes, bundle_sha256: str,
                task: str,
                model_name: str, model_digest: str, key_fingerprint: str, created_at: str,
                metrics: dict[str, Any]) -> dict[str, Any]:
        received = now_iso()
        dup = c.execute("SELECT received_at FROM bundles WHERE id = ?", [bundle_id]).fetchone()
        if dup:
            raise ReplayError(f"bundle {bundle_id} was already accepted at {dup[0]}")
        last = c.execute("SELECT seq, entry_hash FROM log ORDER BY seq DESC LIMIT 1").fetchone()
        seq, prev = (last[0] + 1, last[1]) if last else (1, "0" * 64)
        entry = entry_hash_fn(seq, bundle_id, bundle_sha256, received, prev)
        c.execute("INSERT INTO bundles(seq, id, task, model_name, model_digest, key_fingerprint, created_at,"
                  " received_at, raw) VALUES (?,?,?,?,?,?,?,?,?)",
                  [seq, bundle_id, task, model_name, model_digest, key_fingerprint, created_at, received, raw])
        c.execute("INSERT INTO log(seq, bundle_id, bundle_sha256, received_at, prev_hash, entry_hash)"
                  " VALUES (?,?,?,?,?,?)", [seq, bundle_id, bundle_sha256, received, prev, entry])
        c.execute("INSERT INTO board(task, model_name, key_fingerprint, bundle_id, created_at, model_digest,"
                  " metrics) VALUES (?,?,?,?,?,?,?) ON CONFLICT(task, model_name, key_fingerprint) DO UPDATE SET"
                  " bundle_id = excluded.bundle_id, created_at = excluded.created_at,"
                  " model_digest = excluded.model_digest, metrics = excluded.metrics"
                  " WHERE excluded.created_at >= board.created_at",
                  [task, model_name, key_fingerprint, bundle_id, created_at, model_digest, json.dumps(metrics)])
        return {"bundle_id": bundle_id, "seq": seq, "entry_hash": entry, "received_at": received}

    def bundle_raw(self, bundle_id: str) -> bytes:
        with self.lock:
            row = self.conn.execute("SELECT raw FROM bundles WHERE id = ?", [bundle_id]).fetchone()
        if row is None:
            raise NotFoundError(f"no accepted bundle with id {bundle_id}")
        return bytes(row[0])

    def bundle_sha256(self, bundle_id: str) -> str | None:
        with self.lock:
            row = self.conn.execute("SELECT bundle_sha256 FROM log WHERE bundle_id = ?", [bundle_id]).fetchone()
        return row[0] if row else None

    def list_bundles(self, task: str | None, limit: int, after_seq: int = 0) -> list[dict[str, Any]]:
        cols = ("seq", "id", "task", "model_name", "model_digest", "key_fingerprint", "created_at", "received_at")
        with self.lock:
            rows = self.conn.execute(f"SELECT {', '.join(cols)} FROM bundles WHERE (? IS NULL OR task = ?)"
                                     " AND seq > ? ORDER BY seq LIMIT ?", [task, task, after_seq, limit]).fetchall()
        return [dict(zip(cols, r)) for r in rows]

    def count_bundles(self) -> int:
        with self.lock:
            return int(self.conn.execute("SELECT COUNT(*) FROM bundles").fetchone()[0])

    def board_rows(self, task: str) -> list[dict[str, Any]]:
        """Rows of a task's board, cached until this process appends to the log or another
        process (the admin CLI revoking a key, say) commits anything (``PRAGMA data_version``)."""
        with self.lock:
            version = (self.conn.execute("PRAGMA data_version").fetchone()[0], self.log_head()[0])
            cached = self._board_cache.get(task)
            if cached is not None and cached[0] == version:
                return cached[1]
            rows = self._board_rows(task)
            self._board_cache[task] = (version, rows)
            return rows

    def _board_rows(self, task: str) -> list[dict[str, Any]]:
        with self.lock:
            rows = self.conn.execute(
                "SELECT b.model_name, b.key_fingerprint, k.name, b.bundle_id, b.created_at, b.model_digest, b.metrics"
                " FROM board b JOIN keys k ON k.fingerprint = b.key_fingerprint"
                " WHERE b.task = ? AND k.revoked_at IS NULL ORDER BY b.model_name, b.key_fingerprint",
                [task]).fetchall()
        return [{"model": r[0], "key_fingerprint": r[1], "submitter": r[2], "bundle_id": r[3], "created_at": r[4],
                 "model_digest": r[5], "metrics": json.loads(r[6])} for r in rows]

    def log_entries(self, start: int, limit: int) -> list[dict[str, Any]]:
        cols = ("seq", "bundle_id", "bundle_sha256", "received_at", "prev_hash", "entry_hash")
        with self.lock:
            rows = self.conn.execute(f"SELECT {', '.join(cols)} FROM log WHERE seq >= ? ORDER BY seq LIMIT ?",
                                     [start, limit]).fetchall()
        return [dict(zip(cols, r)) for r in rows]

    def integrity_check(self) -> str:
        """SQLite's ``PRAGMA integrity_check``: ``"ok"`` or the problems found (crash-safety tests, admins)."""
        with self.lock:
            return "; ".join(str(r[0]) for r in self.conn.execute("PRAGMA integrity_check").fetchall())

    def log_head(self) -> tuple[int, str]:
        with self.lock:
            row = self.conn.execute("SELECT seq, entry_hash FROM log ORDER BY seq DESC LIMIT 1").fetchone()
        return (row[0], row[1]) if row else (0, "0" * 64)
