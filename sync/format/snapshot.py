"""Signed board snapshots: a task's board frozen as the server ranked it, signed by the server's log key.

The document is an envelope like a bundle's (``{"format": "dynadesk-board-snapshot", "payload", "signature",
"version"}``, RFC 8785 bytes) whose payload holds the title, the query (weights, filters), the transparency
log's head the rows were taken at, and every row; its id is the sha256 of the payload bytes. The server
appends it to the log as a ``snapshot`` entry. This module signs and parses; whether the rows follow from
the log's bundles is :mod:`dynadesk.sync.rules.snapshot_check`.
"""

from __future__ import annotations

from typing import Any

from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey

from dynadesk.errors import SnapshotError
from dynadesk.sync.format.server_signed import (
    ServerDocKind,
    ServerSigned,
    parse_server_document,
    sign_server_document,
)


class Snapshot(ServerSigned):
    """A structurally valid board snapshot; :meth:`verify` checks the server's signature (and, given, that it is
    the key you expect)."""

    KIND = ServerDocKind(
        format="dynadesk-board-snapshot", noun="snapshot", max_bytes=32 << 20,
        payload_keys=frozenset({"title", "task", "created_at", "server", "log", "query", "datasets", "reference",
                                "rows", "left_off", "excluded", "notes", "intervals"}),
        error=SnapshotError, signature_error=SnapshotError)


def sign_snapshot(payload: dict[str, Any], key: Ed25519PrivateKey) -> Snapshot:
    """Sign a snapshot payload with the server key; the result is re-parsed and verified."""
    return sign_server_document(Snapshot, payload, key)


def parse_snapshot(raw: bytes, where: str = "snapshot") -> Snapshot:
    """Structure only (envelope, canonical form, payload fields); :class:`SnapshotError` naming the problem."""
    return parse_server_document(Snapshot, raw, where)
