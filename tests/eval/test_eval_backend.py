"""The optional onnxruntime backend (issue 50 item 3): declared, recorded, signed, classed, audited.

One workspace for the module holds two real local runs of the same tiny classifier, one on torch and one with
``backend="onnxruntime"`` (the worker exports the loaded model to ONNX and runs the timed windows and the pass
through onnxruntime), and their signed bundles. The boards (the local CLI board and a real server on loopback)
rank the onnxruntime run in its own class; its audit re-run replays the backend; a bundle whose backend was
changed and re-signed does not pass, and nothing compares an onnxruntime digest with a torch one as "identical".
"""

from __future__ import annotations

import copy
import json
import subprocess
import sys
from pathlib import Path

import pytest
import requests
from click.testing import CliRunner
from support.eval import run_request, setup_workspace
from support.gui import majority_model
from support.sync import board_db, free_port, signed_payload, start_server, stop_server
from support.tiny_models import make_tiny_qa

from dynadesk.audit.audit import AuditOptions, audit_bundle
from dynadesk.cli import cli
from dynadesk.errors import BundleFormatError, EvaluationError
from dynadesk.evaluator.environment import hardware_class_label, hardware_class_of
from dynadesk.evaluator.schema import BACKENDS
from dynadesk.orchestration.evaluate import evaluate
from dynadesk.orchestration.folder import RunFolder
from dynadesk.sync.client.create import create_bundle
from dynadesk.sync.format import schema as format_schema
from dynadesk.sync.format.canonical import canonical_bytes
from dynadesk.sync.format.envelope import envelope_bytes, parse_bundle
from dynadesk.sync.format.keys import PRIVATE_NAME, generate_key, load_private_key, public_raw
from dynadesk.workspace import Workspace

ORT = "onnxruntime"


@pytest.fixture(scope="module")
def made(tmp_path_factory):
    """(workspace, store, torch run, onnxruntime run, torch bundle, onnxruntime bundle)."""
    tmp = tmp_path_factory.mktemp("backend")
    ws = Workspace(tmp / "ws").ensure()
    store = ws.open_store()
    generate_key(ws.keys_dir)
    setup_workspace(store, tmp, sizes=(16,))
    settings = {"runner": "local", "batch_size": 8, "latency_samples": 8, "warmup": 1}
    torch_run = evaluate(store, ws, run_request("tiny", **settings))
    ort_run = evaluate(store, ws, run_request("tiny", backend=ORT, **settings))
    assert torch_run.status == "succeeded", torch_run.error
    assert ort_run.status == "succeeded", ort_run.error
    yield ws, store, torch_run, ort_run, create_bundle(ws, store, torch_run.id), create_bundle(ws, store, ort_run.id)
    store.close()


def _predictions(run) -> dict[str, dict]:
    lines = (Path(run.run_dir) / "out" / "predictions.jsonl").read_text().splitlines()
    return {f"{r['dataset']}/{r['id']}": r["prediction"] for r in map(json.loads, lines)}


def test_an_onnxruntime_run_records_what_ran_and_gives_the_torch_labels(made):
    ws, store, torch_run, ort_run, _, _ = made
    env = ort_run.environment
    backend = env["backend"]
    assert backend["name"] == ORT and backend["version"] and backend["providers"] == ["CPUExecutionProvider"]
    # onnxruntime's threads follow the run's thread policy (torch's chosen count); recorded
    assert backend["intra_op_threads"] == env["threads"] == env["thread_policy"]["threads"]
    assert backend["spinning"] is (env["thread_policy"]["wait_policy"] != "PASSIVE")  # its wait policy too
    assert backend["export"]["graph_sha256"].startswith("sha256:") and backend["export"]["opset"] == 17
    assert ort_run.worker.backend == ORT and ort_run.request["settings"]["backend"] == ORT
    # a torch run keeps the bytes it always had: no backend in its request or environment
    assert "backend" not in torch_run.request["settings"] and "backend" not in torch_run.environment
    assert torch_run.worker.backend == "torch"
    # nor in the spec the worker reads: an older evaluator image (an audit re-run in a bundle's recorded image)
    # reads a torch spec as before, and refuses an onnxruntime one by name
    specs = [json.loads(RunFolder(Path(r.run_dir)).spec_file.read_text())["settings"] for r in (torch_run, ort_run)]
    assert "backend" not in specs[0] and specs[1]["backend"] == ORT
    a, b = _predictions(torch_run), _predictions(ort_run)
    assert a.keys() == b.keys() and len(a) == 48
    assert {k: p["label"] for k, p in a.items()} == {k: p["label"] for k, p in b.items()}
    # the probabilities agree to the export's float tolerance (bit for bit on this tiny model; ~8e-7 apart on
    # MiniLM): equal or not, each digest is recorded with the backend that made it
    assert max(abs(a[k]["probs"][lab] - b[k]["probs"][lab]) for k in a for lab in a[k]["probs"]) < 1e-4
    for run, name in ((torch_run, "torch"), (ort_run, ORT)):
        stored = store.evaluations.get(run.id)
        assert stored.worker.backend == name and stored.predictions_digest == run.predictions_digest
    # the class boards rank within: the onnxruntime run's is its own, named as such
    assert hardware_class_of(env) == hardware_class_of(torch_run.environment) + ";backend=onnxruntime"
    assert env["hardware_class"] == hardware_class_of(env)
    assert hardware_class_label(env).endswith(", onnxruntime backend")
    assert "backend onnxruntime" in ort_run.log


