"""The bundle envelope: parse, then verify (sigstore-python style).

A bundle file is exactly the RFC 8785 bytes of::

    {"format": "dynadesk-bundle", "version": 1,
     "payload": {...signed fields, see sync/schema.py...},
     "signature": {"algorithm": "ed25519", "public_key": <hex>, "value": <hex>}}

The signature is over the JCS bytes of ``payload``. Because the file itself
must be canonical, any byte changed anywhere is either malformed, not
canonical, or changes signed content: nothing verifies by accident.
:func:`parse_bundle` only accepts well-formed input (a malformed bundle never
becomes a :class:`Bundle`); :func:`verify_bundle` then raises a specific
error or returns None — it never returns False.
"""

from __future__ import annotations

import hashlib
import re
from dataclasses import dataclass
from datetime import UTC, datetime
from functools import cached_property
from typing import Any

from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey

from dynadesk.canonical import canonical_bytes
from dynadesk.errors import BundleFormatError, FingerprintMismatch, UnsupportedVersionError
from dynadesk.sync import keys as _keys
from dynadesk.sync.jcs_check import loads_checked
from dynadesk.sync.schema import check_payload, obj

FORMAT = "dynadesk-bundle"
VERSION = 1
MAX_BUNDLE_BYTES = 1 << 20
_PREFIX = b'{"format":"dynadesk-bundle","payload":'
_HEX_KEY = re.compile(r"^[0-9a-f]{64}$")
_HEX_SIG = re.compile(r"^[0-9a-f]{128}$")


@dataclass(frozen=True)
class Bundle:
    """A structurally valid bundle. Holding one says nothing about its signature: call verify_bundle."""

    payload: dict[str, Any]
    public_key: bytes
    signature: bytes
    raw: bytes  # the exact canonical file bytes
    payload_bytes: bytes  # the signed bytes

    @cached_property
    def id(self) -> str:
        """sha256 hex of the signed payload bytes: the bundle's name on every server."""
        return hashlib.sha256(self.payload_bytes).hexdigest()

    @property
    def key_fingerprint(self) -> str:
        return str(self.payload["submitter"]["key_fingerprint"])

    @property
    def task(self) -> str:
        return str(self.payload["task"])

    @property
    def model_name(self) -> str:
        return str(self.payload["model"]["name"])

    @property
    def created_at(self) -> datetime:
        return datetime.fromisoformat(self.payload["created_at"])

    def summary(self) -> dict[str, Any]:
        p = self.payload
        return {"id": self.id, "task": p["task"], "model": p["model"], "created_at": p["created_at"],
                "key_fingerprint": self.key_fingerprint, "datasets": [d["name"] for d in p["datasets"]],
                "runner": p["runner"], "metrics": len(p["metrics"]), "merkle_root": p["predictions"]["merkle_root"],
                "bytes": len(self.raw)}


def envelope_bytes(payload_bytes: bytes, public_key: bytes, signature: bytes) -> bytes:
    sig = canonical_bytes({"algorithm": "ed25519", "public_key": public_key.hex(), "value": signature.hex()})
    return _PREFIX + payload_bytes + b',"signature":' + sig + b',"version":' + str(VERSION).encode() + b"}"


