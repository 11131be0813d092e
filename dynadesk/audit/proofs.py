"""Prove one prediction of a signed bundle without handing over the test set.

``prove_example`` needs the run's ``predictions.jsonl`` from the submitter's
workspace (found by the bundle's predictions digest); ``check_proof`` needs only
the bundle and the proof: it verifies the bundle's signature, then the audit path
against the signed Merkle root (:mod:`dynadesk.sync.format.merkle`). Both raise; neither
returns False.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import TYPE_CHECKING, Any

from dynadesk.audit.compare import predictions_files
from dynadesk.canonical import file_sha256
from dynadesk.errors import (
    AuditError,
    DigestMismatch,
    MerkleProofError,
    NotFoundError,
    PredictionsUnavailable,
    ValidationError,
)
from dynadesk.jsonio import loads_bounded, read_text_capped
from dynadesk.sync.format.payload import Payload

if TYPE_CHECKING:
    from dynadesk.store import Store
    from dynadesk.store.evaluations import EvaluationRecord
    from dynadesk.sync.format.envelope import Bundle
    from dynadesk.sync.format.merkle import InclusionProof

PROOF_FORMAT = "dynadesk-prediction-proof"


def _candidates(store: Store, payload: Payload) -> Iterator[EvaluationRecord]:
    try:
        yield store.evaluations.get(payload.evaluation_id)
    except NotFoundError:
        pass
    for record in store.evaluations.list(status="succeeded", limit=1_000_000):
        if record.predictions_digest == payload.predictions.digest:
            yield record


def find_predictions(store: Store, payload: Payload) -> Path:
    """The workspace file whose sha256 is the bundle's predictions digest."""
    want = payload.predictions.digest
    for record in _candidates(store, payload):
        for path in predictions_files(record):
            if path.is_file() and "sha256:" + file_sha256(path) == want:
                return path
    raise PredictionsUnavailable(f"no run in this workspace kept a predictions file with digest {want}: proofs are "
                                 "made in the submitter's workspace, which holds the run's predictions")


def prove_example(store: Store, payload: Payload, example_id: str,
                  dataset: str | None = None) -> Any:
    """An :class:`~dynadesk.sync.format.merkle.InclusionProof` for one example's prediction."""
    from dynadesk.sync.format.merkle import prove, read_predictions

    path = find_predictions(store, payload)
    tree = read_predictions(path)
    if tree.root_hex != payload.predictions.merkle_root:
        raise DigestMismatch(f"{path}: Merkle root {tree.root_hex} is not the bundle's "
                             f"{payload.predictions.merkle_root}")
    hits = [i for i, r in enumerate(tree.records) if isinstance(r, dict) and r.get("id") == example_id
            and (dataset is None or r.get("dataset") == dataset)]
    if not hits:
        where = f" in dataset '{dataset}'" if dataset else ""
        raise MerkleProofError(f"the bundle's predictions hold no example '{example_id}'{where}")
    if len(hits) > 1:
        names = ", ".join(str(tree.records[i].get("dataset")) for i in hits)
        raise AuditError(f"example id '{example_id}' occurs in several datasets ({names}): pass --dataset")
    return prove(tree, hits[0])


def proof_document(bundle_id: str, proof: InclusionProof) -> dict[str, Any]:
    """What ``audit prove -o`` writes: the proof, tied to one bundle id."""
    return {"format": PROOF_FORMAT, "bundle_id": bundle_id, "proof": proof.to_dict()}


def parse_proof(doc: Any, bundle_id: str) -> InclusionProof:
    """A proof document (or a bare proof) for ``bundle_id``; raises :class:`MerkleProofError`."""
    from dynadesk.sync.format.merkle import InclusionProof

    if isinstance(doc, dict) and doc.get("format") == PROOF_FORMAT:
        if set(doc) != {"format", "bundle_id", "proof"}:
            raise MerkleProofError("a proof document holds exactly format, bundle_id and proof")
        if doc["bundle_id"] != bundle_id:
            raise MerkleProofError(f"the proof is for bundle {str(doc['bundle_id'])[:64]}, not {bundle_id}")
        doc = doc["proof"]
    return InclusionProof.from_dict(doc)


def check_proof(bundle: Bundle, doc: Any) -> InclusionProof:
    """Verify the bundle's signature, then the proof against its signed Merkle root; returns the proof."""
    from dynadesk.sync.format.envelope import verify_bundle
    from dynadesk.sync.format.merkle import verify_proof

    verify_bundle(bundle)
    proof = parse_proof(doc, bundle.id)
    count = bundle.payload.predictions.count
    if proof.tree_size != count:
        raise MerkleProofError(f"the proof is for a tree of {proof.tree_size} predictions; the bundle signs {count}")
    verify_proof(proof, bundle.payload.predictions.merkle_root)
    return proof


def read_proof_file(path: str | Path) -> Any:
    try:
        return loads_bounded(read_text_capped(path, what="proof file"), str(path))
    except (OSError, ValueError, ValidationError) as exc:
        raise MerkleProofError(f"cannot read proof file {path}: {exc}") from None
