"""Measured figures bounded from outside the sandbox, and per-tag results compared (issue 31, items 2 and 3).

Attacks, as code inside the sandbox would try them (the hostile-model stand-in): at exit it rewrites
``metrics.json`` and ``profile.json`` with a throughput 20 times the measured one, or a tenth of the
measured memory. Both were seen stored ``succeeded`` (with the forged figure) on the code before the
host observed the timed windows and the cgroup. (The host's own figures and floors on their own, and the
forged-window model: tests/measure/test_measure_loadgen*.py.)
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from support.eval import LABELS, MEASURED_WINDOW_S, add_test_set, metric, run_request, setup_workspace

from dynadesk.datasets import dataset_digest
from dynadesk.orchestration.evaluate import default_limits, evaluate
from dynadesk.orchestration.folder import RunFolder
from dynadesk.orchestration.recompute import ResultMismatch, verified_rows
from dynadesk.workspace import Workspace

GIB = float(1 << 30)


# --------------------------------------------------------------------------- a real local run

def test_an_honest_local_run_records_what_the_host_observed_and_computes_per_tag_results(home, store, tmp_path):
    setup_workspace(store, tmp_path, sizes=(12,))
    examples = [{"id": f"tagged-{i}", "statement": f"statement {i}", "label": LABELS[i % 3],
                 "tags": ["short"] if i % 2 else ["long", "short"]} for i in range(9)]
    counts = {lab: sum(1 for e in examples if e["label"] == lab) for lab in LABELS}
    store.datasets.add("tagged-test", "sentiment", "test", examples, dataset_digest(examples), counts)
    rec = evaluate(store, Workspace(home), run_request("tiny", ["set0-test", "tagged-test"], runner="local",
                                                      batch_size=4, latency_samples=4, warmup=0, min_seconds=0.2))
    assert rec.status == "succeeded", rec.error
    bounds = rec.profile["host_bounds"]
    assert bounds["bounded"] == ["latency_p50_ms", "latency_p90_ms", "latency_p99_ms", "throughput",
                                 "throughput_batched", "memory"]
    assert {(t["dataset"], t["metric"]) for t in bounds["timed"]} >= {(s, m) for s in ("set0-test", "tagged-test")
                                                                      for m in ("throughput", "throughput_batched")}
    for row in bounds["timed"]:
        assert row["claimed"] == row["host"] == metric(rec, row["metric"], row["dataset"])
    assert bounds["memory"]["source"].startswith("process tree") and bounds["memory"]["anon_peak_bytes"] > 50 << 20
    assert metric(rec, "memory") * GIB >= bounds["memory_floor_bytes"]

    tags = rec.profile["tags"]
    assert set(tags) == {"set0-test", "tagged-test"} and tags["set0-test"] == {}
    assert tags["tagged-test"]["short"]["n"] == 9.0 and tags["tagged-test"]["long"]["n"] == 5.0
    folder = RunFolder(Path(rec.run_dir))
    worker = json.loads(folder.read_out("metrics.json"))
    assert "tags" not in worker and not [r for r in worker["values"] if r["deterministic"]]  # the worker has no gold
    args = (folder.spec_file, folder.data_dir, folder.predictions_file)
    host = verified_rows(*args, worker["values"])
    assert host.tags == tags and host.notes == rec.profile["notes"]
    honest = metric(rec, "macro_f1", "tagged-test")
    forged = [*worker["values"], {"dataset": "tagged-test", "metric": "macro_f1", "value": 100.0, "unit": "%",
                                  "deterministic": True}]
    with pytest.raises(ResultMismatch) as caught:
        verified_rows(*args, forged)
    assert caught.value.verdict == "mismatch"
    assert f"metric 'macro_f1' on 'tagged-test': the host computes {honest!r}" in str(caught.value)
    assert "the worker reported 100.0" in str(caught.value) and "reports none" in str(caught.value)


# --------------------------------------------------------------------------- the sandbox's own rewrite (Docker)


@pytest.mark.docker
@pytest.mark.timeout(1800)
@pytest.mark.parametrize("behaviour, field", [("inflate_throughput", "throughput"), ("shrink_memory", "memory")])
def test_a_forged_measured_figure_from_inside_the_container_fails_the_run(home, store, tmp_path, evaluator_image,
                                                                         docker_client, behaviour, field):
    from support.hostile_models import HostileDockerRunner, make_hostile_model

    from dynadesk.models.registry import register_model

    add_test_set(store, "small-test", 6, seed=7, perturbed=False)
    register_model(store, make_hostile_model(tmp_path / behaviour, behaviour), "sentiment", name=behaviour)
    request = run_request(behaviour, ["small-test"], runner="docker", image=evaluator_image.image_id,
                          limits=default_limits(cpus=1.0, timeout_s=300), latency_samples=2, warmup=0,
                          min_seconds=MEASURED_WINDOW_S)
    rec = evaluate(store, Workspace(home), request,
                   runner=HostileDockerRunner(evaluator_image.image_id, client=docker_client))
    assert "HOSTILE: rewrote the measured figures" in (rec.log or "")
    assert (rec.status, rec.verdict) == ("failed", "out_of_bounds"), rec.error
    assert f"measured '{field}'" in rec.error and "the worker reports" in rec.error
    assert ("the host measured" if field == "throughput" else "cgroup v") in rec.error
    assert rec.metrics == []
