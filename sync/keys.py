"""Ed25519 submitter keys: create, load, fingerprint, export.

The private key is PKCS#8 PEM written with mode 0600 (optionally encrypted
with a passphrase); loading refuses a file other users can read, the way ssh
does, because a leaked key lets anyone post scores under this identity.
The fingerprint is ``sha256:<hex>`` of the raw 32-byte public key, so it is the
same whatever encoding carries the key.
"""

from __future__ import annotations

import hashlib
import os
import stat
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from cryptography.exceptions import InvalidSignature
from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey, Ed25519PublicKey

from dynadesk.errors import KeyFileError, SignatureError

PRIVATE_NAME = "submitter.key"
PUBLIC_NAME = "submitter.pub"


def fingerprint(public_raw: bytes) -> str:
    return "sha256:" + hashlib.sha256(public_raw).hexdigest()


def public_raw(key: Ed25519PublicKey | Ed25519PrivateKey) -> bytes:
    if isinstance(key, Ed25519PrivateKey):
        key = key.public_key()
    return key.public_bytes(serialization.Encoding.Raw, serialization.PublicFormat.Raw)


def public_pem(key: Ed25519PublicKey | Ed25519PrivateKey) -> bytes:
    if isinstance(key, Ed25519PrivateKey):
        key = key.public_key()
    return key.public_bytes(serialization.Encoding.PEM, serialization.PublicFormat.SubjectPublicKeyInfo)


@dataclass(frozen=True)
class KeyInfo:
    fingerprint: str
    public_key_hex: str
    private_path: str
    public_path: str
    encrypted: bool

    def to_dict(self) -> dict[str, Any]:
        return dict(self.__dict__)


def _write_private(path: Path, data: bytes) -> None:
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    try:
        os.write(fd, data)
    finally:
        os.close(fd)
    os.chmod(path, 0o600)  # umask cannot widen it, but be explicit


def generate_key(keys_dir: str | os.PathLike[str], passphrase: str | None = None, force: bool = False) -> KeyInfo:
    """Create a new key pair in ``keys_dir``; refuses to overwrite one unless ``force``."""
    keys_dir = Path(keys_dir)
    keys_dir.mkdir(parents=True, exist_ok=True, mode=0o700)
    priv_path, pub_path = keys_dir / PRIVATE_NAME, keys_dir / PUBLIC_NAME
    if priv_path.exists():
        if not force:
            raise KeyFileError(f"a signing key already exists at {priv_path} (use --force to replace it)")
        priv_path.unlink()
    key = Ed25519PrivateKey.generate()
    enc = (serialization.BestAvailableEncryption(passphrase.encode()) if passphrase
           else serialization.NoEncryption())
    try:
        _write_private(priv_path, key.private_bytes(serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8, enc))
        pub_path.write_bytes(public_pem(key))
    except OSError as exc:
        raise KeyFileError(f"cannot write key files in {keys_dir}: {exc}") from exc
    return KeyInfo(fingerprint(public_raw(key)), public_raw(key).hex(), str(priv_path), str(pub_path), bool(passphrase))


def key_info(keys_dir: str | os.PathLike[str]) -> KeyInfo:
    """Describe the workspace key from its public half (no passphrase needed)."""
    keys_dir = Path(keys_dir)
    priv_path, pub_path = keys_dir / PRIVATE_NAME, keys_dir / PUBLIC_NAME
    if not priv_path.exists() or not pub_path.exists():
        raise KeyFileError(f"no signing key in {keys_dir} (run 'dynadesk keys init')")
    pub = load_public_pem(pub_path.read_bytes(), str(pub_path))
    encrypted = b"ENCRYPTED" in priv_path.read_bytes()[:64]
    return KeyInfo(fingerprint(public_raw(pub)), public_raw(pub).hex(), str(priv_path), str(pub_path), encrypted)


def load_private_key(path: str | os.PathLike[str], passphrase: str | None = None) -> Ed25519PrivateKey:
    path = Path(path)
    try:
        mode = path.stat().st_mode
        data = path.read_bytes()
    except FileNotFoundError:
        raise KeyFileError(f"no signing key at {path} (run 'dynadesk keys init')") from None
    except OSError as exc:
        raise KeyFileError(f"cannot read signing key {path}: {exc}") from exc
    if mode & (stat.S_IRWXG | stat.S_IRWXO):
        raise KeyFileError(f"signing key {path} is readable by other users (mode {stat.S_IMODE(mode):o});"
                           f" run 'chmod 600 {path}'")
    try:
        key = serialization.load_pem_private_key(data, password=passphrase.encode() if passphrase else None)
    except TypeError as exc:
        encrypted = b"ENCRYPTED" in data[:64]
        need = "is encrypted: give its passphrase" if encrypted else "is not encrypted: give no passphrase"
        raise KeyFileError(f"signing key {path} {need}") from exc
    except ValueError as exc:
        raise KeyFileError(f"cannot load signing key {path}: wrong passphrase or not a PEM key ({exc})") from exc
    if not isinstance(key, Ed25519PrivateKey):
        raise KeyFileError(f"signing key {path} is not an Ed25519 key")
    return key


def load_public_pem(data: bytes, where: str = "public key") -> Ed25519PublicKey:
    try:
        key = serialization.load_pem_public_key(data)
    except ValueError as exc:
        raise KeyFileError(f"{where}: not a PEM public key ({exc})") from exc
    if not isinstance(key, Ed25519PublicKey):
        raise KeyFileError(f"{where}: not an Ed25519 public key")
    return key


def public_from_raw(raw: bytes) -> Ed25519PublicKey:
    return Ed25519PublicKey.from_public_bytes(raw)


def verify_signature(public: Ed25519PublicKey, signature: bytes, message: bytes, what: str) -> None:
    """Raise :class:`SignatureError` (never return False) when ``signature`` is not over ``message``."""
    try:
        public.verify(signature, message)
    except InvalidSignature:
        raise SignatureError(f"{what}: the Ed25519 signature does not verify over the canonical bytes") from None


def load_or_create_server_key(path: str | os.PathLike[str]) -> Ed25519PrivateKey:
    """The server's log-signing key: created (0600, unencrypted) on first start, then reused."""
    path = Path(path)
    if not path.exists():
        path.parent.mkdir(parents=True, exist_ok=True)
        key = Ed25519PrivateKey.generate()
        try:
            _write_private(path, key.private_bytes(serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8,
                                                   serialization.NoEncryption()))
        except OSError as exc:
            raise KeyFileError(f"cannot write the server key {path}: {exc}") from exc
    return load_private_key(path)
