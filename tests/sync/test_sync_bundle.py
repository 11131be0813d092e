"""Bundles made from a real evaluation row: content, parse-then-verify, tamper tests, byte flips."""

from __future__ import annotations

import json
import random

import pytest
from click.testing import CliRunner
from support.sync import IMAGE_EPOCH, PREDICTIONS_PER_RUN, SET_SIZE, make_run, predictions_file, workspace_with_key

from dynadesk.canonical import canonical_bytes, file_sha256
from dynadesk.cli import cli
from dynadesk.errors import (
    BundleError,
    BundleFormatError,
    DigestMismatch,
    FingerprintMismatch,
    SignatureError,
)
from dynadesk.store.evaluations import RunChange
from dynadesk.sync.client.create import create_bundle
from dynadesk.sync.format import merkle
from dynadesk.sync.format.envelope import Bundle, load_and_verify, parse_bundle, verify_bundle
from dynadesk.sync.format.payload import Payload


@pytest.fixture
def made(tmp_path):
    ws, store = workspace_with_key(tmp_path / "ws")
    ev = make_run(store, ws.runs_dir)
    bundle = create_bundle(ws, store, ev)
    yield ws, store, ev, bundle
    store.close()


def test_bundle_states_the_run(made):
    ws, store, ev, b = made
    rec = store.evaluations.get(ev)
    p = b.payload.to_json()
    assert p["task"] == "sentiment" and p["model"]["name"] == "bow-a"
    assert p["model"]["digest"] == store.models.get("bow-a").digest
    assert [(d["name"], d["digest"], d["size"], d["split"]) for d in p["datasets"]] == [
        (n, store.datasets.get(n).digest, SET_SIZE, "test") for n in rec.datasets]
    assert p["evaluator"] == {"image_digest": rec.image_id, "version": rec.evaluator_version,
                              "source_date_epoch": IMAGE_EPOCH, "input_digest": "sha256:" + "ef" * 32}
    assert "settings" not in p and "image_build" not in p["worker_settings"]  # signed once, in evaluator
    assert p["runner"] == {"kind": "docker", "sandboxed": True}
    assert p["seeds"] == {"seed": 13} and p["worker_settings"]["batch_size"] == 32
    assert {(m["dataset"], m["metric"], m["value"], m["unit"], m["deterministic"]) for m in p["metrics"]} == {
        (m.dataset, m.metric, m.value, m.unit, m.deterministic) for m in rec.metrics}
    pred = predictions_file(rec.run_dir)
    assert p["predictions"]["digest"] == "sha256:" + file_sha256(pred)
    tree = merkle.read_predictions(pred)
    assert p["predictions"]["merkle_root"] == tree.root_hex and p["predictions"]["count"] == PREDICTIONS_PER_RUN
    assert p["evaluation_id"] == ev
    # the file is exactly the canonical bytes, stored in the DB and in bundles/
    assert b.raw == canonical_bytes(json.loads(b.raw))
    assert (ws.bundles_dir / f"{b.id}.json").read_bytes() == b.raw == store.bundles.raw(b.id)
    assert store.bundles.get(b.id).status == "queued"


def test_a_prediction_can_be_proven_against_the_bundle_root(made):
    ws, store, ev, b = made
    tree = merkle.read_predictions(predictions_file(store.evaluations.get(ev).run_dir))
    i = merkle.find_index(tree, [("dataset", "vader-tweets-test"), ("id", "vader-tweets-test-5")])
    proof = merkle.InclusionProof.from_dict(json.loads(json.dumps(merkle.prove(tree, i).to_dict())))
    merkle.verify_proof(proof, b.payload.to_json()["predictions"]["merkle_root"])
    forged = merkle.InclusionProof({**proof.record, "prediction": {"label": "negative"}}, proof.index,
                                   proof.tree_size, proof.path, proof.root)
    with pytest.raises(Exception, match="does not lead to the Merkle root"):
        merkle.verify_proof(forged, b.payload.to_json()["predictions"]["merkle_root"])


def _set(payload: dict, path: str, fn) -> None:
    *parents, last = path.split(".")
    node = payload
    for part in parents:
        node = node[int(part)] if isinstance(node, list) else node[part]
    key = int(last) if isinstance(node, list) else last
    node[key] = fn(node[key])


