"""SQL for the client side of bundles and audit attestations: what was signed here and the sync queue.

The exact signed bytes live in the database (as well as in ``bundles/``), so a
deleted file never loses a queued bundle. Status moves queued -> sent or
queued -> rejected (the server's reason kept); ``requeue`` moves a rejected one back;
a server that cannot be reached leaves the row queued and only counts the attempt.
Attestations (``dynadesk audit BUNDLE --rerun --attest``) queue the same way in their own table.
"""

from __future__ import annotations

import builtins
import json
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from sqlite_utils import Database, Migrations

from dynadesk.errors import AlreadyExistsError, NotFoundError
from dynadesk.store.core import Record, Repo
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


@migrations()
def m002_attestations(db: Database) -> None:
    db.execute("""
        CREATE TABLE attestations (
            id TEXT PRIMARY KEY,
            bundle_id TEXT NOT NULL,
            verdict TEXT NOT NULL CHECK (verdict IN ('reproduced', 'disputed')),
            raw BLOB NOT NULL,
            status TEXT NOT NULL CHECK (status IN ('queued', 'sent', 'rejected')),
            attempts INTEGER NOT NULL DEFAULT 0,
            last_error TEXT,
            server TEXT,
            response TEXT,
            queued_at TEXT NOT NULL,
            sent_at TEXT
        )""")
    db.execute("CREATE INDEX attestations_status ON attestations(status, queued_at)")


@dataclass
class BundleRow(Record):
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


_COLS = ("id, evaluation_id, task, model_name, key_fingerprint, created_at, path, status, attempts, last_error,"
         " server, response, queued_at, sent_at")


def _row(r: tuple[Any, ...]) -> BundleRow:
    vals = list(r)
    vals[11] = json.loads(vals[11]) if vals[11] else None
    return BundleRow(*vals)


class BundleRepo(Repo):
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
        _mark_sent(self.db, "bundles", bundle_id, server, response)

    def mark_rejected(self, bundle_id: str, server: str, reason: str, response: dict[str, Any]) -> None:
        _mark_rejected(self.db, "bundles", bundle_id, server, reason, response)

    def mark_failed_attempt(self, bundle_id: str, server: str, error: str) -> None:
        """The server was unreachable: keep the bundle queued, remember why."""
        _mark_failed(self.db, "bundles", bundle_id, server, error)

    def requeue(self, bundle_id: str) -> BundleRow:
        """Put a bundle back in the queue: a rejected one after its reason was fixed (e.g. the server registered
        the key), or a sent one whose answer was lost (the server then says it already has it)."""
        row = self.get(bundle_id)
        self.db.execute("UPDATE bundles SET status='queued', last_error=NULL WHERE id=?", [row.id])
        return self.get(row.id)

    # -------------------------------------------------------------- attestations
    def add_attestation(self, attestation_id: str, bundle_id: str, verdict: str, raw: bytes) -> AttestationRow:
        """Queue an audit attestation signed in this workspace."""
        if self.db.execute("SELECT 1 FROM attestations WHERE id = ?", [attestation_id]).fetchone():
            raise AlreadyExistsError(f"attestation {attestation_id} is already in the workspace")
        self.db.execute("INSERT INTO attestations(id, bundle_id, verdict, raw, status, queued_at)"
                        " VALUES (?,?,?,?,'queued',?)", [attestation_id, bundle_id, verdict, raw, now_iso()])
        return self.get_attestation(attestation_id)

    def get_attestation(self, attestation_id: str) -> AttestationRow:
        row = self.db.execute(f"SELECT {_ATT_COLS} FROM attestations WHERE id = ?", [attestation_id]).fetchone()
        if row is None:
            raise NotFoundError(f"no attestation with id {attestation_id!r} in the workspace")
        return _att_row(row)

    def attestations(self, status: str | None = None, limit: int = 1000) -> builtins.list[AttestationRow]:
        rows = self.db.execute(f"SELECT {_ATT_COLS} FROM attestations WHERE (? IS NULL OR status = ?)"
                               " ORDER BY queued_at, id LIMIT ?", [status, status, limit]).fetchall()
        return [_att_row(r) for r in rows]

    def attestation_raw(self, attestation_id: str) -> bytes:
        row = self.db.execute("SELECT raw FROM attestations WHERE id = ?", [attestation_id]).fetchone()
        if row is None:
            raise NotFoundError(f"no attestation with id {attestation_id!r} in the workspace")
        return bytes(row[0])

    def mark_attestation(self, attestation_id: str, server: str, *, sent: dict[str, Any] | None = None,
                         rejected: tuple[str, dict[str, Any]] | None = None, failed: str | None = None) -> None:
        """Record one upload attempt of an attestation: sent (answer), rejected (reason, answer) or failed (error)."""
        if sent is not None:
            _mark_sent(self.db, "attestations", attestation_id, server, sent)
        elif rejected is not None:
            _mark_rejected(self.db, "attestations", attestation_id, server, *rejected)
        else:
            _mark_failed(self.db, "attestations", attestation_id, server, failed or "")


@dataclass
class AttestationRow(Record):
    id: str
    bundle_id: str
    verdict: str
    status: str
    attempts: int
    last_error: str | None
    server: str | None
    queued_at: str
    sent_at: str | None


_ATT_COLS = "id, bundle_id, verdict, status, attempts, last_error, server, queued_at, sent_at"


def _att_row(r: tuple[Any, ...]) -> AttestationRow:
    return AttestationRow(*r)


def _mark_sent(db: Database, table: str, doc_id: str, server: str, response: dict[str, Any]) -> None:
    db.execute(f"UPDATE {table} SET status='sent', attempts=attempts+1, last_error=NULL, server=?,"
               " response=?, sent_at=? WHERE id=?", [server, json.dumps(response), now_iso(), doc_id])


def _mark_rejected(db: Database, table: str, doc_id: str, server: str, reason: str, response: dict[str, Any]) -> None:
    db.execute(f"UPDATE {table} SET status='rejected', attempts=attempts+1, last_error=?, server=?,"
               " response=? WHERE id=?", [reason, server, json.dumps(response), doc_id])


def _mark_failed(db: Database, table: str, doc_id: str, server: str, error: str) -> None:
    db.execute(f"UPDATE {table} SET attempts=attempts+1, last_error=?, server=? WHERE id=?", [error, server, doc_id])


def attach(store: Store) -> None:
    store.bundles = BundleRepo(store)
