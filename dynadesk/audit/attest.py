"""Audit attestations: the auditor's signed verdict on someone else's bundle, queued for ``dynadesk sync``.

``dynadesk audit BUNDLE --rerun --attest`` builds one from the audit report: the bundle id, each
checked field's verdict, the re-run's hardware class, evaluator image and runner, and the overall
verdict ("reproduced" when no field differed, else "disputed": a measured field outside its
tolerance disputes it too). It is signed
with the workspace key (the document format is :mod:`dynadesk.sync.format.attestation`); the
server accepts it only from keys registered with the auditor role, never about the auditor's own bundle.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime
from pathlib import Path
from typing import TYPE_CHECKING, Any

from dynadesk.audit.compare import HARDWARE_KEYS
from dynadesk.audit.report import ENVIRONMENT, AuditReport
from dynadesk.errors import AuditError
from dynadesk.sync.format.attestation import Attestation, derived_verdict, sign_attestation
from dynadesk.sync.format.envelope import parse_bundle
from dynadesk.sync.format.keys import PRIVATE_NAME, key_info, load_private_key
from dynadesk.sync.format.timestamps import utc_now_text

if TYPE_CHECKING:
    from dynadesk.store import Store
    from dynadesk.workspace import Workspace


@dataclass(frozen=True)
class Verdict:
    """What an auditor attests about one bundle."""

    bundle_id: str
    verdict: str  # "reproduced" | "disputed"
    fields: dict[str, str]  # field -> its check's verdict
    hardware_class: str
    evaluator_image: str | None
    runner: str

    @classmethod
    def from_report(cls, report: AuditReport, rerun_env: dict[str, Any], image: str | None, runner: str) -> Verdict:
        """Only a completed re-run can be attested: "inputs checked" is not "reproduced"."""
        if report.incomplete or report.rerun_id is None:
            raise AuditError("an attestation needs a completed re-run: run 'dynadesk audit BUNDLE --rerun --attest'")
        # The checks that decide the verdict (integrity, inputs, deterministic and measured results); where the
        # re-run ran (the environment checks) is in hardware_class / evaluator_image / runner instead.
        fields = {c.field: c.verdict for c in report.checks if c.kind != ENVIRONMENT}
        # what the audit found, measured fields outside tolerance included (they exit 4): the server's rule
        return cls(report.bundle_id, derived_verdict(fields), fields, hardware_class(rerun_env), image, runner)

    def payload(self, auditor_fingerprint: str, now: datetime | None = None) -> dict[str, Any]:
        return {"bundle_id": self.bundle_id, "created_at": utc_now_text(now),
                "auditor": {"key_fingerprint": auditor_fingerprint}, "verdict": self.verdict, "fields": self.fields,
                "hardware_class": self.hardware_class, "evaluator_image": self.evaluator_image,
                "runner": self.runner}


def hardware_class(env: dict[str, Any]) -> str:
    """The re-run's hardware as one line (the audit's hardware keys), e.g. ``machine=x86_64; cpu_model=...``."""
    libs = env.get("libraries") or {}
    parts = [f"{k}={env.get(k, libs.get(k))}" for k in HARDWARE_KEYS if env.get(k, libs.get(k)) is not None]
    return "; ".join(parts)[:256] or "unknown"


def refuse_own_bundle(workspace: Workspace, bundle_raw: bytes) -> str:
    """The workspace key's fingerprint; :class:`AuditError` when that key signed the bundle (checked first)."""
    bundle = parse_bundle(bundle_raw, "audited bundle")
    info = key_info(workspace.keys_dir)
    if info.fingerprint == bundle.key_fingerprint:
        raise AuditError(f"bundle {bundle.id[:16]} is signed with this workspace's own key: an auditor cannot"
                         " attest their own bundle")
    return info.fingerprint


def attest(store: Store, workspace: Workspace, report: AuditReport, bundle_raw: bytes, passphrase: str | None = None,
           now: datetime | None = None) -> Attestation:
    """Sign the verdict of ``report`` (an audit of ``bundle_raw`` with a re-run) and queue it for sync."""
    fingerprint = refuse_own_bundle(workspace, bundle_raw)
    if report.rerun_id is None:
        raise AuditError("an attestation needs a completed re-run: run 'dynadesk audit BUNDLE --rerun --attest'")
    record = store.evaluations.get(report.rerun_id)
    verdict = Verdict.from_report(report, record.environment or {}, record.image_id, record.runner)
    key = load_private_key(Path(workspace.keys_dir) / PRIVATE_NAME, passphrase)
    att = sign_attestation(verdict.payload(fingerprint, now), key)
    store.bundles.add_attestation(att.id, att.bundle_id, att.verdict, att.raw)
    return att
