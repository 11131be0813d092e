"""ONNX models (evaluator/onnx_adapter.py): a tiny classifier and a tiny QA model exported with torch.onnx.export
answer as the torch model does (to 1e-4), and the classifier goes register -> live prediction -> local evaluation
-> signed bundle -> audit re-run with every deterministic field identical."""

from __future__ import annotations

import json
import shutil

import pytest
from support.eval import LABELS, add_test_set, run_request
from support.onnx_models import make_onnx_classifier, make_onnx_qa

from dynadesk.errors import ModelError
from dynadesk.evaluator.adapters import AdapterError, load_adapter
from dynadesk.evaluator.onnx_adapter import ONNX_CLASSIFICATION, ONNX_QA, OnnxModule
from dynadesk.models import ModelDeclaration, predict_live, register_model

pytest.importorskip("onnx", reason="the ONNX export needs the 'onnx' package (dev extra)")
TEXTS = ["the movie was good", "bad", "i really hate this terrible terrible awful food , not ok at all",
         "great book", "the film was very very nice and the people were happy"]


@pytest.fixture(scope="module")
def classifier(tmp_path_factory):
    return make_onnx_classifier(tmp_path_factory.mktemp("onnx-cls"), LABELS)


def test_the_onnx_export_predicts_what_the_torch_model_predicts(classifier):
    import torch

    torch_dir, onnx_dir = classifier
    manifest = json.loads((torch_dir / "dynadesk-model.json").read_text())
    ref = load_adapter(torch_dir, manifest)
    onnx = load_adapter(onnx_dir, {**manifest, "kind": ONNX_CLASSIFICATION})
    assert onnx.kind == ONNX_CLASSIFICATION and not list(onnx_dir.glob("*.safetensors"))
    batch = [{"statement": t} for t in TEXTS]  # different lengths: padded per batch, the mask must hold
    feed = {k: v for k, v in onnx.tokenizer(TEXTS, padding=True, return_tensors="pt").items()}
    with torch.inference_mode():
        want = ref.model(**feed).logits
    got = onnx.model(**feed).logits
    assert got.shape == want.shape == (len(TEXTS), 3)
    assert torch.allclose(got, want, atol=1e-4, rtol=0), (got - want).abs().max()
    for a, b in zip(ref.predict(batch), onnx.predict(batch)):
        assert a["label"] == b["label"]
        assert all(abs(a["probs"][k] - b["probs"][k]) < 1e-4 for k in LABELS)


def test_the_onnx_qa_export_finds_the_torch_models_spans(tmp_path, store):
    torch_dir, onnx_dir = make_onnx_qa(tmp_path)
    manifest = json.loads((torch_dir / "dynadesk-model.json").read_text())
    ref = load_adapter(torch_dir, manifest)
    onnx = load_adapter(onnx_dir, {**manifest, "kind": ONNX_QA})
    batch = [{"context": "paris is the capital of france and london is in england", "question": "what is the capital"},
             {"context": "the river was born in the mountain", "question": "where"}]
    for a, b in zip(ref.predict(batch), onnx.predict(batch)):
        assert (a["answer"], a["start"], a["end"]) == (b["answer"], b["start"], b["end"])
        assert abs(a["score"] - b["score"]) < 1e-4
    reg_dir = shutil.copytree(onnx_dir, tmp_path / "reg")
    record = register_model(store, reg_dir, "qa", name="tiny-onnx-qa")  # kind from the exported config.json
    assert record.kind == ONNX_QA and record.manifest["context_field"] == "context"


def test_onnx_register_live_evaluate_bundle_audit(classifier, tmp_path):
    from dynadesk.audit.audit import AuditOptions, audit_bundle
    from dynadesk.audit.report import DETERMINISTIC, IDENTICAL
    from dynadesk.orchestration.evaluate import evaluate
    from dynadesk.sync.client.create import create_bundle
    from dynadesk.sync.format.keys import generate_key
    from dynadesk.workspace import Workspace

    torch_dir, onnx_dir = classifier
    folder = shutil.copytree(onnx_dir, tmp_path / "tiny-onnx")
    ws = Workspace(tmp_path / "ws").ensure()
    store = ws.open_store()
    try:
        generate_key(ws.keys_dir)
        record = register_model(store, folder, "sentiment", name="tiny-onnx")
        assert record.kind == ONNX_CLASSIFICATION and record.manifest["labels"] == LABELS
        live = predict_live(store, "tiny-onnx", {"statement": TEXTS[0]})
        ref = load_adapter(torch_dir).predict([{"statement": TEXTS[0]}])[0]
        assert live["label"] == ref["label"] and abs(live["probs"]["positive"] - ref["probs"]["positive"]) < 1e-4
        for i, n in enumerate((16, 8)):
            add_test_set(store, f"set{i}-test", n, seed=i)
        run = evaluate(store, ws, run_request("tiny-onnx", runner="local", batch_size=8, latency_samples=8, warmup=1))
        assert run.status == "succeeded", run.error
        bundle = create_bundle(ws, store, run.id)
        assert bundle.payload.to_json()["model"]["digest"] == record.digest
        report = audit_bundle(store, ws, bundle.raw, AuditOptions(rerun=True, runner="local"))
        assert not report.failures and not report.incomplete, report.failures
        det = [c for c in report.checks if c.kind == DETERMINISTIC]
        assert det and all(c.verdict == IDENTICAL for c in det), [c for c in det if c.verdict != IDENTICAL]
        assert report.get("predictions.merkle_root").actual == bundle.payload.to_json()["predictions"]["merkle_root"]
    finally:
        store.close()


