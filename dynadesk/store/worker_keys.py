"""SQL for the queue workers this workspace trusts: a worker's Ed25519 key, trusted explicitly, revocable.

A queued run's result is accepted only when a key listed here (and not revoked) signed it
(see :mod:`dynadesk.queue.identity`); revoking keeps the row, so runs already stored still
name a key that can be looked up. The table is created by the evaluations area's
``m004_worker_keys`` migration.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

from dynadesk.errors import NotFoundError
from dynadesk.store.core import Record
from dynadesk.store.datasets import now_iso

if TYPE_CHECKING:
    from dynadesk.store import Store


@dataclass(frozen=True)
class WorkerKey(Record):
    fingerprint: str
    public_key_hex: str
    label: str
    trusted_at: str
    revoked_at: str | None


_COLUMNS = "fingerprint, public_key_hex, label, trusted_at, revoked_at"


def trust(store: Store, fingerprint: str, public_key_hex: str, label: str) -> WorkerKey:
    """Trust a worker key (again, when it was revoked); returns its row."""
    with store.atomic() as db:
        db.execute("INSERT INTO worker_keys (fingerprint, public_key_hex, label, trusted_at) VALUES (?, ?, ?, ?) "
                   "ON CONFLICT(fingerprint) DO UPDATE SET revoked_at = NULL, label = excluded.label",
                   [fingerprint, public_key_hex, label, now_iso()])
    return get(store, fingerprint)


def get(store: Store, fingerprint: str) -> WorkerKey:
    row = store.db.execute(f"SELECT {_COLUMNS} FROM worker_keys WHERE fingerprint = ?", [fingerprint]).fetchone()
    if row is None:
        raise NotFoundError(f"no worker key {fingerprint} in this workspace (see 'dynadesk jobs workers-trusted')")
    return WorkerKey(*row)


def trusted(store: Store, fingerprint: str) -> bool:
    """True when ``fingerprint`` is trusted now (listed and not revoked)."""
    row = store.db.execute("SELECT 1 FROM worker_keys WHERE fingerprint = ? AND revoked_at IS NULL",
                           [fingerprint]).fetchone()
    return row is not None


def list_keys(store: Store) -> list[WorkerKey]:
    rows = store.db.execute(f"SELECT {_COLUMNS} FROM worker_keys ORDER BY trusted_at, fingerprint").fetchall()
    return [WorkerKey(*r) for r in rows]


def revoke(store: Store, fingerprint: str) -> WorkerKey:
    """Stop accepting results signed by this key (the row stays, so stored runs still name it)."""
    get(store, fingerprint)
    with store.atomic() as db:
        db.execute("UPDATE worker_keys SET revoked_at = COALESCE(revoked_at, ?) WHERE fingerprint = ?",
                   [now_iso(), fingerprint])
    return get(store, fingerprint)
