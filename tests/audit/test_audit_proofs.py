"""Merkle proofs of single predictions: real run folders, real signed bundles, the real CLI."""

from __future__ import annotations

import copy
import json

import pytest
from click.testing import CliRunner
from support.sync import PREDICTIONS_PER_RUN, SET_SIZE, make_run, workspace_with_key

from dynadesk.audit.proofs import check_proof, find_predictions, proof_document, prove_example
from dynadesk.cli import cli
from dynadesk.errors import AuditError, MerkleProofError, PredictionsUnavailable, SignatureError
from dynadesk.sync.client.create import create_bundle
from dynadesk.sync.format.envelope import parse_bundle


@pytest.fixture
def made(home):
    ws, store = workspace_with_key(home)
    run = make_run(store, ws.runs_dir)
    bundle = create_bundle(ws, store, run)
    path = home / "b.json"
    path.write_bytes(bundle.raw)
    yield ws, store, bundle, path
    store.close()


def test_a_proof_for_one_example_verifies_and_a_changed_prediction_does_not(made):
    ws, store, bundle, _ = made
    proof = prove_example(store, bundle.payload, "vader-tweets-test-5")
    assert proof.record["id"] == "vader-tweets-test-5" and proof.record["dataset"] == "vader-tweets-test"
    assert proof.tree_size == bundle.payload.to_json()["predictions"]["count"] == PREDICTIONS_PER_RUN
    doc = proof_document(bundle.id, proof)
    assert check_proof(bundle, json.loads(json.dumps(doc))).index == proof.index

    changed = copy.deepcopy(doc)
    label = changed["proof"]["record"]["prediction"]["label"]
    changed["proof"]["record"]["prediction"]["label"] = "neutral" if label == "negative" else "negative"
    with pytest.raises(MerkleProofError, match="does not lead to the Merkle root"):
        check_proof(bundle, changed)
    moved = copy.deepcopy(doc)
    moved["proof"]["index"] = proof.index + 1  # the right record claimed at another position
    with pytest.raises(MerkleProofError):
        check_proof(bundle, moved)
    other = copy.deepcopy(doc)
    other["bundle_id"] = "0" * 64
    with pytest.raises(MerkleProofError, match="is for bundle 0000"):
        check_proof(bundle, other)


def test_check_proof_refuses_a_bundle_whose_signature_fails(made):
    _, store, bundle, _ = made
    doc = proof_document(bundle.id, prove_example(store, bundle.payload, "vader-movies-test-0"))
    forged = parse_bundle(bundle.raw.replace(bundle.signature.hex().encode(), ("00" * 64).encode()))
    with pytest.raises(SignatureError):
        check_proof(forged, doc)


def test_prove_finds_the_file_by_digest_and_says_when_it_cannot(made):
    _, store, bundle, _ = made
    path = find_predictions(store, bundle.payload)
    assert path.read_bytes().count(b"\n") == PREDICTIONS_PER_RUN
    with pytest.raises(MerkleProofError, match="no example 'nope'"):
        prove_example(store, bundle.payload, "nope")
    with pytest.raises(MerkleProofError, match="in dataset 'vader-movies-test'"):
        prove_example(store, bundle.payload, "vader-tweets-test-1", dataset="vader-movies-test")
    path.write_bytes(path.read_bytes().replace(b"positive", b"negative", 1))  # the kept file changed
    with pytest.raises(PredictionsUnavailable, match="no run in this workspace"):
        prove_example(store, bundle.payload, "vader-tweets-test-1")


def test_ambiguous_example_ids_need_a_dataset(home):
    from dynadesk.datasets import DatasetOrigin, dataset_digest

    ws, store = workspace_with_key(home)
    for name in ("amb-a", "amb-b"):  # two test sets whose examples share their ids
        examples = [{"id": f"x-{i}", "statement": f"{name} {i}", "label": ("negative", "neutral", "positive")[i % 3]}
                    for i in range(SET_SIZE)]
        store.datasets.add(name, "sentiment", "test", examples, dataset_digest(examples), {},
                           DatasetOrigin(source="test"))
    run = make_run(store, ws.runs_dir, datasets=("amb-a", "amb-b"))
    bundle = create_bundle(ws, store, run)
    with pytest.raises(AuditError, match="occurs in several datasets"):
        prove_example(store, bundle.payload, "x-0")
    proof = prove_example(store, bundle.payload, "x-0", dataset="amb-b")
    assert proof.index == 3 * SET_SIZE  # after amb-a and its robustness and fairness sets
    assert proof.record["dataset"] == "amb-b"
    check_proof(bundle, proof_document(bundle.id, proof))
    store.close()


def test_cli_prove_and_check_proof(made, tmp_path):
    _, _, bundle, path = made
    runner = CliRunner()
    out = tmp_path / "proof.json"
    res = runner.invoke(cli, ["audit", "prove", str(path), "vader-movies-test-7", "-o", str(out)])
    assert res.exit_code == 0, res.output
    assert '"id": "vader-movies-test-7"' in res.output and "path[0]" in res.output
    res = runner.invoke(cli, ["audit", "check-proof", str(path), str(out), "--json"])
    assert res.exit_code == 0, res.output
    assert json.loads(res.output)["record"]["id"] == "vader-movies-test-7"

    doc = json.loads(out.read_text())
    doc["proof"]["record"]["prediction"]["probs"]["positive"] = 0.51
    out.write_text(json.dumps(doc))
    res = runner.invoke(cli, ["audit", "check-proof", str(path), str(out)])
    assert res.exit_code != 0 and isinstance(res.exception, MerkleProofError)
    assert "does not lead to the Merkle root" in str(res.exception)


FUZZ = 300 if __import__("os").environ.get("DYNADESK_LONG") == "1" else 40


def test_random_byte_flips_of_a_proof_never_verify_a_different_claim(made, tmp_path):
    """Flip one byte of a proof file: it is rejected, or it still says exactly the same thing."""
    from hypothesis import HealthCheck, given, settings
    from hypothesis import strategies as st

    from dynadesk.audit.proofs import read_proof_file

    _, store, bundle, _ = made
    doc = proof_document(bundle.id, prove_example(store, bundle.payload, "vader-tweets-test-9"))
    raw = json.dumps(doc, indent=1).encode()
    target = tmp_path / "fuzz.json"

    @settings(max_examples=FUZZ, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
    @given(pos=st.integers(0, len(raw) - 1), value=st.integers(0, 255))
    def flip(pos, value):
        data = bytearray(raw)
        data[pos] = value
        target.write_bytes(bytes(data))
        try:
            parsed = read_proof_file(target)
            check_proof(bundle, parsed)
        except MerkleProofError:
            return
        assert parsed == doc  # only a change that leaves the same document (e.g. whitespace) may verify

    flip()
