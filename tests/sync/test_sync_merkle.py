"""Merkle tree: same roots as the RFC 9162 definition, every proof verifies, forged ones do not."""

from __future__ import annotations

import json

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from dynadesk.errors import MerkleProofError
from dynadesk.sync.format import merkle


def rfc_root(leaves: list[bytes]) -> bytes:
    """RFC 9162 MTH, written recursively as in the RFC (the reference the iterative code must match)."""
    if len(leaves) == 1:
        return leaves[0]
    k = 1
    while k * 2 < len(leaves):
        k *= 2
    return merkle.node_hash(rfc_root(leaves[:k]), rfc_root(leaves[k:]))


@pytest.mark.parametrize("n", list(range(1, 34)) + [100, 257])
def test_root_matches_rfc_and_every_leaf_proves(n):
    leaves = [merkle.leaf_hash(str(i).encode()) for i in range(n)]
    root = merkle.root(leaves)
    assert root == rfc_root(leaves)
    for i in range(n):
        merkle.verify_inclusion(leaves[i], i, n, merkle.audit_path(leaves, i), root)


def test_rfc9162_known_vector():
    # RFC 6962 test vector: the empty tree hash, and a one-leaf tree of the empty string
    assert merkle.root([]).hex() == "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855"
    assert merkle.root([merkle.leaf_hash(b"")]).hex() == \
        "6e340b9cffb37a989ca544e6bb780a2c78901d3fb33738768511a30617afa01d"


@settings(max_examples=60, deadline=None)
@given(n=st.integers(1, 40), data=st.data())
def test_a_proof_for_another_leaf_index_or_size_fails(n, data):
    leaves = [merkle.leaf_hash(bytes([i % 256, i // 256])) for i in range(n)]
    root = merkle.root(leaves)
    i = data.draw(st.integers(0, n - 1))
    path = merkle.audit_path(leaves, i)
    wrong = data.draw(st.integers(0, n - 1).filter(lambda j: j != i)) if n > 1 else None
    if wrong is not None:
        with pytest.raises(MerkleProofError):
            merkle.verify_inclusion(leaves[i], wrong, n, path, root)
        with pytest.raises(MerkleProofError):
            merkle.verify_inclusion(leaves[wrong], i, n, path, root)
    with pytest.raises(MerkleProofError):
        merkle.verify_inclusion(leaves[i], i, n + 1, path + [root], root)


def test_predictions_file_proofs_roundtrip(tmp_path):
    f = tmp_path / "predictions.jsonl"
    recs = [{"dataset": "d", "id": f"e{i}", "prediction": {"label": "positive", "probs": {"positive": 0.9}}}
            for i in range(7)]
    f.write_text("".join(json.dumps(r) + "\n" for r in recs))
    tree = merkle.read_predictions(f)
    assert tree.count == 7
    proof = merkle.prove(tree, merkle.find_index(tree, [("id", "e4")]))
    merkle.verify_proof(merkle.InclusionProof.from_dict(proof.to_dict()), tree.root_hex)
    # key order inside a record does not matter (leaves are RFC 8785 bytes)
    f.write_text("".join(json.dumps(r, sort_keys=False, indent=None, separators=(", ", ": ")) + "\n"
                         for r in recs))
    assert merkle.read_predictions(f).root_hex == tree.root_hex
    with pytest.raises(MerkleProofError, match="for root"):
        merkle.verify_proof(proof, "0" * 64)
    for bad in ({}, {**proof.to_dict(), "index": -1}, {**proof.to_dict(), "path": ["xyz"]},
                {**proof.to_dict(), "version": 2}):
        with pytest.raises(MerkleProofError):
            merkle.InclusionProof.from_dict(bad)
    with pytest.raises(MerkleProofError, match="no prediction record"):
        merkle.find_index(tree, [("id", "missing")])
