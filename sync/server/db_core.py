"""The server database's core: the connection, the migrations applied on open, one write transaction, and the
transparency log's append rule, which every kind of stored document (bundle, attestation, snapshot, rate edition)
shares. :class:`dynadesk.sync.server.db.ServerDB` is this plus the tables' repositories
(:mod:`~dynadesk.sync.server.db_keys`, :mod:`~dynadesk.sync.server.db_ingest`): one class per responsibility,
one object for callers."""

from __future__ import annotations

from contextlib import AbstractContextManager
from pathlib import Path
from typing import Any

from dynadesk.sync.format.timestamps import utc_now_text
from dynadesk.sync.server import migrations
from dynadesk.sync.server.backend import Executor, Tx
from dynadesk.sync.server.checkpoint import Checkpointer
from dynadesk.sync.server.connect import open_backend
from dynadesk.sync.server.records import EntryHash, UploadConfig

_ANY_TASK = "(CAST(? AS TEXT) IS NULL OR task = ?)"  # the cast: PostgreSQL cannot type a bare NULL parameter
_KEY_COLS = "fingerprint, public_key, name, added_at, revoked_at, revoke_reason, role, organisation"
# What a board depends on besides the log: PostgreSQL has no data_version, so its cache compares these.
_BOARD_VERSION = ("SELECT (SELECT value FROM meta WHERE key = 'config_version'),"
                  " (SELECT seq FROM log ORDER BY seq DESC LIMIT 1)")



class DBCore:
    """The connection (``conn`` + ``lock`` for reads, :meth:`tx` for writes) every table repository shares."""

    def __init__(self, target: str | Path, *, background_checkpoint: bool = False):
        self.backend = open_backend(target, background_checkpoint=background_checkpoint)
        self.path: Path | None = self.backend.path
        self.name = self.backend.name
        self.postgres = self.backend.dialect.postgres
        self.conn: Executor = self.backend.conn
        self.lock: AbstractContextManager[Any] = self.backend.lock
        self.checkpointer: Checkpointer | None = self.backend.checkpointer
        try:
            with self.tx() as c:
                migrations.apply(c)
        except BaseException:
            self.backend.close()
            raise
        self._board_cache: dict[str, tuple[tuple[Any, ...], list[dict[str, Any]]]] = {}
        self._config: tuple[str, UploadConfig] | None = None  # (meta.config_version it was read at, the config)

    def applied_migrations(self) -> list[str]:
        """Names of the applied migrations, oldest first."""
        with self.lock:
            return migrations.applied(self.conn)

    def tx(self) -> AbstractContextManager[Tx]:
        """One write transaction, serialised across threads and processes (and, on PostgreSQL, machines)."""
        return self.backend.tx()

    def close(self) -> None:
        self.backend.close()



    @staticmethod
    def _append_log(c: Tx, entry_hash_fn: EntryHash, doc_id: str, sha256: str,
                    kind: str) -> tuple[int, str, str]:
        """Append one log entry; ``(seq, entry_hash, received_at)``."""
        last = c.execute("SELECT seq, entry_hash FROM log ORDER BY seq DESC LIMIT 1").fetchone()
        (seq, entry, received), insert = DBCore._log_entry(entry_hash_fn, doc_id, sha256, kind, last)
        c.execute(*insert)
        return seq, entry, received

    @staticmethod
    def _log_entry(entry_hash_fn: EntryHash, doc_id: str, sha256: str, kind: str, last: Any
                   ) -> tuple[tuple[int, str, str], tuple[str, list[Any]]]:
        """The next log entry after ``last`` (the head's seq and entry hash; None or (None, None) when the log is
        empty): ``((seq, entry_hash, received_at), its INSERT)``."""
        received = utc_now_text()
        seq, prev = (int(last[0]) + 1, str(last[1])) if last and last[0] is not None else (1, "0" * 64)
        entry = entry_hash_fn(seq, doc_id, sha256, received, prev)
        return (seq, entry, received), ("INSERT INTO log(seq, bundle_id, bundle_sha256, received_at, prev_hash,"
                                        " entry_hash, kind) VALUES (?,?,?,?,?,?,?)",
                                        [seq, doc_id, sha256, received, prev, entry, kind])

    def log_head(self) -> tuple[int, str]:
        with self.lock:
            row = self.conn.execute("SELECT seq, entry_hash FROM log ORDER BY seq DESC LIMIT 1").fetchone()
        return (row[0], row[1]) if row else (0, "0" * 64)