@pytest.mark.parametrize("wait_policy", ["PASSIVE", None])
def test_onnxruntimes_threads_spin_only_when_torchs_policy_lets_them(tmp_path, monkeypatch, wait_policy):
    """On a busy machine the thread policy makes torch's threads wait passively; onnxruntime's pool, spinning by
    default after every run, would burn the cores the policy left to others (seen: torch matmuls after an
    onnxruntime call 1.6x slower beside it). The session follows the policy, and the backend records it."""
    from support.onnx_models import make_onnx_classifier

    from dynadesk.evaluator.onnx_adapter import SPINNING_KEY, OnnxModule
    from dynadesk.evaluator.threads import WAIT_ENV

    _, folder = make_onnx_classifier(tmp_path, ["negative", "neutral", "positive"])
    if wait_policy is None:
        monkeypatch.delenv(WAIT_ENV, raising=False)
    else:
        monkeypatch.setenv(WAIT_ENV, wait_policy)
    module = OnnxModule(folder / "model.onnx", "cpu", ("logits",))
    spins = module.session.get_session_options().get_session_config_entry(SPINNING_KEY)
    assert spins == ("0" if wait_policy == "PASSIVE" else "1")


def test_a_model_kind_the_backend_does_not_run_is_refused_before_the_run_starts(made, tmp_path):
    ws, store, *_ = made
    from dynadesk.models.registry import register_model

    register_model(store, majority_model(tmp_path / "maj"), "sentiment", name="maj-backend")
    before = len(store.evaluations.list())
    with pytest.raises(EvaluationError) as err:
        evaluate(store, ws, run_request("maj-backend", backend=ORT))
    assert err.value.verdict == "refused" and len(store.evaluations.list()) == before
    res = subprocess.run([sys.executable, "-c", "from dynadesk.cli import main; main()", "--home", str(ws.home),
                          "eval", "maj-backend", "--runner", "local", "--backend", ORT],
                         capture_output=True, text=True, timeout=120)
    assert res.returncode == 1 and len(store.evaluations.list()) == before
    line = "model 'maj-backend' is of kind 'majority', which the onnxruntime backend does not run (it runs " \
           "hf-sequence-classification, hf-question-answering): evaluate it with --backend torch"
    assert res.stderr.strip() == f"Error: {line}" and str(err.value) == line


def test_an_extractive_qa_model_answers_the_same_spans_through_onnxruntime(tmp_path):
    """The QA adapter's windows (long contexts split with a stride) through the exported graph: the same spans."""
    from dynadesk.evaluator.adapters import load_adapter
    from dynadesk.evaluator.backends import use_onnxruntime

    folder = make_tiny_qa(tmp_path / "qa", seed=3, max_length=32)
    eager, ort = load_adapter(folder), load_adapter(folder)
    recorded = use_onnxruntime(ort, "hf-question-answering", "tiny-qa", "cpu")
    assert recorded["name"] == ORT and type(ort.model).__name__ == "OnnxModule"
    batch = [{"question": "who wrote the book", "context": "the book was wrote by a man in paris " * n}
             for n in (1, 3, 6)]  # one window, then several
    a, b = eager.predict(batch), ort.predict(batch)
    assert [(p["answer"], p["start"], p["end"]) for p in a] == [(p["answer"], p["start"], p["end"]) for p in b]
    assert all(abs(x["score"] - y["score"]) < 1e-4 for x, y in zip(a, b))


def test_the_bundle_signs_the_backend_and_an_audit_rerun_replays_it(made):
    ws, store, torch_run, ort_run, torch_bundle, ort_bundle = made
    payload = ort_bundle.payload.to_json()
    assert payload["request"]["settings"]["backend"] == payload["worker_settings"]["backend"] == ORT
    assert payload["environment"]["backend"]["name"] == ORT
    plain = torch_bundle.payload.to_json()  # absent means torch: a torch bundle is what it always was
    assert "backend" not in plain["request"]["settings"] and "backend" not in plain["worker_settings"]
    report = audit_bundle(store, ws, ort_bundle.raw, AuditOptions(rerun=True, runner="local"))
    assert not report.failures and not report.incomplete, report.verdict_lines()
    rerun = store.evaluations.get(report.rerun_id)
    assert rerun.worker.backend == ORT and rerun.environment["backend"]["name"] == ORT
    assert report.get("rerun.backend").verdict == "identical"
    assert report.get("predictions.digest").verdict == "identical"


