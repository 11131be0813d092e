"""The bundle envelope: parse, then verify (sigstore-python style).

A bundle file is exactly the RFC 8785 bytes of::

    {"format": "dynadesk-bundle", "version": 2,
     "payload": {...signed fields, see sync/format/payload.py...},
     "signature": {"algorithm": "ed25519", "public_key": <hex>, "value": <hex>}}

The signature is over the JCS bytes of ``payload``. Because the file itself
must be canonical, any byte changed anywhere is either malformed, not
canonical, or changes signed content: nothing verifies by accident.
:func:`parse_bundle` only accepts well-formed input (a malformed bundle never
becomes a :class:`Bundle`); :func:`verify_bundle` then raises a specific
error or returns None — it never returns False. :func:`split_envelope` is the server's
first, cheap look: it finds the signed bytes, the key and the signature by position, without
parsing the payload, so a forged or unsigned body is refused before any costly check.

Bundles are written as version 2 (typed, schema-checked run fields); version 1 bundles (one ``settings``
object) are still read, verified and audited. Other formats on this envelope (attestations) are version 1.
"""

from __future__ import annotations

import hashlib
import re
from collections.abc import Mapping
from dataclasses import dataclass
from datetime import datetime
from functools import cached_property
from typing import Any

from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey

from dynadesk.errors import BundleFormatError, FingerprintMismatch, UnsupportedVersionError
from dynadesk.jsonio import check_depth
from dynadesk.sync.format import keys as _keys
from dynadesk.sync.format import payload as _payload
from dynadesk.sync.format.canonical import canonical_bytes, loads_checked
from dynadesk.sync.format.payload import Payload
from dynadesk.sync.format.schema import obj

FORMAT = "dynadesk-bundle"
VERSION = 2  # what this program writes for bundles
READ_VERSIONS: dict[str, tuple[int, ...]] = {FORMAT: (1, 2)}  # per format; formats not named: (1,)
MAX_BUNDLE_BYTES = 1 << 20
_HEX_KEY = re.compile(r"^[0-9a-f]{64}$")
_HEX_SIG = re.compile(r"^[0-9a-f]{128}$")
DIAGNOSE_BYTES = 64 << 10  # a misframed body up to this size is parsed to name what is wrong; larger ones are not
_SIG_MARK = b',"signature":'
_TAIL = re.compile(rb'\{"algorithm":"ed25519","public_key":"([0-9a-f]{64})","value":"([0-9a-f]{128})"\},"version":'
                   rb'([1-9][0-9]{0,2})\}\Z')


def written_version(fmt: str) -> int:
    """The version this program writes for ``fmt``."""
    return VERSION if fmt == FORMAT else 1


def read_versions(fmt: str) -> tuple[int, ...]:
    """The versions this program reads for ``fmt``."""
    return READ_VERSIONS.get(fmt, (1,))


@dataclass(frozen=True)
class Envelope:
    """The signed bytes, key and signature of a canonical envelope, found by position (payload unparsed)."""

    payload_bytes: bytes
    public_key: bytes
    signature: bytes

    @property
    def key_fingerprint(self) -> str:
        return _keys.fingerprint(self.public_key)

    def verify(self, what: str) -> None:
        """Raise :class:`SignatureError` unless the signature is over :attr:`payload_bytes`."""
        try:
            public = _keys.public_from_raw(self.public_key)
        except ValueError as exc:
            raise FingerprintMismatch(f"{what}: signature.public_key is not an Ed25519 key ({exc})") from None
        _keys.verify_signature(public, self.signature, self.payload_bytes, what)


def split_envelope(raw: bytes, where: str = "bundle", fmt: str = FORMAT) -> Envelope:
    """Cheap first look at a ``fmt`` document: size, then the canonical envelope's fixed frame.

    Costs a few regular-expression steps whatever the payload holds. A frame that does not match
    is diagnosed by :func:`_diagnose_envelope` (a plain JSON parse, never the canonical check) when small."""
    if not isinstance(raw, (bytes, bytearray)):
        raise BundleFormatError(f"{where}: expected bytes")
    raw = bytes(raw)
    if len(raw) > MAX_BUNDLE_BYTES:
        raise BundleFormatError(f"{where}: {len(raw)} bytes is larger than the {MAX_BUNDLE_BYTES}-byte limit")
    prefix = b'{"format":"' + fmt.encode() + b'","payload":'
    cut = raw.rfind(_SIG_MARK)
    found = _TAIL.match(raw, cut + len(_SIG_MARK)) if cut > 0 and raw.startswith(prefix) else None
    if found is not None and int(found.group(3)) not in read_versions(fmt):
        found = None  # diagnosed below: an unsupported version is named as such
    if found is None:
        if len(raw) <= DIAGNOSE_BYTES:
            _diagnose_envelope(raw, where, fmt)
        raise BundleFormatError(f"{where}: not a {fmt} envelope in RFC 8785 canonical form (it must begin with"
                                f" {prefix.decode()!r} and end with the signature and version fields)")
    return Envelope(raw[len(prefix):cut], bytes.fromhex(found.group(1).decode()),
                    bytes.fromhex(found.group(2).decode()))


