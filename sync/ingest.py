"""Server-side acceptance of one uploaded bundle: parse, verify, check the board, store.

Each refusal is a specific :class:`BundleError`; :data:`HTTP_STATUS` maps it to
the status code and machine-readable ``error`` code the API answers.
"""

from __future__ import annotations

import hashlib
from datetime import UTC, datetime, timedelta
from typing import Any

from dynadesk.errors import (
    BundleFormatError,
    FingerprintMismatch,
    FutureTimestampError,
    NotOnBoardError,
    ReplayError,
    RevokedKeyError,
    SignatureError,
    UnknownKeyError,
    UnsupportedVersionError,
)
from dynadesk.sync.board import board_metrics
from dynadesk.sync.bundle import Bundle, parse_bundle, verify_bundle
from dynadesk.sync.server_db import ServerDB, UploadConfig
from dynadesk.sync.translog import entry_hash

# most specific first
HTTP_STATUS: list[tuple[type[Exception], int, str]] = [
    (UnsupportedVersionError, 400, "unsupported_version"),
    (BundleFormatError, 400, "malformed_bundle"),
    (RevokedKeyError, 403, "revoked_key"),
    (UnknownKeyError, 403, "unknown_key"),
    (FingerprintMismatch, 422, "key_mismatch"),
    (SignatureError, 422, "bad_signature"),
    (FutureTimestampError, 422, "future_timestamp"),
    (NotOnBoardError, 422, "not_on_board"),
    (ReplayError, 409, "replay"),
]


def status_for(exc: Exception) -> tuple[int, str]:
    for cls, status, code in HTTP_STATUS:
        if isinstance(exc, cls):
            return status, code
    return 400, "rejected"


def _check_key(config: UploadConfig, bundle: Bundle) -> bytes:
    key = config.keys.get(bundle.key_fingerprint)
    if key is None:
        raise UnknownKeyError(f"bundle is signed by key {bundle.key_fingerprint}, which this server has not"
                              " registered (ask the administrator: dynadesk-server keys add)")
    if key.revoked_at:
        raise RevokedKeyError(f"bundle is signed by key {bundle.key_fingerprint}, revoked at {key.revoked_at}"
                              + (f": {key.revoke_reason}" if key.revoke_reason else ""))
    return key.public_key


def _check_board(bundle: Bundle, tasks: set[str], datasets: dict[tuple[str, str], dict[str, Any]]) -> None:
    if bundle.task not in tasks:
        raise NotOnBoardError(f"task '{bundle.task}' is not on this board (known: {', '.join(sorted(tasks))})")
    for i, d in enumerate(bundle.payload["datasets"]):
        known = datasets.get((bundle.task, d["name"]))
        if known is None:
            raise NotOnBoardError(f"payload.datasets[{i}]: dataset '{d['name']}' is not accepted on the"
                                  f" '{bundle.task}' board (dynadesk-server datasets add)")
        if known["digest"] != d["digest"]:
            raise NotOnBoardError(f"payload.datasets[{i}]: dataset '{d['name']}' has digest {d['digest']}, but the"
                                  f" board accepts {known['digest']} (a different version of the data)")


def check_upload(db: ServerDB, raw: bytes, tasks: set[str], now: datetime | None = None,
                 max_skew: timedelta = timedelta(minutes=5)) -> dict[str, Any]:
    """Everything but storing: parse, key, signature, time and board checks. Returns the keyword
    arguments of :meth:`ServerDB.accept` (less ``entry_hash_fn``)."""
    bundle = parse_bundle(raw, "uploaded bundle")
    config = db.upload_config()  # cached keys and datasets, revalidated against other processes' commits
    verify_bundle(bundle, _check_key(config, bundle))
    now = now or datetime.now(UTC)
    if bundle.created_at > now + max_skew:
        raise FutureTimestampError(f"payload.created_at {bundle.payload['created_at']} lies in the future"
                                   f" (server time {now.isoformat(timespec='seconds')})")
    _check_board(bundle, tasks, config.datasets.get(bundle.task, {}))
    return dict(bundle_id=bundle.id, raw=bundle.raw, bundle_sha256=hashlib.sha256(bundle.raw).hexdigest(),
                task=bundle.task, model_name=bundle.model_name, model_digest=bundle.payload["model"]["digest"],
                key_fingerprint=bundle.key_fingerprint, created_at=bundle.payload["created_at"],
                metrics=board_metrics(bundle.payload["metrics"]))


def ingest(db: ServerDB, raw: bytes, tasks: set[str], now: datetime | None = None,
           max_skew: timedelta = timedelta(minutes=5)) -> dict[str, Any]:
    """Accept one bundle or raise the specific reason it is refused."""
    return db.accept(entry_hash_fn=entry_hash, **check_upload(db, raw, tasks, now, max_skew))