def _flip_hex(s: str) -> str:
    return s[:-1] + ("0" if s[-1] != "0" else "1")


MUTATIONS = {
    "created_at": lambda v: v[:17] + f"{(int(v[17:19]) + 1) % 60:02d}" + v[19:],  # the seconds, in place
    "task": lambda v: "nli",
    "model.name": lambda v: v + "-x",
    "model.digest": _flip_hex,
    "datasets.0.split": lambda v: "dev",
    "datasets.0.digest": _flip_hex,
    "datasets.0.size": lambda v: v + 1,
    "evaluator.image_digest": _flip_hex,
    "evaluator.version": _flip_hex,
    "evaluator.source_date_epoch": lambda v: v + 1,
    "evaluator.input_digest": _flip_hex,
    "runner.kind": lambda v: "local",
    "runner.sandboxed": lambda v: not v,
    "environment.cpu": lambda v: v + " (faster)",
    "seeds.seed": lambda v: v + 1,
    "worker_settings.batch_size": lambda v: v * 2,
    "metrics.0.metric": lambda v: v + "_x",
    "metrics.0.value": lambda v: v + 0.5,
    "metrics.0.unit": lambda v: "s",
    "metrics.0.deterministic": lambda v: not v,
    "metrics.3.dataset": lambda v: "vader-movies-test",  # the whole-run latency row (rows sorted) to one test set
    "predictions.digest": _flip_hex,
    "predictions.merkle_root": _flip_hex,
    "predictions.count": lambda v: v - 1,
    "evaluation_id": lambda v: v + 1,
}


def _resealed(b: Bundle, payload: dict) -> bytes:
    """Same signature and key, new payload: what an attacker editing a bundle produces."""
    doc = json.loads(b.raw)
    doc["payload"] = payload
    return canonical_bytes(doc)


def test_every_signed_field_is_covered_by_a_tamper_test():
    top = {k.split(".")[0] for k in MUTATIONS} | {"datasets", "submitter"}
    assert top == {f.name for f in Payload.signed_fields(2) if not f.metadata["optional"]}


@pytest.mark.parametrize("path", sorted(MUTATIONS))
def test_tampering_a_signed_field_breaks_the_signature(made, path):
    b = made[3]
    payload = b.payload.to_json()
    _set(payload, path, MUTATIONS[path])
    assert payload != b.payload.to_json()
    tampered = parse_bundle(_resealed(b, payload))  # still well-formed ...
    with pytest.raises(SignatureError, match="does not verify"):  # ... but not what was signed
        verify_bundle(tampered)


def test_renaming_a_dataset_everywhere_breaks_the_signature(made):
    b = made[3]
    payload = b.payload.to_json()
    old = payload["datasets"][0]["name"]
    payload["datasets"][0]["name"] = "vader-nyt-test"
    for m in payload["metrics"]:
        if m["dataset"] == old:
            m["dataset"] = "vader-nyt-test"
    with pytest.raises(SignatureError):
        verify_bundle(parse_bundle(_resealed(b, payload)))


def test_claiming_another_fingerprint_is_a_fingerprint_mismatch(made):
    b = made[3]
    payload = b.payload.to_json()
    payload["submitter"]["key_fingerprint"] = _flip_hex(b.key_fingerprint)
    with pytest.raises(FingerprintMismatch, match="fingerprint"):
        verify_bundle(parse_bundle(_resealed(b, payload)))


# (a missing field, an unknown field, a metric's text value: tests/assets/malformed/, test_sync_malformed_bundles.py)
@pytest.mark.parametrize("mutate, message", [
    (lambda p: p["datasets"][0].update(size=-1), r"datasets\[0\].size"),
    (lambda p: p.update(created_at="yesterday"), "created_at"),
    (lambda p: p["runner"].update(kind="Virtual Machine"), "runner.kind: has the wrong form"),  # any name of the form
    (lambda p: p["metrics"].append(dict(p["metrics"][0])), "repeats metric"),
    (lambda p: p["predictions"].update(merkle_root="XYZ"), "merkle_root"),
    (lambda p: p["evaluator"].update(source_date_epoch="yesterday"), "evaluator.source_date_epoch"),
    (lambda p: p["evaluator"].update(source_date_epoch=-1), "evaluator.source_date_epoch"),
    (lambda p: p["evaluator"].update(input_digest="sha256:xyz"), "evaluator.input_digest"),
    (lambda p: p["evaluator"].pop("input_digest"), "without input_digest"),
    (lambda p: p["evaluator"].update(image_digest=None), "no image Id"),
    (lambda p: p["evaluator"].update(base="debian"), "unknown field"),
])
def test_malformed_payload_names_the_field(made, mutate, message):
    payload = made[3].payload.to_json()
    mutate(payload)
    with pytest.raises(BundleFormatError, match=message):
        parse_bundle(_resealed(made[3], payload))


