"""Which bundles an attestation speaks for: a badge for the exact claim it re-ran, a dispute for the results it
disputed (issue 44, item 1; docs/board.md "Badges").

An attestation names one bundle id, the SHA-256 of that bundle's payload bytes: it vouches for every signed field
of that payload. Before, the server widened that to every bundle with the same ``results_key`` (task, key, model,
data and predictions digests), which holds no metric value and no environment, so a submitter re-signed
reproduced results with perf 99 or the auditor's hardware class and kept "reproduced by 1". Now:

* **A "reproduced" verdict** shows on a bundle only when that bundle's **claim key** equals the attested bundle's:
  the SHA-256 of the canonical payload without ``created_at`` (:func:`claim_key`), i.e. every metric value, the
  environment and hardware class, the runner, settings and tolerances, the model name and digest, the data and
  predictions digests, the submitter key. Re-signing the identical claim later keeps the badge; any other value,
  name or class is another claim, "not audited".
* **A "disputed" verdict** follows the results it disputed: every bundle of the same task whose submitter is the
  same party (the key's organisation, else the key) and that shares the disputed bundle's model digest, its
  predictions digest or its model name. A new predictions digest, a new time or a new name alone sheds nothing.
  Only the auditor who disputed can lift it, by a later "reproduced" of a bundle's exact claim.

Older attestations (version 1, and everything stored before migration ``m009``) name a bundle id as new ones do,
so they vouch for exactly that bundle's claim; no stored attestation widens further than that.
"""

from __future__ import annotations

import hashlib
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any

from dynadesk.sync.format.canonical import canonical_bytes
from dynadesk.sync.format.payload import Payload

REPRODUCED = "reproduced"
DISPUTED = "disputed"


def claim_key(payload: Payload | Mapping[str, Any]) -> str:
    """The claim a bundle makes: SHA-256 (hex) of its canonical payload without the signing time (the typed
    payload, or a stored bundle's JSON object where a migration reads raw rows)."""
    doc = payload.to_json() if isinstance(payload, Payload) else payload
    return hashlib.sha256(canonical_bytes({k: v for k, v in doc.items() if k != "created_at"})).hexdigest()


@dataclass(frozen=True)
class ClaimFacts:
    """What matching needs of one stored bundle (columns of ``bundles``, the signer's organisation)."""

    bundle_id: str
    party: str  # "org:<organisation>" or "key:<fingerprint>": who stands behind the results
    model_name: str
    model_digest: str
    predictions_digest: str  # "" for a bundle stored without one (never matches)
    claim_key: str  # "" likewise: such a bundle matches only attestations naming its own id

    @classmethod
    def of(cls, bundle_id: str, key_fingerprint: str, organisation: str | None, model_name: str,
           model_digest: str, predictions_digest: str | None, claim: str | None) -> ClaimFacts:
        party = f"org:{organisation}" if organisation else f"key:{key_fingerprint}"
        return cls(bundle_id, party, model_name, model_digest, predictions_digest or "", claim or "")


def vouches_for(attested: ClaimFacts, target: ClaimFacts) -> bool:
    """Whether a "reproduced" attestation of ``attested`` speaks for ``target``: the same exact claim."""
    return attested.bundle_id == target.bundle_id or bool(attested.claim_key) and \
        attested.claim_key == target.claim_key


def dispute_follows(attested: ClaimFacts, target: ClaimFacts) -> bool:
    """Whether a "disputed" attestation of ``attested`` stays on ``target``: the same party's same model (weights,
    predictions or name)."""
    if vouches_for(attested, target):
        return True
    return attested.party == target.party and (
        attested.model_digest == target.model_digest or attested.model_name == target.model_name
        or bool(attested.predictions_digest) and attested.predictions_digest == target.predictions_digest)


def attach(targets: Iterable[ClaimFacts], attestations: list[tuple[ClaimFacts, dict[str, Any]]]
           ) -> dict[str, list[dict[str, Any]]]:
    """Bundle id -> the attestations that speak for it, in ``attestations``' order (the log's): a reproduced one
    of its exact claim, a disputed one of its results unless the same auditor later reproduced this exact claim.
    Each attestation dict carries ``verdict``, ``auditor_fingerprint`` and ``log_seq``."""
    out: dict[str, list[dict[str, Any]]] = {}
    for t in targets:
        found = [a for f, a in attestations
                 if (vouches_for(f, t) if a["verdict"] == REPRODUCED else dispute_follows(f, t))]
        lifted = {(a["auditor_fingerprint"], d["log_seq"]) for a in found if a["verdict"] == REPRODUCED
                  for d in found if d["verdict"] == DISPUTED and d["auditor_fingerprint"] == a["auditor_fingerprint"]
                  and a["log_seq"] > d["log_seq"]}
        kept = [a for a in found if a["verdict"] == REPRODUCED
                or (a["auditor_fingerprint"], a["log_seq"]) not in lifted]
        if kept:
            out[t.bundle_id] = kept
    return out


def is_reproduced(row: Mapping[str, Any]) -> bool:
    """THE "is this row reproduced" predicate: a board row (with the ``attestations`` :func:`attach` gave it) is
    reproduced when an auditor re-ran its exact claim and no dispute of its results stands. The reference set,
    ``audit=reproduced``, the default view and the badge all use it."""
    atts = row.get("attestations") or []
    return bool(atts) and all(a.get("verdict") == REPRODUCED for a in atts)
