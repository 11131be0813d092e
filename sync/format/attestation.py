"""The audit attestation document: an auditor's signed verdict on one bundle.

Same envelope as a bundle (RFC 8785 bytes, Ed25519 over the payload bytes), another ``format``::

    {"format": "dynadesk-attestation", "version": 1,
     "payload": {"bundle_id": <64 hex>, "created_at": <UTC time>, "auditor": {"key_fingerprint": "sha256:..."},
                 "verdict": "reproduced" | "disputed", "fields": {<field>: <field verdict>, ...},
                 "hardware_class": <text>, "evaluator_image": <image Id> | null, "runner": <runner name>},
     "signature": {...}}

The verdict follows from the fields (:func:`derived_verdict`): "disputed" when any field "differs"
(a deterministic field not identical, or a measured field outside its tolerance on the same hardware
class: the audit only says "differs" for a measured field it could judge), else "reproduced". A
``fields`` holds the checks that decide the verdict (integrity, inputs, deterministic and measured
results); where the re-run ran is ``hardware_class`` / ``evaluator_image`` / ``runner``. A
payload whose verdict says otherwise is refused by the server (and never signed by ``dynadesk audit``).
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass
from functools import cached_property
from typing import Any

from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey

from dynadesk.errors import BundleFormatError, FingerprintMismatch
from dynadesk.sync.format import keys as _keys
from dynadesk.sync.format.canonical import canonical_bytes
from dynadesk.sync.format.envelope import Envelope, envelope_bytes, parse_document, require_canonical
from dynadesk.sync.format.schema import DIGEST, HEX64, RUNNER_NAME, obj, text, timestamp

FORMAT = "dynadesk-attestation"
VERDICTS = ("reproduced", "disputed")
FIELD_VERDICTS = ("identical", "within tolerance", "differs", "not comparable")
PAYLOAD_KEYS = {"bundle_id", "created_at", "auditor", "verdict", "fields", "hardware_class", "evaluator_image",
                "runner"}
MAX_FIELDS = 1024
DIFFERS = "differs"


def derived_verdict(fields: dict[str, str]) -> str:
    """The only verdict ``fields`` allow: "disputed" when any field differs, else "reproduced"."""
    return "disputed" if any(v == DIFFERS for v in fields.values()) else "reproduced"


def verdict_problem(payload: dict[str, Any]) -> str | None:
    """Why the payload's verdict contradicts its fields, or None when it follows from them."""
    expected = derived_verdict(payload["fields"])
    if payload["verdict"] == expected:
        return None
    differing = sorted(k for k, v in payload["fields"].items() if v == DIFFERS)
    why = (f"fields {', '.join(differing)[:200]} say \"differs\"" if differing else "no field says \"differs\"")
    return f"verdict {payload['verdict']!r} contradicts its fields: {why}, so the verdict is {expected!r}"


@dataclass(frozen=True)
class Attestation:
    """A structurally valid attestation (call :meth:`verify` for its signature)."""

    payload: dict[str, Any]
    public_key: bytes
    signature: bytes
    raw: bytes
    payload_bytes: bytes

    @cached_property
    def id(self) -> str:
        return hashlib.sha256(self.payload_bytes).hexdigest()

    @property
    def bundle_id(self) -> str:
        return str(self.payload["bundle_id"])

    @property
    def key_fingerprint(self) -> str:
        return str(self.payload["auditor"]["key_fingerprint"])

    @property
    def verdict(self) -> str:
        return str(self.payload["verdict"])

    def verify(self) -> None:
        """The carried key is the one the payload names, and it signed the payload bytes."""
        fp = _keys.fingerprint(self.public_key)
        if fp != self.key_fingerprint:
            raise FingerprintMismatch(f"attestation {self.id[:12]}: the carried key has fingerprint {fp}, but"
                                      f" payload.auditor.key_fingerprint says {self.key_fingerprint}")
        Envelope(self.payload_bytes, self.public_key, self.signature).verify(f"attestation {self.id[:12]}")

    def summary(self) -> dict[str, Any]:
        """What a board shows of it."""
        p = self.payload
        return {"verdict": p["verdict"], "fields": p["fields"], "hardware_class": p["hardware_class"],
                "evaluator_image": p["evaluator_image"], "runner": p["runner"]}


def check_attestation_payload(p: Any) -> None:
    """Raise :class:`BundleFormatError` naming the field unless ``p`` is a version-1 attestation payload."""
    w = "attestation payload"
    obj(p, w, PAYLOAD_KEYS)
    text(p["bundle_id"], f"{w}.bundle_id", HEX64)
    timestamp(p["created_at"], f"{w}.created_at")
    a = obj(p["auditor"], f"{w}.auditor", {"key_fingerprint"})
    text(a["key_fingerprint"], f"{w}.auditor.key_fingerprint", DIGEST)
    if p["verdict"] not in VERDICTS:
        raise BundleFormatError(f"{w}.verdict: must be one of {', '.join(VERDICTS)}, got {p['verdict']!r:.40}")
    fields = obj(p["fields"], f"{w}.fields")
    if not fields or len(fields) > MAX_FIELDS:
        raise BundleFormatError(f"{w}.fields: must name 1 to {MAX_FIELDS} checked fields")
    for name, verdict in fields.items():
        text(name, f"{w}.fields", max_len=128)
        if verdict not in FIELD_VERDICTS:
            raise BundleFormatError(f"{w}.fields.{name:.60}: must be one of {', '.join(FIELD_VERDICTS)}")
    text(p["hardware_class"], f"{w}.hardware_class", max_len=256)
    if p["evaluator_image"] is not None:
        text(p["evaluator_image"], f"{w}.evaluator_image")
    text(p["runner"], f"{w}.runner", RUNNER_NAME, max_len=32)


def parse_attestation(raw: bytes, where: str = "attestation") -> Attestation:
    """Structure and canonical form only; :class:`BundleFormatError` naming the problem."""
    doc, is_canonical = parse_document(raw, where, FORMAT)
    check_attestation_payload(doc["payload"])
    payload_bytes = require_canonical(doc, bytes(raw), is_canonical, where)
    sig = doc["signature"]
    return Attestation(doc["payload"], bytes.fromhex(sig["public_key"]), bytes.fromhex(sig["value"]), bytes(raw),
                       payload_bytes)


def sign_attestation(payload: dict[str, Any], key: Ed25519PrivateKey) -> Attestation:
    """Sign a payload; the result is re-parsed and verified, so a bad attestation never leaves here."""
    payload_bytes = canonical_bytes(payload)
    raw = envelope_bytes(payload_bytes, _keys.public_raw(key), key.sign(payload_bytes), FORMAT)
    att = parse_attestation(raw)
    att.verify()
    return att
