"""Documents the board's server signs with its log key: board snapshots and rate editions.

Both are the same envelope (``{"format", "payload", "signature", "version"}``, RFC 8785 bytes, Ed25519 over the
payload's canonical bytes, the payload naming the signing key in ``server.key_fingerprint``) and are parsed, signed
and verified the same way; what tells them apart (format name, size limit, payload fields, the errors raised and the
word a message names the document by) is one :class:`ServerDocKind`. A kind with more to check in its payload passes
``check_payload`` to :func:`parse_server_document`. Bundles and attestations (signed by a submitter or an auditor)
are :mod:`dynadesk.sync.format.envelope`'s.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, ClassVar, TypeVar

from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey

from dynadesk.errors import DynaDeskError
from dynadesk.sync.format import keys as _keys
from dynadesk.sync.format.canonical import canonical_bytes

ENVELOPE_KEYS = {"format", "version", "payload", "signature"}


@dataclass(frozen=True)
class ServerDocKind:
    """What one kind of server-signed document is: its ``format`` field, the word its messages name it by, its size
    limit, the exact payload fields, the error a malformed one raises and the one a bad signature raises."""

    format: str
    noun: str
    max_bytes: int
    payload_keys: frozenset[str]
    error: type[DynaDeskError]
    signature_error: type[DynaDeskError]
    format_hint: str = ""  # after "field 'format' must be ...": how to tell it was another document
    version: int = 1


D = TypeVar("D", bound="ServerSigned")


@dataclass(frozen=True)
class ServerSigned:
    """A structurally valid server-signed document (call :meth:`verify` for its signature); a subclass sets
    ``KIND``."""

    KIND: ClassVar[ServerDocKind]

    payload: dict[str, Any]
    payload_bytes: bytes
    public_key: bytes
    signature: bytes
    raw: bytes

    @property
    def id(self) -> str:
        return hashlib.sha256(self.payload_bytes).hexdigest()

    @property
    def key_fingerprint(self) -> str:
        return _keys.fingerprint(self.public_key)

    def verify(self, server_public_key: bytes | None = None) -> None:
        """The signature over the payload, that the payload names its signing key, and (given) that the signer is
        the server key expected."""
        what, error = f"{self.KIND.noun} {self.id[:12]}", self.KIND.signature_error
        if server_public_key is not None and server_public_key != self.public_key:
            raise error(f"{what}: signed by key {self.key_fingerprint}, not the server key"
                        f" {_keys.fingerprint(server_public_key)} expected")
        stated = (self.payload.get("server") or {}).get("key_fingerprint")
        if stated != self.key_fingerprint:
            raise error(f"{what}: payload.server.key_fingerprint {stated!r:.80} is not the signing key's")
        try:
            key = _keys.public_from_raw(self.public_key)
        except ValueError as exc:
            raise error(f"{what}: malformed public key ({exc})") from None
        _keys.verify_signature(key, self.signature, self.payload_bytes, what)


def sign_server_document(cls: type[D], payload: dict[str, Any], key: Ed25519PrivateKey) -> D:
    """Sign a payload with the server key as a ``cls`` document; the result is re-parsed and verified, so a
    malformed one never leaves here."""
    kind = cls.KIND
    payload_bytes = canonical_bytes(payload)
    pub = _keys.public_raw(key)
    doc = {"format": kind.format, "version": kind.version, "payload": payload,
           "signature": {"algorithm": "ed25519", "public_key": pub.hex(), "value": key.sign(payload_bytes).hex()}}
    signed = parse_server_document(cls, canonical_bytes(doc))
    signed.verify()
    return signed


def parse_server_document(cls: type[D], raw: bytes, where: str = "",
                          check_payload: Callable[[dict[str, Any], str], None] | None = None) -> D:
    """Structure only (size, envelope, canonical form, payload fields, then ``check_payload``); the kind's error
    naming the problem and ``where`` (default: the kind's noun)."""
    kind = cls.KIND
    error, where = kind.error, where or kind.noun
    if len(raw) > kind.max_bytes:
        raise error(f"{where}: {len(raw)} bytes is larger than the {kind.max_bytes}-byte limit")
    try:
        doc = json.loads(raw)
    except ValueError as exc:
        raise error(f"{where}: not JSON ({exc})") from None
    if not isinstance(doc, dict) or doc.get("format") != kind.format:
        raise error(f"{where}: field 'format' must be '{kind.format}'{kind.format_hint}")
    if doc.get("version") != kind.version or set(doc) != ENVELOPE_KEYS:
        raise error(f"{where}: must hold exactly format, version {kind.version}, payload and signature")
    payload, sig = doc["payload"], doc["signature"]
    if not isinstance(payload, dict) or set(payload) != kind.payload_keys:
        got = sorted(payload) if isinstance(payload, dict) else type(payload).__name__
        raise error(f"{where}: payload must hold {', '.join(sorted(kind.payload_keys))}; got {got}")
    if check_payload is not None:
        check_payload(payload, where)
    if not isinstance(sig, dict) or sig.get("algorithm") != "ed25519":
        raise error(f"{where}: signature.algorithm must be 'ed25519'")
    try:
        public_key, signature = bytes.fromhex(str(sig["public_key"])), bytes.fromhex(str(sig["value"]))
    except (KeyError, ValueError):
        raise error(f"{where}: signature.public_key and signature.value must be hex") from None
    if canonical_bytes(doc) != bytes(raw):
        raise error(f"{where}: not in RFC 8785 canonical form (was it edited by hand?)")
    return cls(payload, canonical_bytes(payload), public_key, signature, bytes(raw))
