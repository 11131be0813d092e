"""Handler models (evaluator/handler_adapter.py) without Docker: registration checks the folder without running it,
the digest covers the code, the host refuses to run it (live prediction, the local runner) unless trusted, and each
way a handler breaks fails with its cause named. The Docker path: tests/eval/test_eval_handler_docker.py."""

from __future__ import annotations

import json

import pytest
from support.eval import add_test_set, predictions_bytes, run_request
from support.handler_models import LABELS, make_handler_model, make_wheel

from dynadesk.errors import EvaluationError, ModelError, UnsafeModelError
from dynadesk.evaluator.adapters import AdapterError, load_adapter
from dynadesk.evaluator.handler_adapter import HANDLER, HandlerError
from dynadesk.models import ModelDeclaration, predict_live, register_model, verify_model

MANIFEST = {"task": "sentiment", "kind": HANDLER, "inputs": ["statement"], "labels": LABELS, "timeout_s": 2}
BATCH = [{"statement": "good movie"}, {"statement": "bad bad film"}]


def test_registration_infers_the_kind_and_the_digest_covers_the_code(tmp_path, store):
    folder = make_handler_model(tmp_path / "kw")
    record = register_model(store, folder, "sentiment", name="kw")
    assert record.kind == HANDLER and record.manifest["labels"] == LABELS
    assert json.loads((folder / "dynadesk-model.json").read_text())["kind"] == HANDLER
    assert not (folder / "__pycache__").exists()
    handler = folder / "handler.py"
    handler.write_text(handler.read_text() + "\n# one more line\n")
    with pytest.raises(ModelError, match="changed since registration"):
        verify_model(record)
    handler.write_text(handler.read_text().replace("\n# one more line\n", ""))
    verify_model(record)
    make_wheel(folder / "wheels", version="1.1")  # a vendored wheel is code too
    with pytest.raises(ModelError, match="changed since registration"):
        verify_model(record)


def test_registration_names_what_a_handler_folder_lacks_in_one_line(tmp_path, store):
    folder = make_handler_model(tmp_path / "kw")
    source = (folder / "handler.py").read_text()
    (folder / "handler.py").write_text(source.replace("def predict(", "def guess("))
    with pytest.raises(ModelError, match=r"defines no top-level function 'predict'") as err:
        register_model(store, folder, "sentiment", name="kw")
    assert "\n" not in str(err.value) and "load(model_dir, device) and predict(model, batch)" in str(err.value)
    (folder / "handler.py").write_text("def load(:\n")
    with pytest.raises(ModelError, match=r"handler.py does not parse \(line 1"):
        register_model(store, folder, "sentiment", name="kw")
    (folder / "handler.py").unlink()
    with pytest.raises(ModelError, match=r"not a complete handler model folder; missing handler.py") as err:
        register_model(store, folder, "sentiment", name="kw", declared=ModelDeclaration(kind=HANDLER))
    assert "\n" not in str(err.value)
    other = make_handler_model(tmp_path / "native")
    make_wheel(other / "wheels", name="fast", tag="cp311-cp311-linux_x86_64")
    with pytest.raises(ModelError, match=r"fast-1.0-cp311-cp311-linux_x86_64.whl is not a pure-Python wheel"):
        register_model(store, other, "sentiment", name="native")
    span = make_handler_model(tmp_path / "span")
    (span / "dynadesk-model.json").write_text(json.dumps({**MANIFEST, "labels": None}))
    with pytest.raises(Exception, match="'labels' must list the task labels|needs 'labels'"):
        register_model(store, span, "sentiment", name="span")


def test_the_host_runs_no_handler_code_unless_trusted(tmp_path, store, home):
    from dynadesk.orchestration.evaluate import evaluate
    from dynadesk.workspace import Workspace

    marker = tmp_path / "ran"
    folder = make_handler_model(tmp_path / "kw")
    source = (folder / "handler.py").read_text()
    (folder / "handler.py").write_text(f"open({str(marker)!r}, 'w').close()\n" + source)
    register_model(store, folder, "sentiment", name="kw")
    with pytest.raises(UnsafeModelError, match="only the Docker sandbox runs it"):
        predict_live(store, "kw", {"statement": "good"})
    with pytest.raises(AdapterError, match="runs only in the Docker sandbox"):
        load_adapter(folder)  # the adapter itself refuses without the caller's leave
    add_test_set(store, "set0-test", 6, seed=0, perturbed=False)
    with pytest.raises(EvaluationError, match="--trust-model-code; refused on the local runner") as err:
        evaluate(store, Workspace(home), run_request("kw", runner="local"))
    assert err.value.verdict == "refused" and not marker.exists()
    assert store.evaluations.list() == []  # refused before a run record exists


