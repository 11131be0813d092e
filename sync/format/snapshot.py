"""Signed board snapshots: a task's board frozen as the server ranked it, signed by the server's log key.

The document is an envelope like a bundle's (``{"format": "dynadesk-board-snapshot", "payload", "signature",
"version"}``, RFC 8785 bytes) whose payload holds the title, the query (weights, filters), the transparency
log's head the rows were taken at, and every row; its id is the sha256 of the payload bytes. The server
appends it to the log as a ``snapshot`` entry. This module signs and parses; whether the rows follow from
the log's bundles is :mod:`dynadesk.sync.rules.snapshot_check`.
"""

from __future__ import annotations

import hashlib
import json
from dataclasses import dataclass
from typing import Any

from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey

from dynadesk.errors import SnapshotError
from dynadesk.sync.format import keys as _keys
from dynadesk.sync.format.canonical import canonical_bytes

FORMAT = "dynadesk-board-snapshot"
VERSION = 1
MAX_SNAPSHOT_BYTES = 32 << 20
PAYLOAD_KEYS = {"title", "task", "created_at", "server", "log", "query", "datasets", "reference", "rows",
                "left_off", "excluded", "notes", "intervals"}


@dataclass(frozen=True)
class Snapshot:
    payload: dict[str, Any]
    payload_bytes: bytes
    public_key: bytes
    signature: bytes
    raw: bytes

    @property
    def id(self) -> str:
        return hashlib.sha256(self.payload_bytes).hexdigest()

    def verify(self, server_public_key: bytes | None = None) -> None:
        """The server's signature over the payload (and, given, that it is the key you expect)."""
        if server_public_key is not None and server_public_key != self.public_key:
            raise SnapshotError(f"snapshot {self.id[:12]}: signed by key {_keys.fingerprint(self.public_key)}, not"
                                f" the server key {_keys.fingerprint(server_public_key)} expected")
        stated = (self.payload.get("server") or {}).get("key_fingerprint")
        if stated != _keys.fingerprint(self.public_key):
            raise SnapshotError(f"snapshot {self.id[:12]}: payload.server.key_fingerprint {stated!r:.80} is not the"
                                " signing key's")
        try:
            key = _keys.public_from_raw(self.public_key)
        except ValueError as exc:
            raise SnapshotError(f"snapshot {self.id[:12]}: malformed public key ({exc})") from None
        _keys.verify_signature(key, self.signature, self.payload_bytes, f"snapshot {self.id[:12]}")


def sign_snapshot(payload: dict[str, Any], key: Ed25519PrivateKey) -> Snapshot:
    """Sign a snapshot payload with the server key; the result is re-parsed and verified."""
    payload_bytes = canonical_bytes(payload)
    pub = _keys.public_raw(key)
    doc = {"format": FORMAT, "version": VERSION, "payload": payload,
           "signature": {"algorithm": "ed25519", "public_key": pub.hex(), "value": key.sign(payload_bytes).hex()}}
    snap = parse_snapshot(canonical_bytes(doc))
    snap.verify()
    return snap


def parse_snapshot(raw: bytes, where: str = "snapshot") -> Snapshot:
    """Structure only (envelope, canonical form, payload fields); :class:`SnapshotError` naming the problem."""
    if len(raw) > MAX_SNAPSHOT_BYTES:
        raise SnapshotError(f"{where}: {len(raw)} bytes is larger than the {MAX_SNAPSHOT_BYTES}-byte limit")
    try:
        doc = json.loads(raw)
    except ValueError as exc:
        raise SnapshotError(f"{where}: not JSON ({exc})") from None
    if not isinstance(doc, dict) or doc.get("format") != FORMAT:
        raise SnapshotError(f"{where}: field 'format' must be '{FORMAT}'")
    if doc.get("version") != VERSION or set(doc) != {"format", "version", "payload", "signature"}:
        raise SnapshotError(f"{where}: must hold exactly format, version {VERSION}, payload and signature")
    payload, sig = doc["payload"], doc["signature"]
    if not isinstance(payload, dict) or set(payload) != PAYLOAD_KEYS:
        got = sorted(payload) if isinstance(payload, dict) else type(payload).__name__
        raise SnapshotError(f"{where}: payload must hold {', '.join(sorted(PAYLOAD_KEYS))}; got {got}")
    if not isinstance(sig, dict) or sig.get("algorithm") != "ed25519":
        raise SnapshotError(f"{where}: signature.algorithm must be 'ed25519'")
    try:
        public_key, signature = bytes.fromhex(str(sig["public_key"])), bytes.fromhex(str(sig["value"]))
    except (KeyError, ValueError):
        raise SnapshotError(f"{where}: signature.public_key and signature.value must be hex") from None
    if canonical_bytes(doc) != bytes(raw):
        raise SnapshotError(f"{where}: not in RFC 8785 canonical form (was it edited by hand?)")
    return Snapshot(payload, canonical_bytes(payload), public_key, signature, bytes(raw))
