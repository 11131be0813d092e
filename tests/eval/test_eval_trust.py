"""The evaluation trust boundary (issue 31): the host computes the deterministic figures itself.

Attacks, as an attacker would try them: code inside the sandbox (the hostile-model stand-in)
rewrites ``/out/metrics.json`` or the predictions at exit; someone with the workspace database
edits a ``metric_values`` row and then signs a bundle. Each test was seen failing on the code
before the host recomputed (the run was stored ``succeeded`` / the bundle signed the edit).
"""

from __future__ import annotations

import json
import sqlite3
from pathlib import Path

import pytest
from support.eval import add_test_set, run_request, setup_workspace

from dynadesk.errors import BundleError
from dynadesk.evaluator import metrics as M
from dynadesk.orchestration.evaluate import default_limits, evaluate
from dynadesk.orchestration.folder import RunFolder
from dynadesk.orchestration.recompute import ResultMismatch, read_predictions
from dynadesk.workspace import Workspace

# --------------------------------------------------------------------------- bundle create (local runner)

@pytest.fixture
def local_run(home, tmp_path):
    from dynadesk.sync.format.keys import generate_key

    ws = Workspace(home).ensure()
    store = ws.open_store()
    generate_key(ws.keys_dir)
    setup_workspace(store, tmp_path, sizes=(16, 8))
    run = evaluate(store, ws, run_request("tiny", runner="local", batch_size=8, latency_samples=4, warmup=0))
    assert run.status == "succeeded", run.error
    yield ws, store, run
    store.close()


def test_bundle_create_signs_the_recomputed_perf_and_refuses_an_edited_metric_values_row(local_run):
    from dynadesk.sync.client.create import create_bundle

    ws, store, run = local_run
    perf = next(m for m in run.metrics if m.dataset == "" and m.metric == "perf")
    honest = create_bundle(ws, store, run.id)
    signed = {(m["dataset"], m["metric"]): m["value"] for m in honest.payload.to_json()["metrics"]}
    assert signed == {(m.dataset, m.metric): m.value for m in run.metrics}  # an honest run signs as stored

    with sqlite3.connect(ws.db_path) as db:  # the attacker edits the workspace database directly
        db.execute("UPDATE metric_values SET value = 100.0 WHERE evaluation_id = ? AND dataset = '' "
                   "AND metric = 'perf'", [run.id])
    assert next(m.value for m in store.evaluations.get(run.id).metrics if m.dataset == "" and m.metric == "perf") \
        == 100.0
    with pytest.raises(BundleError) as caught:
        create_bundle(ws, store, run.id)
    message = str(caught.value)
    assert "'perf' (whole run)" in message and repr(perf.value) in message and "100.0" in message


def test_a_duplicate_or_missing_prediction_record_is_named(tmp_path):
    gold = {"set": [{"id": "a", "label": "positive"}, {"id": "b", "label": "negative"}]}
    path = tmp_path / "predictions.jsonl"
    rows = [{"dataset": "set", "id": "a", "prediction": {"label": "positive"}},
            {"dataset": "set", "id": "a", "prediction": {"label": "negative"}},
            {"dataset": "set", "id": "zz", "prediction": {"label": "negative"}}]
    path.write_text("".join(json.dumps(r) + "\n" for r in rows))
    with pytest.raises(ResultMismatch) as caught:
        read_predictions(path, gold)
    assert caught.value.verdict == "mismatch"
    assert "duplicate prediction ids: set/a" in str(caught.value)
    assert "missing prediction ids: set/b" in str(caught.value)
    assert "unknown prediction ids: set/zz" in str(caught.value)
    path.write_text("".join(json.dumps(r) + "\n" for r in (rows[0], {**rows[1], "id": "b"})))
    assert read_predictions(path, gold) == {"set": {"a": {"label": "positive"}, "b": {"label": "negative"}}}


# --------------------------------------------------------------------------- the sandbox's own rewrite (Docker)