def test_bundles_without_the_image_build_still_parse(made):
    """Older bundles and local runs carry no build epoch / input digest: well-formed, and still signed."""
    ws, store, ev, b = made
    payload = b.payload.to_json()
    del payload["evaluator"]["source_date_epoch"], payload["evaluator"]["input_digest"]
    old = parse_bundle(_resealed(b, payload))
    assert set(old.payload.to_json()["evaluator"]) == {"image_digest", "version"}
    with pytest.raises(SignatureError):  # dropping the fields is a change to what was signed
        verify_bundle(old)
    store.evaluations.update(ev, RunChange(image_build=None))  # a run that recorded no image build
    fresh = create_bundle(ws, store, ev)
    assert set(fresh.payload.to_json()["evaluator"]) == {"image_digest", "version"}
    verify_bundle(parse_bundle(fresh.raw))


def test_thousand_random_byte_modifications_are_all_rejected(made):
    raw = made[3].raw
    rng = random.Random(20261129)
    kinds: dict[str, int] = {}
    for _ in range(1000):
        data = bytearray(raw)
        pos = rng.randrange(len(data))
        data[pos] = (data[pos] + rng.randrange(1, 256)) % 256
        with pytest.raises(BundleError) as info:
            load_and_verify(bytes(data))
        kinds[type(info.value).__name__] = kinds.get(type(info.value).__name__, 0) + 1
    assert sum(kinds.values()) == 1000
    assert {"BundleFormatError", "SignatureError"} <= set(kinds)


def test_only_succeeded_runs_with_intact_predictions_are_bundled(tmp_path):
    ws, store = workspace_with_key(tmp_path / "ws")
    ev = make_run(store, ws.runs_dir)
    # a succeeded run can no longer become failed
    failed = store.evaluations.create(store.evaluations.get(ev).model_id, "sentiment", runner="docker",
                                      sandboxed=True, datasets=[], status="running")
    store.evaluations.transition(failed, "failed")
    with pytest.raises(BundleError, match="'failed'"):
        create_bundle(ws, store, failed)
    with open(predictions_file(store.evaluations.get(ev).run_dir), "a") as fh:
        fh.write('{"dataset": "x", "id": "extra", "prediction": {}}\n')
    with pytest.raises(DigestMismatch, match="changed after the run"):
        create_bundle(ws, store, ev)
    assert store.bundles.list() == []
    store.close()


def test_cli_create_verify_show(home, tmp_path):
    from dynadesk.workspace import Workspace

    runner = CliRunner()
    assert runner.invoke(cli, ["keys", "init"]).exit_code == 0
    store = Workspace(home).open_store()
    ev = make_run(store, Workspace(home).runs_dir)
    store.close()
    out = tmp_path / "b.json"
    res = runner.invoke(cli, ["bundle", "create", str(ev), "-o", str(out), "--json"])
    assert res.exit_code == 0, res.output
    bid = json.loads(res.output)["id"]
    res = runner.invoke(cli, ["bundle", "verify", str(out)])
    assert res.exit_code == 0 and bid in res.output
    shown = json.loads(runner.invoke(cli, ["bundle", "show", str(out), "--json"]).output)
    assert shown["id"] == bid and shown["payload"]["model"]["name"] == "bow-a"
    data = bytearray(out.read_bytes())
    i = data.index(b'"value":') + 9
    data[i] = ord("9") if data[i] != ord("9") else ord("8")
    bad = tmp_path / "bad.json"
    bad.write_bytes(bytes(data))
    res = runner.invoke(cli, ["bundle", "verify", str(bad)])
    assert res.exit_code != 0 and "does not verify" in str(res.exception)
    listed = json.loads(runner.invoke(cli, ["bundle", "list", "--json"]).output)
    assert [r["id"] for r in listed] == [bid] and listed[0]["status"] == "queued"
