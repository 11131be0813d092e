"""What the server database stores and returns, as plain values (no SQL here)."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

ROLES = ("submitter", "auditor")
EntryHash = Callable[[int, str, str, str, str], str]



@dataclass(frozen=True)
class KeyRow:
    fingerprint: str
    public_key: bytes
    name: str
    added_at: str
    revoked_at: str | None
    revoke_reason: str | None
    role: str = "submitter"
    organisation: str | None = None  # registered by the operator; None: the key is an organisation of its own

    @property
    def org(self) -> str:
        """The organisation the key acts for (a key without one stands for itself)."""
        return self.organisation or f"key:{self.fingerprint}"

    def to_dict(self) -> dict[str, Any]:
        return {"fingerprint": self.fingerprint, "public_key": self.public_key.hex(), "name": self.name,
                "added_at": self.added_at, "revoked_at": self.revoked_at, "revoke_reason": self.revoke_reason,
                "role": self.role, "organisation": self.organisation}


@dataclass(frozen=True)
class UploadConfig:
    """What an upload is checked against: registered keys and each task's accepted datasets."""

    keys: dict[str, KeyRow]
    datasets: dict[str, dict[tuple[str, str], dict[str, Any]]]  # task -> (task, name) -> dataset row
    superseded: dict[tuple[str, str, str], dict[str, Any]]  # (task, name, old digest) -> its version row


@dataclass(frozen=True)
class CheckedBundle:
    """A bundle that passed every upload check, in the form the database stores it."""

    bundle_id: str
    raw: bytes
    bundle_sha256: str
    task: str
    model_name: str
    model_digest: str
    key_fingerprint: str
    created_at: str
    created_us: int  # created_at as microseconds since 1970: what the board orders by
    datasets: dict[str, str]  # name -> digest the bundle was scored on
    metrics: dict[str, Any]  # the board's compact form (board.board_metrics)
    results_key: str = ""  # migrations.results_key: stored since m005; attestations use claim_key since m009
    stats: dict[str, Any] | None = None  # board_stats.bundle_stats: intervals, outcomes, shared resamples
    claim_key: str = ""  # claims.claim_key: the exact claim a "reproduced" attestation speaks for
    predictions_digest: str = ""  # payload.predictions.digest: a dispute follows it (claims.dispute_follows)


@dataclass(frozen=True)
class CheckedAttestation:
    """An attestation that passed every upload check."""

    attestation_id: str
    raw: bytes
    sha256: str
    bundle_id: str
    auditor_fingerprint: str
    verdict: str
    summary: dict[str, Any]  # what the board shows of it (fields, hardware class, image)
    created_at: str


@dataclass(frozen=True)
class BundleFacts:
    """What an attestation is checked against: the attested bundle's signer, time and results."""

    key_fingerprint: str
    created_us: int
    created_at: str
    results_key: str
