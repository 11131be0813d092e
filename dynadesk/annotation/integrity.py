"""Tamper evidence for recorded model responses.

Each example carries an HMAC-SHA256, keyed by a per-workspace secret kept in
the store's meta table, over the canonical JSON (RFC 8785) of exactly what was
shown to and answered by the model: inputs, target, model name and digest,
model output and the fooled verdict (plus who made it, when, in which round).
Editing any of these in the database afterwards makes :func:`verify` report
the example. The secret never leaves the workspace; a pack's examples are
re-signed by the workspace that merges them, after the pack was checked.

Scope: this catches edits made without the secret (a hand-edited row, a
script or tool that rewrites responses, a restored or mixed-up backup). The
secret lives in the same database file, so it is tamper *evidence* against
accidents and casual edits, not protection from someone who reads the secret.
"""

from __future__ import annotations

import hashlib
import hmac
import secrets
import uuid
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from dynadesk.canonical import canonical_bytes
from dynadesk.store.annotation import AnnotatedExample, example_from_row

if TYPE_CHECKING:
    from dynadesk.store import Store

SECRET_KEY = "annotation.hmac_secret"
WORKSPACE_ID_KEY = "annotation.workspace_id"


def workspace_secret(store: Store) -> bytes:
    return bytes.fromhex(store.annotation.meta_write_once(SECRET_KEY, secrets.token_hex(32)))


def workspace_id(store: Store) -> str:
    """A random id naming this workspace as the origin of what it creates."""
    return store.annotation.meta_write_once(WORKSPACE_ID_KEY, "ws-" + uuid.uuid4().hex[:16])


def signed_fields(ex: AnnotatedExample) -> dict[str, Any]:
    return {"uid": ex.uid, "task": ex.task, "round": ex.round, "annotator": ex.annotator,
            "context_id": ex.context_id, "inputs": ex.inputs, "target": ex.target, "model_name": ex.model_name,
            "model_digest": ex.model_digest, "model_output": ex.model_output, "fooled": ex.fooled,
            "created_at": ex.created_at}


def compute_hmac(secret: bytes, ex: AnnotatedExample) -> str:
    return hmac.new(secret, canonical_bytes(signed_fields(ex)), hashlib.sha256).hexdigest()


@dataclass
class VerifyReport:
    checked: int
    edited: list[str] = field(default_factory=list)
    held: list[str] = field(default_factory=list)  # merged records an owner here has not accepted (not failures)

    @property
    def ok(self) -> bool:
        return not self.edited

    def to_dict(self) -> dict[str, Any]:
        return {"checked": self.checked, "edited": self.edited, "held": self.held, "ok": self.ok}


def tampered(store: Store, examples: list[AnnotatedExample]) -> list[str]:
    """Uids of ``examples`` whose stored HMAC does not match their stored content."""
    secret = workspace_secret(store)
    bad = []
    for ex in examples:
        try:
            expected = compute_hmac(secret, ex)
        except Exception:  # noqa: BLE001 - content that cannot even be canonicalised was edited
            bad.append(ex.uid)
            continue
        if not hmac.compare_digest(expected, ex.hmac):
            bad.append(ex.uid)
    return bad


def verify(store: Store, task: str | None = None, round_number: int | None = None) -> VerifyReport:
    """Recompute every example's HMAC and list the ones edited since they were recorded."""
    rows = store.annotation.raw_examples(task, round_number)
    examples, bad = [], []
    for row in rows:
        try:
            examples.append(example_from_row(row))
        except (ValueError, TypeError):  # stored JSON no longer parses: edited by hand
            bad.append(row["uid"])
    bad += tampered(store, examples)
    order = {row["uid"]: i for i, row in enumerate(rows)}
    return VerifyReport(checked=len(rows), edited=sorted(bad, key=order.__getitem__),
                        held=[f"{kind} {ident}: {why}" for kind, ident, why in
                              store.annotation.held_records(task, round_number)])
