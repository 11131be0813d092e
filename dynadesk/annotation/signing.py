"""Ed25519 signatures on annotation packs, with the workspace's bundle key, and the keys a workspace trusts.

An unkeyed digest lets anyone who edits a pack recompute it; a signature by
the exporting workspace's key (the one ``dynadesk keys init`` makes for
bundles, in ``keys/``) cannot be recomputed without that key. A merge accepts
a pack only when its signer is this workspace itself or a key added with
``dynadesk annotate trust KEYFILE``.
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Any

from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey

from dynadesk.canonical import canonical_bytes
from dynadesk.errors import AnnotationError, KeyFileError, SignatureError, UntrustedKeyError
from dynadesk.names import check_name
from dynadesk.store.annotation import TrustedKey
from dynadesk.sync.format import keys as _keys
from dynadesk.workspace import Workspace

if TYPE_CHECKING:
    from dynadesk.store import Store

ALGORITHM = "ed25519"
SIGNATURE_FIELDS = ("signer", "signature")


def keys_dir(store: Store) -> Path:
    """The keys folder of the workspace whose database ``store`` is."""
    if store.path is None:
        raise AnnotationError("this store has no workspace folder, so it has no signing key")
    return Workspace(Path(store.path).parent).keys_dir


def signing_key(store: Store, passphrase: str | None = None) -> Ed25519PrivateKey:
    """The workspace key; created (no passphrase) when the workspace has none yet."""
    folder = keys_dir(store)
    if not (folder / _keys.PRIVATE_NAME).exists():
        _keys.generate_key(folder)
    key: Ed25519PrivateKey = _keys.load_private_key(folder / _keys.PRIVATE_NAME, passphrase)
    return key


def key_is_encrypted(store: Store) -> bool:
    try:
        return bool(_keys.key_info(keys_dir(store)).encrypted)
    except KeyFileError:
        return False


def own_fingerprint(store: Store) -> str | None:
    try:
        return str(_keys.key_info(keys_dir(store)).fingerprint)
    except KeyFileError:
        return None


def sign(body: dict[str, Any], key: Ed25519PrivateKey) -> dict[str, Any]:
    """``body`` (any old signature dropped) with ``signer`` and an Ed25519 ``signature`` over its JCS bytes."""
    unsigned = {k: v for k, v in body.items() if k not in SIGNATURE_FIELDS}
    raw = _keys.public_raw(key)
    unsigned["signer"] = {"algorithm": ALGORITHM, "public_key": raw.hex(), "fingerprint": _keys.fingerprint(raw)}
    return unsigned | {"signature": key.sign(canonical_bytes(unsigned)).hex()}


def verify(body: dict[str, Any], where: str) -> str:
    """Check the signature of a loaded pack; return the signer's fingerprint."""
    signer, signature = body.get("signer"), body.get("signature")
    if not isinstance(signer, dict) or not isinstance(signature, str) or signer.get("algorithm") != ALGORITHM:
        raise SignatureError(f"{where}: the pack carries no Ed25519 signature; nothing was merged")
    try:
        raw = bytes.fromhex(str(signer.get("public_key")))
        public = _keys.public_from_raw(raw)
        sig = bytes.fromhex(signature)
    except ValueError:
        raise SignatureError(f"{where}: the pack's signer key or signature is not valid hex of the right size;"
                             " nothing was merged") from None
    if signer.get("fingerprint") != _keys.fingerprint(raw):
        raise SignatureError(f"{where}: the signer fingerprint does not match its public key; nothing was merged")
    unsigned = {k: v for k, v in body.items() if k != "signature"}
    _keys.verify_signature(public, sig, canonical_bytes(unsigned),
                           f"{where} (edited after it was signed? nothing was merged)")
    return str(_keys.fingerprint(raw))


def require_trusted(store: Store, fingerprint: str, where: str) -> None:
    if fingerprint == own_fingerprint(store) or store.annotation.trusted_key(fingerprint) is not None:
        return
    raise UntrustedKeyError(f"{where}: signed by key {fingerprint}, which this workspace has not trusted;"
                            " nothing was merged. If you know its owner, get their public key"
                            " ('dynadesk keys export -o them.pub' on their machine) and run"
                            " 'dynadesk annotate trust them.pub'")


def trust_key(store: Store, key_file: str | Path, name: str | None = None,
              person: str | None = None) -> TrustedKey:
    """Trust the Ed25519 public key (PEM) in ``key_file`` for pack merges.

    ``person`` (an annotator here) binds the key to that one person: only then do votes in its
    packs under that person's name count with the role the person has here (an owner's)."""
    key_file = Path(key_file)
    try:
        pem = key_file.read_bytes()
    except OSError as exc:
        raise KeyFileError(f"{key_file}: cannot read: {exc}") from exc
    raw = _keys.public_raw(_keys.load_public_pem(pem, str(key_file)))
    label = check_name(name or key_file.stem, "key name")
    if person is not None:
        store.annotation.get_annotator(person)
    trusted: TrustedKey = store.annotation.trust_key(_keys.fingerprint(raw), raw.hex(), label, person)
    return trusted


def export_pack_key(store: Store, out: str | Path) -> Path:
    """Write this workspace's public key (PEM) for another workspace's ``annotate trust``."""
    folder = keys_dir(store)
    if not (folder / _keys.PRIVATE_NAME).exists():
        _keys.generate_key(folder)
    out = Path(out)
    out.write_bytes(Path(_keys.key_info(folder).public_path).read_bytes())
    return out