def test_registration_names_what_an_onnx_folder_lacks(classifier, tmp_path, store):
    _, onnx_dir = classifier
    folder = shutil.copytree(onnx_dir, tmp_path / "broken")
    (folder / "model.onnx").rename(folder / "graph.onnx")
    with pytest.raises(ModelError, match=r"not a complete ONNX model folder; missing the ONNX graph \(model\.onnx\)$"):
        register_model(store, folder, "sentiment", name="broken")  # an .onnx file: an ONNX folder, but not model.onnx
    (folder / "graph.onnx").unlink()
    (folder / "config.json").unlink()
    with pytest.raises(ModelError, match=r"missing the ONNX graph \(model\.onnx\)$") as err:
        register_model(store, folder, "sentiment", name="broken",
                       declared=ModelDeclaration(ONNX_CLASSIFICATION, tuple(LABELS)))
    assert "\n" not in str(err.value)
    (folder / "dynadesk-model.json").write_text(json.dumps(
        {"task": "sentiment", "kind": ONNX_CLASSIFICATION, "inputs": ["statement"], "labels": LABELS,
         "onnx_file": "../outside.onnx"}))
    with pytest.raises(Exception, match="'onnx_file' must be a relative path"):
        register_model(store, folder, "sentiment", name="broken")


def test_a_corrupt_graph_and_an_absent_cuda_provider_are_adapter_errors(tmp_path):
    bad = tmp_path / "model.onnx"
    bad.write_bytes(b"not a protobuf")
    with pytest.raises(AdapterError, match="onnxruntime cannot load the graph"):
        OnnxModule(bad, "cpu", ("logits",))
    import onnxruntime

    if "CUDAExecutionProvider" not in onnxruntime.get_available_providers():
        with pytest.raises(AdapterError, match="no CUDA provider"):
            OnnxModule(bad, "cuda", ("logits",))


@pytest.mark.docker
@pytest.mark.timeout(1800)  # the fixture may build the image
def test_an_onnx_model_runs_sandboxed_in_docker_and_its_audit_reruns_it_there(classifier, tmp_path, evaluator_image,
                                                                              docker_client):
    """The image ships onnxruntime (it used to fail naming the local runner): Docker run -> bundle -> Docker audit,
    every deterministic field identical, and the same predictions as the local runner."""
    from dynadesk.audit.audit import AuditOptions, audit_bundle
    from dynadesk.audit.report import DETERMINISTIC, IDENTICAL
    from dynadesk.orchestration.evaluate import evaluate
    from dynadesk.sync.client.create import create_bundle
    from dynadesk.sync.format.keys import generate_key
    from dynadesk.workspace import Workspace

    _, onnx_dir = classifier
    ws = Workspace(tmp_path / "ws").ensure()
    store = ws.open_store()
    try:
        generate_key(ws.keys_dir)
        register_model(store, shutil.copytree(onnx_dir, tmp_path / "tiny-onnx"), "sentiment", name="tiny-onnx")
        add_test_set(store, "set0-test", 12, seed=0)
        common = {"batch_size": 4, "latency_samples": 4, "warmup": 1}
        run = evaluate(store, ws, run_request("tiny-onnx", runner="docker", **common), client=docker_client)
        assert run.status == "succeeded" and run.sandboxed, (run.error, (run.log or "")[-1500:])
        local = evaluate(store, ws, run_request("tiny-onnx", runner="local", **common))
        assert local.status == "succeeded", local.error
        assert run.predictions_digest == local.predictions_digest
        bundle = create_bundle(ws, store, run.id)
        report = audit_bundle(store, ws, bundle.raw, AuditOptions(rerun=True), client=docker_client)
        assert bundle.payload.runner.sandboxed
        assert not report.failures and not report.incomplete, report.failures
        det = [c for c in report.checks if c.kind == DETERMINISTIC]
        assert det and all(c.verdict == IDENTICAL for c in det), [c for c in det if c.verdict != IDENTICAL]
    finally:
        store.close()