@pytest.fixture
def ws(home, store, tmp_path):
    setup_workspace(store, tmp_path, sizes=(8, 4))
    add_test_set(store, "small-test", 6, seed=7, perturbed=False)
    return Workspace(home)


def _hostile_run(store, ws, tmp_path: Path, behaviour: str, image: object, client: object):
    from support.hostile_models import HostileDockerRunner, make_hostile_model

    from dynadesk.models.registry import register_model

    register_model(store, make_hostile_model(tmp_path / behaviour, behaviour), "sentiment", name=behaviour)
    request = run_request(behaviour, ["small-test"], runner="docker", image=image.image_id,  # type: ignore[attr-defined]
                          limits=default_limits(cpus=1.0, timeout_s=300), latency_samples=2, warmup=0)
    return evaluate(store, ws, request, runner=HostileDockerRunner(image.image_id, client=client))  # type: ignore[attr-defined]


@pytest.mark.docker
@pytest.mark.timeout(1800)
def test_metrics_json_rewritten_inside_the_container_fails_the_run_naming_both_values(store, ws, tmp_path,
                                                                                   evaluator_image, docker_client):
    rec = _hostile_run(store, ws, tmp_path, "rewrite_metrics", evaluator_image, docker_client)
    assert "HOSTILE: rewrote /out/metrics.json" in (rec.log or "")
    assert (rec.status, rec.verdict) == ("failed", "mismatch"), rec.error
    folder = RunFolder(Path(rec.run_dir))
    preds = [json.loads(line)["prediction"] for line in folder.predictions_file.read_text().splitlines()]
    examples = store.datasets.examples("small-test")
    task = {"metric": "macro_f1", "output_kind": "label", "labels": ["negative", "neutral", "positive"]}
    truth = M.macro_f1([p["label"] for p in preds], [ex["label"] for ex in examples], task["labels"])
    assert truth != 100.0
    assert "the host computes" in rec.error and repr(truth) in rec.error and "100.0" in rec.error
    assert rec.metrics == []


@pytest.mark.docker
@pytest.mark.timeout(1800)
@pytest.mark.parametrize("behaviour, word", [("duplicate_id", "duplicate"), ("missing_id", "missing")])
def test_a_duplicate_or_missing_prediction_id_from_the_container_fails_the_run(store, ws, tmp_path, evaluator_image,
                                                                              docker_client, behaviour, word):
    rec = _hostile_run(store, ws, tmp_path, behaviour, evaluator_image, docker_client)
    assert "HOSTILE: rewrote" in (rec.log or "")
    assert (rec.status, rec.verdict) == ("failed", "mismatch"), rec.error
    first = store.datasets.examples("small-test")[0]["id"]
    assert f"{word} prediction ids: small-test/{first}" in rec.error


# --------------------------------------------------------------------------- a run folder the host cannot re-score

def test_bundle_create_refuses_a_run_whose_folder_cannot_be_recomputed_naming_what_is_missing(home, tmp_path):
    from support.sync import make_run, workspace_with_key

    from dynadesk.sync.client.create import create_bundle

    ws, store = workspace_with_key(home)
    runs = [make_run(store, ws.runs_dir, model=f"bow-{i}") for i in range(3)]
    assert create_bundle(ws, store, runs[0]).payload.predictions.count == 2 * 3 * 300  # a real folder signs
    spec = Path(store.evaluations.get(runs[1]).run_dir) / "spec" / "spec.json"
    spec.unlink()
    with pytest.raises(BundleError) as caught:
        create_bundle(ws, store, runs[1])
    assert f"evaluation {runs[1]}: refusing to sign: {spec} is missing" in str(caught.value)
    data = Path(store.evaluations.get(runs[2]).run_dir) / "data" / "d003.jsonl"
    data.unlink()
    with pytest.raises(BundleError, match=f"refusing to sign: dataset 'vader-tweets-test': cannot read the gold "
                                          f"file {data}"):
        create_bundle(ws, store, runs[2])
    assert store.bundles.list() and len(store.bundles.list()) == 1
    store.close()