def _load_json(raw: bytes, where: str) -> tuple[Any, bool]:
    check_depth(raw, where, error=BundleFormatError)
    try:
        return loads_checked(raw)
    except UnicodeDecodeError as exc:
        raise BundleFormatError(f"{where}: not UTF-8 text (byte {exc.start})") from None
    except ValueError as exc:
        raise BundleFormatError(f"{where}: not valid JSON ({exc})") from None
    except RecursionError:
        raise BundleFormatError(f"{where}: JSON nested too deeply") from None


def _diagnose_envelope(raw: bytes, where: str, fmt: str) -> None:
    """Name what is wrong with an envelope that :func:`split_envelope` could not frame (fast JSON only)."""
    import json

    try:
        doc = json.loads(raw.decode("utf-8"))
    except UnicodeDecodeError as exc:
        raise BundleFormatError(f"{where}: not UTF-8 text (byte {exc.start})") from None
    except ValueError as exc:
        raise BundleFormatError(f"{where}: not valid JSON ({exc})") from None
    except RecursionError:
        raise BundleFormatError(f"{where}: JSON nested too deeply") from None
    _check_envelope(doc, where, fmt)


@dataclass(frozen=True)
class Bundle:
    """A structurally valid bundle. Holding one says nothing about its signature: call verify_bundle.

    ``payload`` is the typed model of the signed fields (``payload.to_json()``: the JSON object, whose RFC 8785
    bytes are ``payload_bytes``)."""

    payload: Payload
    public_key: bytes
    signature: bytes
    raw: bytes  # the exact canonical file bytes
    payload_bytes: bytes  # the signed bytes
    version: int = VERSION  # the envelope's format version (1: an older bundle, read and audited as such)

    @cached_property
    def id(self) -> str:
        """sha256 hex of the signed payload bytes: the bundle's name on every server."""
        return hashlib.sha256(self.payload_bytes).hexdigest()

    @property
    def key_fingerprint(self) -> str:
        return self.payload.submitter.key_fingerprint

    @property
    def task(self) -> str:
        return self.payload.task

    @property
    def model_name(self) -> str:
        return self.payload.model.name

    @property
    def created_at(self) -> datetime:
        return self.payload.created

    def summary(self) -> dict[str, Any]:
        p = self.payload
        return {"id": self.id, "task": p.task, "model": p.model.to_json(), "created_at": p.created_at,
                "key_fingerprint": self.key_fingerprint, "datasets": p.dataset_names,
                "runner": p.runner.to_json(), "metrics": len(p.metrics), "merkle_root": p.predictions.merkle_root,
                "bytes": len(self.raw)}


def envelope_bytes(payload_bytes: bytes, public_key: bytes, signature: bytes, fmt: str = FORMAT) -> bytes:
    """The canonical envelope around already-canonical ``payload_bytes`` (keys sort: format, payload, ...)."""
    sig = canonical_bytes({"algorithm": "ed25519", "public_key": public_key.hex(), "value": signature.hex()})
    return (b'{"format":"' + fmt.encode() + b'","payload":' + payload_bytes + _SIG_MARK + sig
            + b',"version":' + str(written_version(fmt)).encode() + b"}")