def test_a_trusted_local_run_scores_the_handler(tmp_path, store, home):
    from dynadesk.orchestration.evaluate import evaluate
    from dynadesk.workspace import Workspace

    register_model(store, make_handler_model(tmp_path / "kw"), "sentiment", name="kw")
    add_test_set(store, "set0-test", 12, seed=0)
    run = evaluate(store, Workspace(home), run_request("kw", runner="local", batch_size=4, latency_samples=4,
                                                       warmup=1), trust_model_code=True)
    assert run.status == "succeeded", run.error + run.log[-2000:]
    assert "trust" not in json.dumps(run.request)  # never stored: a replay or an audit must not inherit it
    examples = store.datasets.examples("set0-test")
    want = load_adapter(tmp_path / "kw", allow_pickle=True).predict([{"statement": ex["statement"]} for ex in examples])
    lines = [json.loads(line) for line in predictions_bytes(run).decode().splitlines()]
    got = {row["id"]: row["prediction"] for row in lines if row["dataset"] == "set0-test"}
    assert [got[ex["id"]]["label"] for ex in examples] == [w["label"] for w in want]
    assert {m.metric for m in run.metrics if m.dataset == "set0-test"} >= {"macro_f1", "robustness", "fairness"}


@pytest.mark.parametrize("behaviour,cause", [
    ("crash", r"predict raised ValueError: HANDLER crash on purpose at handler.py line \d+"),
    ("hang", r"predict did not return within 2 s \(a hang\)"),
    ("wrong_shape", r"predict returned a list of 1 for a batch of 2; .*\(the wrong shape\)"),
    ("network", r"predict tried the network \((getaddrinfo|connect)"),
    ("print", r"predict printed to standard output \('HANDLER says hello"),
])
def test_each_way_a_handler_breaks_is_named(behaviour, cause, tmp_path):
    folder = make_handler_model(tmp_path / behaviour, behaviour)
    adapter = load_adapter(folder, MANIFEST, allow_pickle=True)
    with pytest.raises(HandlerError, match=cause):
        adapter.predict(BATCH)


def test_output_written_straight_to_the_stdout_descriptor_is_caught(tmp_path):
    folder = make_handler_model(tmp_path / "fd")
    source = (folder / "handler.py").read_text()
    raw = "    os.write(1, b'raw bytes')\n    out = []\n"
    (folder / "handler.py").write_text(source.replace("    out = []\n", raw))
    adapter = load_adapter(folder, MANIFEST, allow_pickle=True)
    with pytest.raises(HandlerError, match=r"printed to standard output \('raw bytes'"):
        adapter.predict(BATCH)


@pytest.mark.parametrize("answer,why", [
    ("[{'label': 'joy'}] * len(batch)", "has label 'joy', not one of"),
    ("['positive'] * len(batch)", "is a str, not a dict"),
    ("[{'label': 'positive', 'probs': {'positive': 2.0}}] * len(batch)", "'probs' that are not a probability"),
    ("{'label': 'positive'}", "predict returned dict for a batch of 2"),
])
def test_malformed_answers_are_the_wrong_shape(answer, why, tmp_path):
    folder = make_handler_model(tmp_path / "bad")
    source = (folder / "handler.py").read_text()
    (folder / "handler.py").write_text(source.replace("    out = []\n", f"    return {answer}\n    out = []\n", 1))
    adapter = load_adapter(folder, MANIFEST, allow_pickle=True)
    with pytest.raises(HandlerError, match=why):
        adapter.predict(BATCH)


def test_models_add_names_what_a_handler_lacks_in_one_line(tmp_path):
    from support.hub import dynadesk

    folder = make_handler_model(tmp_path / "kw")
    (folder / "handler.py").write_text((folder / "handler.py").read_text().replace("def load(", "def setup("))
    done = dynadesk(tmp_path / "ws", "models", "add", str(folder), "--task", "sentiment", check=False)
    assert done.returncode != 0 and "defines no top-level function 'load'" in done.stderr, done.stderr
    assert len([line for line in done.stderr.splitlines() if line.strip()]) == 1, done.stderr
    (folder / "handler.py").write_text((folder / "handler.py").read_text().replace("def setup(", "def load("))
    added = dynadesk(tmp_path / "ws", "models", "add", str(folder), "--task", "sentiment")
    assert "handler" in added.stdout, added.stdout