def _signed_by_hand(payload: dict, ws) -> bytes:
    """A bundle of ``payload`` signed with the workspace key without the project's signer (which parses first)."""
    key = load_private_key(ws.keys_dir / PRIVATE_NAME)
    body = canonical_bytes(payload)
    return envelope_bytes(body, public_raw(key), key.sign(body))


@pytest.mark.parametrize("where", ["request", "worker_settings", "environment"])
def test_a_backend_field_changed_and_resigned_is_refused(made, where):
    ws, store, _, _, _, ort_bundle = made
    payload = copy.deepcopy(ort_bundle.payload.to_json())
    if where == "request":
        payload["request"]["settings"]["backend"] = "torch"
    elif where == "worker_settings":
        del payload["worker_settings"]["backend"]
    else:
        del payload["environment"]["backend"]
    with pytest.raises(BundleFormatError, match="the backend fields disagree"):
        signed_payload(payload, ws)  # the project's own signer refuses it; an attacker signs the bytes by hand
    forged = _signed_by_hand(payload, ws)
    with pytest.raises(BundleFormatError) as err:
        parse_bundle(forged, "forged")
    assert "bundle payload.environment.backend: the backend fields disagree" in str(err.value)
    with pytest.raises(BundleFormatError):
        audit_bundle(store, ws, forged)


def test_an_onnxruntime_run_relabelled_torch_and_resigned_is_judged_by_a_torch_rerun(made):
    """Every backend field rewritten to torch (consistent, re-signed: the submitter holds the key): the audit
    re-runs torch, as now claimed, and its digest verdict is the evidence's: identical only when torch makes
    these very bytes (the tiny model here may; MiniLM's probabilities differ in the last digits)."""
    ws, store, torch_run, ort_run, _, ort_bundle = made
    payload = copy.deepcopy(ort_bundle.payload.to_json())
    del payload["request"]["settings"]["backend"], payload["worker_settings"]["backend"]
    del payload["environment"]["backend"]
    payload["environment"]["hardware_class"] = hardware_class_of(payload["environment"])
    report = audit_bundle(store, ws, signed_payload(payload, ws).raw, AuditOptions(rerun=True, runner="local"))
    assert report.get("rerun.backend").verdict == "identical"  # the re-run did run torch, as now claimed
    assert store.evaluations.get(report.rerun_id).worker.backend == "torch"
    same = torch_run.predictions_digest == ort_run.predictions_digest
    assert (report.get("predictions.digest").verdict == "identical") == same


def test_a_torch_bundle_against_an_onnxruntime_run_says_the_backend_differs(made):
    ws, store, torch_run, ort_run, torch_bundle, _ = made
    report = audit_bundle(store, ws, torch_bundle.raw, AuditOptions(against=ort_run.id))
    check = report.get("rerun.backend")
    assert check.verdict == "differs" and (check.expected, check.actual) == ("torch", ORT)
    assert "the backend differs" in check.note and "rerun.backend" in [c.field for c in report.failures]
    assert not report.ok
    same = audit_bundle(store, ws, torch_bundle.raw, AuditOptions(against=torch_run.id))
    assert same.get("rerun.backend").verdict == "identical"


def test_runs_compare_of_a_torch_and_an_onnxruntime_run_fails_on_the_backend(made):
    ws, store, torch_run, ort_run, _, _ = made
    res = CliRunner().invoke(cli, ["--home", str(ws.home), "runs", "compare", str(torch_run.id), str(ort_run.id),
                                   "--json"])
    out = json.loads(res.output)
    assert res.exit_code == 1 and "backend" in out["failures"], res.output
    check = next(c for c in out["checks"] if c["field"] == "backend")
    assert (check["expected"], check["actual"]) == ("torch", ORT) and "the backend differs" in check["note"]


def _board(ws, *args: str) -> dict:
    res = CliRunner().invoke(cli, ["--home", str(ws.home), "leaderboard", "sentiment", "--json", *args])
    assert res.exit_code == 0, res.output
    return json.loads(res.output)


def _shown(board: dict) -> set[int]:
    """The runs a local board shows: its ranked rows and its baselines (the tiny random model predicts one label
    for every example, so the board shows it as a baseline, unranked)."""
    return {r["evaluation_id"] for r in board["rows"] + board["baselines"]}


