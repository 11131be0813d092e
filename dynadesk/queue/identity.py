"""Worker identities: each ``dynadesk worker`` signs its results with its own Ed25519 key.

Anyone holding the broker password can write anything on the broker, so nothing a result
says is believed because of where it was found. The coordinator accepts a result only when
it is signed by a worker key this workspace trusts (``dynadesk jobs trust-worker``) and the
signed body names this job, this attempt, the lease that was taken for it (the digest of the
claim's secret: a per-claim value, never the worker's public name), the run request the
coordinator sent, and the digests of the result files (predictions, metrics, measured
figures), the hardware class and the image Id. Anything else is refused and the job queued
again. The key code is the project's own (:mod:`dynadesk.sync.format.keys`).
"""

from __future__ import annotations

import hashlib
import secrets
from pathlib import Path
from typing import TYPE_CHECKING, Any

from dynadesk.canonical import canonical_bytes
from dynadesk.errors import DynaDeskError, QueueError
from dynadesk.sync.format import keys

if TYPE_CHECKING:
    from dynadesk.store import Store

KEY_DIR = "worker-key"
PRIVATE = "worker.key"
PUBLIC = "worker.pub"
SIGNED = "signature"


class ResultRefused(QueueError):
    """A job's result is unsigned, signed by a key this workspace does not trust, or not for the job's lease."""


def key_paths(home: Path) -> tuple[Path, Path]:
    folder = Path(home) / KEY_DIR
    return folder / PRIVATE, folder / PUBLIC


def load_or_create(home: Path) -> Any:
    """This worker's private key (created 0600 on first start, then reused) with its public PEM beside it."""
    priv, pub = key_paths(home)
    priv.parent.mkdir(parents=True, exist_ok=True, mode=0o700)
    key = keys.load_or_create_server_key(priv)
    if not pub.is_file():
        pub.write_bytes(keys.public_pem(key))
    return key


def fingerprint_of(key: Any) -> str:
    return keys.fingerprint(keys.public_raw(key))


def new_lease_secret() -> tuple[str, str]:
    """A claim's secret and its public id (the sha1 Redis's Lua can compute: the lease stores only the id)."""
    secret = secrets.token_hex(32)
    return secret, lease_id(secret)


def lease_id(secret: str) -> str:
    return hashlib.sha1(secret.encode()).hexdigest()


def sign(key: Any, body: dict[str, Any]) -> dict[str, Any]:
    """``body`` plus the worker's public key and an Ed25519 signature over its canonical bytes."""
    out = {k: v for k, v in body.items() if k != SIGNED}
    out["worker_key"] = keys.public_raw(key).hex()
    out[SIGNED] = key.sign(canonical_bytes(out)).hex()
    return out


def read_public_keyfile(path: Path) -> tuple[str, str]:
    """(fingerprint, raw public key hex) of a worker's ``worker.pub`` (PEM) file."""
    try:
        data = Path(path).read_bytes()
    except OSError as exc:
        raise QueueError(f"cannot read worker key {path}: {exc}") from None
    pub = keys.load_public_pem(data, str(path))
    raw = keys.public_raw(pub)
    return keys.fingerprint(raw), raw.hex()


def verify(store: Store, result: dict[str, Any], *, job: str, attempt: int, lease: str,
           request: dict[str, Any]) -> str:
    """The fingerprint of the trusted key that signed ``result`` for this job's lease; :class:`ResultRefused`
    saying why not."""
    from dynadesk.store import worker_keys

    where = f"job {job} attempt {attempt}"
    sig, pub_hex = result.get(SIGNED), result.get("worker_key")
    if not isinstance(sig, str) or not isinstance(pub_hex, str):
        raise ResultRefused(f"{where}: the result is not signed by a worker key; refused")
    try:
        raw = bytes.fromhex(pub_hex)
        public = keys.public_from_raw(raw)
        signature = bytes.fromhex(sig)
    except ValueError:
        raise ResultRefused(f"{where}: the result's worker key or signature is not hex Ed25519; refused") from None
    fpr = keys.fingerprint(raw)
    if not worker_keys.trusted(store, fpr):
        raise ResultRefused(f"{where}: signed by worker key {fpr}, which this workspace does not trust "
                            "('dynadesk jobs trust-worker KEYFILE'); refused")
    body = {k: v for k, v in result.items() if k != SIGNED}
    try:
        keys.verify_signature(public, signature, canonical_bytes(body), f"{where} result")
    except DynaDeskError as exc:
        raise ResultRefused(f"{exc}; refused") from None
    for name, want in (("job", job), ("attempt", attempt), ("lease", lease), ("request", request)):
        if result.get(name) != want:
            raise ResultRefused(f"{where}: the signed result is for {name} {str(result.get(name))[:40]!r}, "
                                f"not this job's {str(want)[:40]!r} (a lease it does not hold); refused")
    return fpr