def parse_bundle(raw: bytes, where: str = "bundle") -> Bundle:
    """Check structure only; raises :class:`BundleFormatError` (or a subclass) naming the problem."""
    if not isinstance(raw, (bytes, bytearray)):
        raise BundleFormatError(f"{where}: expected bytes")
    raw = bytes(raw)
    if len(raw) > MAX_BUNDLE_BYTES:
        raise BundleFormatError(f"{where}: {len(raw)} bytes is larger than the {MAX_BUNDLE_BYTES}-byte limit")
    try:
        doc, is_canonical = loads_checked(raw)
    except UnicodeDecodeError as exc:
        raise BundleFormatError(f"{where}: not UTF-8 text (byte {exc.start})") from None
    except ValueError as exc:
        raise BundleFormatError(f"{where}: not valid JSON ({exc})") from None
    except RecursionError:
        raise BundleFormatError(f"{where}: JSON nested too deeply") from None
    if not isinstance(doc, dict):
        raise BundleFormatError(f"{where}: must be a JSON object, got {type(doc).__name__}")
    if doc.get("format") != FORMAT:
        raise BundleFormatError(f"{where}: field 'format' must be '{FORMAT}', got {doc.get('format')!r:.60}")
    if doc.get("version") != VERSION or isinstance(doc.get("version"), bool):
        raise UnsupportedVersionError(f"{where}: format version {doc.get('version')!r:.30} is not supported"
                                      f" (this program reads version {VERSION})")
    obj(doc, "envelope", {"format", "version", "payload", "signature"})
    sig = obj(doc["signature"], "signature", {"algorithm", "public_key", "value"})
    if sig["algorithm"] != "ed25519":
        raise BundleFormatError(f"{where}: signature.algorithm must be 'ed25519', got {sig['algorithm']!r:.40}")
    if not isinstance(sig["public_key"], str) or not _HEX_KEY.match(sig["public_key"]):
        raise BundleFormatError(f"{where}: signature.public_key must be 64 lowercase hex digits")
    if not isinstance(sig["value"], str) or not _HEX_SIG.match(sig["value"]):
        raise BundleFormatError(f"{where}: signature.value must be 128 lowercase hex digits")
    check_payload(doc["payload"])
    if not is_canonical:
        try:
            canonical = canonical_bytes(doc)
        except Exception as exc:  # noqa: BLE001 - rfc8785 raises its own types (e.g. integer out of range)
            raise BundleFormatError(f"{where}: cannot be expressed in RFC 8785 canonical JSON ({exc})") from None
        pos = next((i for i, (a, b) in enumerate(zip(canonical, raw)) if a != b), min(len(canonical), len(raw)))
        raise BundleFormatError(f"{where}: not in RFC 8785 canonical form (first difference at byte {pos})")
    payload_bytes = raw[len(_PREFIX):raw.rindex(b',"signature":')]
    return Bundle(doc["payload"], bytes.fromhex(sig["public_key"]), bytes.fromhex(sig["value"]), raw, payload_bytes)


def verify_bundle(bundle: Bundle, trusted_public_key: bytes | None = None) -> None:
    """Check the key binding and the signature; raises a specific :class:`BundleError`, never returns False.

    ``trusted_public_key`` (a server's registered key) must equal the carried key when given.
    """
    fp = _keys.fingerprint(bundle.public_key)
    if fp != bundle.key_fingerprint:
        raise FingerprintMismatch(f"bundle {bundle.id[:12]}: the carried public key has fingerprint {fp},"
                                  f" but payload.submitter.key_fingerprint says {bundle.key_fingerprint}")
    if trusted_public_key is not None and trusted_public_key != bundle.public_key:
        raise FingerprintMismatch(f"bundle {bundle.id[:12]}: the carried public key is not the registered key for"
                                  f" {bundle.key_fingerprint}")
    try:
        public = _keys.public_from_raw(bundle.public_key)
    except ValueError as exc:
        raise FingerprintMismatch(f"bundle {bundle.id[:12]}: signature.public_key is not an Ed25519 key"
                                  f" ({exc})") from None
    _keys.verify_signature(public, bundle.signature, bundle.payload_bytes, f"bundle {bundle.id[:12]}")


def load_and_verify(raw: bytes, where: str = "bundle") -> Bundle:
    bundle = parse_bundle(raw, where)
    verify_bundle(bundle)
    return bundle


def sign_payload(payload: dict[str, Any], key: Ed25519PrivateKey) -> Bundle:
    """Sign a payload; the result is re-parsed and verified, so a bad payload never leaves this function."""
    try:
        payload_bytes = canonical_bytes(payload)
    except Exception as exc:  # noqa: BLE001
        raise BundleFormatError(f"bundle payload cannot be expressed in RFC 8785 canonical JSON ({exc})") from None
    pub = _keys.public_raw(key)
    raw = envelope_bytes(payload_bytes, pub, key.sign(payload_bytes))
    bundle = parse_bundle(raw)
    verify_bundle(bundle)
    return bundle


def utc_now_text(now: datetime | None = None) -> str:
    now = (now or datetime.now(UTC)).astimezone(UTC)
    return now.strftime("%Y-%m-%dT%H:%M:%S.") + f"{now.microsecond // 1000:03d}Z"
