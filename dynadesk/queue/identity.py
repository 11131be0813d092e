"""Worker identities: each ``dynadesk worker`` signs its results with its own Ed25519 key.

Anyone holding the broker password can write anything on the broker, so nothing a result
says is believed because of where it was found, and nothing it says is compared with the
broker's copy of the job. The coordinator accepts a result only when it is signed by a worker
key this workspace trusts (``dynadesk jobs trust-worker``) and the signed body names this job,
the digest of the payload the worker actually ran (:func:`payload_digest`: model files, spec,
data files, the request with its limits), and the answer to the challenge the coordinator
issued for the job's current round (its proof that it held the claim) -- both equal to the
coordinator's own copy (:mod:`dynadesk.store.queue_jobs`), never the broker's -- plus the
digests of the result files (predictions, metrics, measured figures), the hardware class and
the image Id. Anything else is refused; the job is queued again with a new challenge a bounded
number of times, then its run fails naming why. The key code is the project's own
(:mod:`dynadesk.sync.format.keys`).
"""

from __future__ import annotations

import hashlib
import secrets
from pathlib import Path
from typing import TYPE_CHECKING, Any

from dynadesk.canonical import canonical_bytes, digest
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


def new_challenge() -> str:
    """A fresh challenge for one round of a job (kept by the coordinator; the worker signs it back)."""
    return secrets.token_hex(32)


def payload_digest(payload: dict[str, Any]) -> str:
    """``sha256:`` of a job payload's canonical form: every input the worker runs with is in the payload (blob
    digests it verifies on fetch, the model's tree digest, the request and its limits), so this names them all."""
    return digest(payload)


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


def verify(store: Store, result: dict[str, Any], *, job: str, payload: str, challenge: str, state: str) -> str:
    """The fingerprint of the trusted key that signed ``result`` for ``job``, having run the payload of digest
    ``payload`` and answered ``challenge`` (the coordinator's own copies) and finished as ``state``;
    :class:`ResultRefused` saying why not."""
    from dynadesk.store import worker_keys

    where = f"job {job} attempt {str(result.get('attempt', '?'))[:12]}"
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
    if result.get("job") != job:
        raise ResultRefused(f"{where}: the signed result is for job {str(result.get('job'))[:40]!r}; refused")
    if result.get("payload_digest") != payload:
        said = f" (the worker reported: {str(result['error'])[:300]})" if result.get("error") else ""
        raise ResultRefused(f"{where}: the worker ran payload {str(result.get('payload_digest'))[:19]}..., not the "
                            f"payload this workspace sent ({payload[:19]}...): the job's model, spec, data or limits "
                            f"were changed on the broker{said}; refused")
    if result.get("challenge") != challenge:
        raise ResultRefused(f"{where}: the result answers challenge {str(result.get('challenge'))[:12]}..., not the "
                            "one this workspace issued for this round (a result of an earlier round, or a claim "
                            "made up on the broker); refused")
    if result.get("state") != state:
        raise ResultRefused(f"{where}: the signed result finished {str(result.get('state'))[:20]!r}, the broker says "
                            f"{state!r}; refused")
    return fpr
