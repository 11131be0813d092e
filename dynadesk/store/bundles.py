"""SQL for the client side of bundles: created bundles and the sync queue.

The exact signed bytes live in the database (as well as in ``bundles/``), so a
deleted file never loses a queued bundle. Status moves queued -> sent or
queued -> rejected; a server that cannot be reached leaves the row queued and
only counts the attempt.
"""

from __future__ import annotations

import builtins
import json
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from sqlite_utils import Database, Migrations

from dynadesk.errors import AlreadyExistsError, NotFoundError
from dynadesk.store.datasets import now_iso

if TYPE_CHECKING:
    from dynadesk.store import Store

migrations = Migrations("dynadesk.bundles")

STATUSES = ("queued", "sent", "rejected")


@migrations()
def m001_bundles(db: Database) -> None:
    db.execute("""
        CREATE TABLE bundles (
            id TEXT PRIMARY KEY,
            evaluation_id INTEGER REFERENCES evaluations(id) ON DELETE SET NULL,
            task TEXT NOT NULL,
            model_name TEXT NOT NULL,
            key_fingerprint TEXT NOT NULL,
            created_at TEXT NOT NULL,
            raw BLOB NOT NULL,
            path TEXT,
            status TEXT NOT NULL CHECK (status IN ('queued', 'sent', 'rejected')),
            attempts INTEGER NOT NULL DEFAULT 0,
            last_error TEXT,
            server TEXT,
            response TEXT,
            queued_at TEXT NOT NULL,
            sent_at TEXT
        )""")
    db.execute("CREATE INDEX bundles_status ON bundles(status, queued_at)")


@dataclass
class BundleRow:
    id: str
    evaluation_id: int | None
    task: str
    model_name: str
    key_fingerprint: str
    created_at: str
    path: str | None
    status: str
    attempts: int
    last_error: str | None
    server: str | None
    response: dict[str, Any] | None
    queued_at: str
    sent_at: str | None

    def to_dict(self) -> dict[str, Any]:
        return dict(self.__dict__)


_COLS = ("id, evaluation_id, task, model_name, key_fingerprint, created_at, path, status, attempts, last_error,"
         " server, response, queued_at, sent_at")


def _row(r: tuple[Any, ...]) -> BundleRow:
    vals = list(r)
    vals[11] = json.loads(vals[11]) if vals[11] else None
    return BundleRow(*vals)


class BundleRepo:
    def __init__(self, store: Store):
        self._store = store

    @property
    def db(self) -> Database:
        return self._store.db

    def add(self, bundle_id: str, raw: bytes, *, evaluation_id: int | None, task: str, model_name: str,
            key_fingerprint: str, created_at: str, path: str | None) -> BundleRow:
        """Queue a newly created bundle."""
        if self.db.execute("SELECT 1 FROM bundles WHERE id = ?", [bundle_id]).fetchone():
            raise AlreadyExistsError(f"bundle {bundle_id} is already in the workspace")
        self.db.execute(
            "INSERT INTO bundles(id, evaluation_id, task, model_name, key_fingerprint, created_at, raw, path, status,"
            " queued_at) VALUES (?,?,?,?,?,?,?,?,'queued',?)",
            [bundle_id, evaluation_id, task, model_name, key_fingerprint, created_at, raw, path, now_iso()])
        return self.get(bundle_id)

    def get(self, bundle_id: str) -> BundleRow:
        row = self.db.execute(f"SELECT {_COLS} FROM bundles WHERE id = ?", [bundle_id]).fetchone()
        if row is None:
            rows = self.db.execute(f"SELECT {_COLS} FROM bundles WHERE id LIKE ? LIMIT 2",
                                   [bundle_id + "%"]).fetchall() if len(bundle_id) >= 6 else []
            if len(rows) != 1:
                raise NotFoundError(f"no bundle with id {bundle_id!r} in the workspace (see 'dynadesk sync status')")
            row = rows[0]
        return _row(row)

    def raw(self, bundle_id: str) -> bytes:
        row = self.db.execute("SELECT raw FROM bundles WHERE id = ?", [bundle_id]).fetchone()
        if row is None:
            raise NotFoundError(f"no bundle with id {bundle_id!r} in the workspace")
        return bytes(row[0])

    def list(self, status: str | None = None, limit: int = 1000) -> list[BundleRow]:
        rows = self.db.execute(f"SELECT {_COLS} FROM bundles WHERE (? IS NULL OR status = ?)"
                               " ORDER BY queued_at, id LIMIT ?", [status, status, limit]).fetchall()
        return [_row(r) for r in rows]

    def pending(self) -> builtins.list[BundleRow]:
        return self.list("queued", limit=1_000_000)

    def counts(self) -> dict[str, int]:
        out = {s: 0 for s in STATUSES}
        for status, n in self.db.execute("SELECT status, COUNT(*) FROM bundles GROUP BY status"):
            out[status] = n
        return out

    def mark_sent(self, bundle_id: str, server: str, response: dict[str, Any]) -> None:
        self.db.execute("UPDATE bundles SET status='sent', attempts=attempts+1, last_error=NULL, server=?,"
                        " response=?, sent_at=? WHERE id=?", [server, json.dumps(response), now_iso(), bundle_id])

    def mark_rejected(self, bundle_id: str, server: str, reason: str, response: dict[str, Any]) -> None:
        self.db.execute("UPDATE bundles SET status='rejected', attempts=attempts+1, last_error=?, server=?,"
                        " response=? WHERE id=?", [reason, server, json.dumps(response), bundle_id])

    def mark_failed_attempt(self, bundle_id: str, server: str, error: str) -> None:
        """The server was unreachable: keep the bundle queued, remember why."""
        self.db.execute("UPDATE bundles SET attempts=attempts+1, last_error=?, server=? WHERE id=?",
                        [error, server, bundle_id])

    def requeue(self, bundle_id: str) -> None:
        """Put a rejected bundle back in the queue (e.g. after the server registered the key)."""
        self.get(bundle_id)
        self.db.execute("UPDATE bundles SET status='queued', last_error=NULL WHERE id=?", [bundle_id])


def attach(store: Store) -> None:
    store.bundles = BundleRepo(store)