def _check_envelope(doc: Any, where: str, fmt: str) -> dict[str, Any]:
    """The envelope's own fields (format, version, signature), not the payload."""
    if not isinstance(doc, dict):
        raise BundleFormatError(f"{where}: must be a JSON object, got {type(doc).__name__}")
    if doc.get("format") != fmt:
        raise BundleFormatError(f"{where}: field 'format' must be '{fmt}', got {doc.get('format')!r:.60}")
    readable = read_versions(fmt)
    if doc.get("version") not in readable or isinstance(doc.get("version"), bool):
        raise UnsupportedVersionError(f"{where}: format version {doc.get('version')!r:.30} is not supported"
                                      f" (this program reads version {' and '.join(map(str, readable))})")
    obj(doc, "envelope", {"format", "version", "payload", "signature"})
    sig = obj(doc["signature"], "signature", {"algorithm", "public_key", "value"})
    if sig["algorithm"] != "ed25519":
        raise BundleFormatError(f"{where}: signature.algorithm must be 'ed25519', got {sig['algorithm']!r:.40}")
    if not isinstance(sig["public_key"], str) or not _HEX_KEY.match(sig["public_key"]):
        raise BundleFormatError(f"{where}: signature.public_key must be 64 lowercase hex digits")
    if not isinstance(sig["value"], str) or not _HEX_SIG.match(sig["value"]):
        raise BundleFormatError(f"{where}: signature.value must be 128 lowercase hex digits")
    return doc


def parse_document(raw: bytes, where: str, fmt: str) -> tuple[dict[str, Any], bool]:
    """The parsed ``fmt`` envelope (payload unchecked) and whether ``raw`` is canonical."""
    if not isinstance(raw, (bytes, bytearray)):
        raise BundleFormatError(f"{where}: expected bytes")
    if len(raw) > MAX_BUNDLE_BYTES:
        raise BundleFormatError(f"{where}: {len(raw)} bytes is larger than the {MAX_BUNDLE_BYTES}-byte limit")
    doc, is_canonical = _load_json(bytes(raw), where)
    return _check_envelope(doc, where, fmt), is_canonical


def require_canonical(doc: dict[str, Any], raw: bytes, is_canonical: bool, where: str) -> bytes:
    """The signed payload bytes of a canonical envelope; :class:`BundleFormatError` naming the first difference."""
    if not is_canonical:
        try:
            canonical = canonical_bytes(doc)
        except BundleFormatError as exc:
            raise BundleFormatError(f"{where}: {exc}") from None
        pos = next((i for i, (a, b) in enumerate(zip(canonical, raw)) if a != b), min(len(canonical), len(raw)))
        raise BundleFormatError(f"{where}: not in RFC 8785 canonical form (first difference at byte {pos}){_hint(raw)}")
    prefix_len = len(b'{"format":"' + doc["format"].encode() + b'","payload":')
    return raw[prefix_len:raw.rindex(_SIG_MARK)]


def _hint(raw: bytes) -> str:
    """Why a parsed envelope is not canonical, and the way back: the signature covers the canonical bytes."""
    reformatted = b"\n" in raw or b'": ' in raw or b", " in raw
    what = "it was re-formatted after it was written (pretty-printed or re-saved by an editor)" if reformatted \
        else "its bytes were re-encoded after it was written (key order, number or string escapes)"
    return (f"; {what}: send the file exactly as 'dynadesk bundle create' wrote it, or restore the canonical form "
            "with 'dynadesk bundle canonical FILE -o OUT' (the signature then verifies if only the form changed)")


def parse_bundle(raw: bytes, where: str = "bundle") -> Bundle:
    """Check structure only; raises :class:`BundleFormatError` (or a subclass) naming the problem."""
    doc, is_canonical = parse_document(raw, where, FORMAT)
    payload = _payload.parse_payload(doc["payload"], doc["version"])
    raw = bytes(raw)
    payload_bytes = require_canonical(doc, raw, is_canonical, where)
    sig = doc["signature"]
    return Bundle(payload, bytes.fromhex(sig["public_key"]), bytes.fromhex(sig["value"]), raw, payload_bytes,
                  doc["version"])


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
    Envelope(bundle.payload_bytes, bundle.public_key, bundle.signature).verify(f"bundle {bundle.id[:12]}")


def load_and_verify(raw: bytes, where: str = "bundle") -> Bundle:
    bundle = parse_bundle(raw, where)
    verify_bundle(bundle)
    return bundle


def sign_payload(payload: Payload | Mapping[str, Any], key: Ed25519PrivateKey) -> Bundle:
    """Sign a payload (the typed model, or its JSON object as a writer builds it): the signed bytes are the RFC
    8785 form of its JSON object; the result is re-parsed and verified, so a bad payload never leaves here."""
    try:
        payload_bytes = canonical_bytes(payload.to_json() if isinstance(payload, Payload) else payload)
    except BundleFormatError as exc:
        raise BundleFormatError(f"bundle payload {exc}") from None
    pub = _keys.public_raw(key)
    raw = envelope_bytes(payload_bytes, pub, key.sign(payload_bytes))
    bundle = parse_bundle(raw)
    verify_bundle(bundle)
    return bundle