def test_the_local_board_ranks_the_onnxruntime_run_in_its_own_class(made):
    ws, store, torch_run, ort_run, _, _ = made
    torch_class, ort_class = hardware_class_of(torch_run.environment), hardware_class_of(ort_run.environment)
    default = _board(ws)
    assert default["hardware_classes"] == {torch_class: 1, ort_class: 1}
    assert default["hardware_class"] == torch_class
    assert _shown(default) == {torch_run.id}
    assert _shown(_board(ws, "--hardware-class", ort_class)) == {ort_run.id}


def _models(answer: dict) -> set[str]:
    return {r["model"] for r in answer["rows"] + answer.get("baselines", [])}


def test_the_public_board_ranks_the_onnxruntime_bundle_in_its_own_class(made, tmp_path):
    from dynadesk.sync.client.upload import sync_queue

    ws, store, torch_run, ort_run, _, ort_bundle = made
    # a public row is one model of one key, its latest bundle: tiny's is the onnxruntime one; a torch row of the
    # same tiny model under another name stands in the torch class beside it
    from dynadesk.models.registry import register_model

    register_model(store, Path(store.models.get("tiny").path), "sentiment", name="tiny-twin")
    twin = evaluate(store, ws, run_request("tiny-twin", runner="local", batch_size=8, latency_samples=4, warmup=0))
    assert twin.status == "succeeded", twin.error
    create_bundle(ws, store, twin.id)
    db_path = tmp_path / "board.db"
    board_db(db_path, ws)
    port = free_port()
    proc = start_server(db_path, port)
    try:
        url = f"http://127.0.0.1:{port}"
        assert sync_queue(store, url).ok
        answer = requests.get(f"{url}/api/leaderboard/sentiment", timeout=10).json()
        torch_class, ort_class = hardware_class_of(torch_run.environment), hardware_class_of(ort_run.environment)
        classes = {c["class"]: c for c in answer["hardware_classes"]}
        assert set(classes) == {torch_class, ort_class}
        assert classes[ort_class]["label"] == hardware_class_label(ort_run.environment)
        assert classes[ort_class]["label"].endswith("onnxruntime backend")
        # two classes tied on every count: the default view is every class together, said not comparable, each
        # row naming its class (the backend in it)
        assert answer["hardware_class"] == "all" and answer["comparable"] is False
        assert {r["model"]: r["hardware_class"] for r in answer["rows"] + answer.get("baselines", [])} == {
            "tiny": ort_class, "tiny-twin": torch_class}
        for cls, model in ((torch_class, "tiny-twin"), (ort_class, "tiny")):
            one = requests.get(f"{url}/api/leaderboard/sentiment", params={"hardware_class": cls}, timeout=10).json()
            assert _models(one) == {model} and one["comparable"] is True
        # an onnxruntime bundle re-signed claiming torch in its request alone (to be classed with torch runs by a
        # reader of that field) is refused at upload, naming the disagreement
        payload = copy.deepcopy(ort_bundle.payload.to_json())
        payload["request"]["settings"]["backend"] = "torch"
        payload["evaluation_id"] += 1000  # another bundle, not a re-upload of the same one
        refused = requests.post(f"{url}/api/bundles", data=_signed_by_hand(payload, ws),
                                headers={"Content-Type": "application/json"}, timeout=10)
        assert 400 <= refused.status_code < 500 and "the backend fields disagree" in refused.text, refused.text
    finally:
        stop_server(proc)


def test_the_format_and_the_evaluator_know_the_same_backends():
    from dynadesk.sync.format.run_settings import RequestSettings

    assert format_schema.BACKENDS == BACKENDS
    base = {"batch_size": 8, "seed": 0, "latency_samples": 8, "warmup": 1}
    assert RequestSettings.from_json({**base, "backend": ORT}, "r").backend == ORT
    with pytest.raises(BundleFormatError, match=r"bundle r.backend: must be one of 'torch', 'onnxruntime', got"):
        RequestSettings.from_json({**base, "backend": "tensorrt"}, "r")


@pytest.mark.docker
def test_the_sandbox_exports_and_runs_the_onnxruntime_backend(made, evaluator_image, docker_client):
    """The evaluator image holds what the export needs (onnx, beside onnxruntime): the sandboxed run (no network,
    read-only root, the graph in its /tmp) gives the local onnxruntime run's labels and records the same backend."""
    ws, store, _, ort_run, _, _ = made
    rec = evaluate(store, ws, run_request("tiny", runner="docker", image=evaluator_image.image_id, batch_size=8,
                                          latency_samples=4, warmup=0, backend=ORT))
    assert rec.status == "succeeded", rec.error
    assert rec.sandboxed and rec.environment["backend"]["name"] == ORT and rec.environment["in_container"]
    assert rec.environment["backend"]["export"]["graph_sha256"] == ort_run.environment["backend"]["export"][
        "graph_sha256"]
    assert {k: p["label"] for k, p in _predictions(rec).items()} == {
        k: p["label"] for k, p in _predictions(ort_run).items()}
