"""Measured figures bounded from outside the sandbox, and per-tag results compared (issue 31, items 2 and 3).

Attacks, as code inside the sandbox would try them (the hostile-model stand-in): at exit it rewrites
``metrics.json`` and ``profile.json`` with a throughput 20 times the measured one, or a tenth of the
measured memory. Both were seen stored ``succeeded`` (with the forged figure) on the code before the
host observed the timed windows and the cgroup. The host's bounds are also tested on their own.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from support.eval import LABELS, MEASURED_WINDOW_S, add_test_set, metric, run_request, setup_workspace

from dynadesk.datasets import dataset_digest
from dynadesk.orchestration.bounds import (
    BOUND_VERDICT,
    CALL_GAP_S,
    LOOP_SLACK,
    MEMORY_GAP,
    MEMORY_GAP_BYTES,
    WINDOW_SLACK_S,
    BoundExceeded,
    check_measured,
)
from dynadesk.orchestration.evaluate import default_limits, evaluate
from dynadesk.orchestration.folder import RunFolder
from dynadesk.orchestration.observe import host_windows
from dynadesk.orchestration.recompute import ResultMismatch, verified_rows
from dynadesk.workspace import Workspace

GIB = float(1 << 30)


def _windows(set_name: str, queries: int, seconds: float, attempts: int = 1) -> list[dict]:
    return [{"set": set_name, "mode": mode, "attempt": a, "trial": t, "queries": queries, "host_seconds": seconds}
            for mode in ("batch1", "batched") for a in range(attempts) for t in range(3)]


def _rows(tput: float, batched: float, memory_gib: float) -> list[dict]:
    return [{"dataset": "s", "metric": "throughput", "value": tput}, {"dataset": "", "metric": "throughput",
                                                                       "value": tput},
            {"dataset": "s", "metric": "throughput_batched", "value": batched},
            {"dataset": "", "metric": "throughput_batched", "value": batched},
            {"dataset": "", "metric": "memory", "value": memory_gib}]


def test_host_windows_pair_each_start_with_its_end_and_name_what_does_not_pair():
    marks = [(10.0, {"edge": "start", "set": "s", "mode": "batch1", "attempt": 0, "trial": 0}),
             (10.6, {"edge": "end", "set": "s", "mode": "batch1", "attempt": 0, "trial": 0, "queries": 30}),
             (11.0, {"edge": "end", "set": "s", "mode": "batch1", "attempt": 0, "trial": 1, "queries": 30}),
             (12.0, {"edge": "start", "set": "s", "mode": "batched", "attempt": 0, "trial": 0}),
             (13.0, {"nonsense": True})]
    windows, problems = host_windows(marks)
    assert windows == [{"set": "s", "mode": "batch1", "attempt": 0, "trial": 0, "queries": 30,
                        "host_seconds": pytest.approx(0.6)}]
    assert len(problems) == 3 and any("without its start" in p for p in problems)
    assert any("never ended" in p for p in problems) and any("unreadable" in p for p in problems)


def test_the_host_stamps_window_edges_as_it_reads_them_and_keeps_them_out_of_the_log():
    import time

    from dynadesk.evaluator.schema import WINDOW_PREFIX
    from dynadesk.orchestration.output import WorkerOutput

    out = WorkerOutput(None)
    edge = {"set": "s", "mode": "batch1", "attempt": 0, "trial": 0}
    out.feed_chunk(b"loading\n" + (WINDOW_PREFIX + json.dumps({**edge, "edge": "start"}) + "\n").encode())
    time.sleep(0.3)  # the window, as the host's clock sees it
    out.feed_chunk((WINDOW_PREFIX + json.dumps({**edge, "edge": "end", "queries": 7})).encode())
    out.feed_chunk(b"\n" + (WINDOW_PREFIX + "not json\n").encode())
    out.flush()
    assert out.text() == "loading\n" and out.dropped_marks == 1
    windows, problems = host_windows(out.window_marks)
    assert problems == [] and len(windows) == 1 and windows[0]["queries"] == 7
    assert 0.3 <= windows[0]["host_seconds"] < 5  # stamped when the end edge's newline arrived, not when sent


def test_a_throughput_above_the_host_observed_windows_fails_naming_the_field_and_both_values():
    # 100 queries in windows the host saw last 0.6 s: at most 100 / (0.6 - slack - 100 calls' gaps) * (1 + slack)
    allowed = 100 / (0.6 - WINDOW_SLACK_S - 100 * CALL_GAP_S) * (1 + LOOP_SLACK)
    observed = {"windows": _windows("s", 100, 0.6), "memory": {"anon_peak_bytes": 1 << 30, "source": "test"}}
    report = check_measured(_rows(allowed * 0.99, allowed * 0.5, 1.0), observed, ["s"])
    assert report["bounded"] == ["throughput", "throughput_batched", "memory"]
    assert {(t["dataset"], t["metric"]): t["bound"] for t in report["throughput"]}[("s", "throughput")] \
        == pytest.approx(allowed)
    with pytest.raises(BoundExceeded) as caught:
        check_measured(_rows(allowed * 1.01, allowed * 0.5, 1.0), observed, ["s"])
    assert caught.value.verdict == BOUND_VERDICT == "out_of_bounds"
    message = str(caught.value)
    assert "measured 'throughput' on 's'" in message and repr(allowed * 1.01) in message
    assert repr(allowed) in message and "throughput_batched" not in message
    # the median of the last attempt decides: an earlier, slower attempt does not lower the bound
    slow_then_fast = _windows("s", 10, 0.6) + [dict(w, attempt=1) for w in _windows("s", 100, 0.6)]
    check_measured(_rows(allowed * 0.99, allowed * 0.5, 1.0), {**observed, "windows": slow_then_fast}, ["s"])


def test_windows_no_longer_than_the_slack_bound_nothing_and_missing_windows_fail():
    short = {"windows": _windows("s", 100, WINDOW_SLACK_S / 2), "memory": {}}
    report = check_measured(_rows(1e9, 1e9, 1.0), short, ["s"])
    assert all(t["bound"] is None for t in report["throughput"]) and "memory" not in report["bounded"]
    tiny_calls = {"windows": _windows("s", int(0.5 / CALL_GAP_S) + 1, 0.6), "memory": {}}  # microsecond calls
    assert all(t["bound"] is None for t in check_measured(_rows(1e9, 1e9, 1.0), tiny_calls, ["s"])["throughput"])
    with pytest.raises(BoundExceeded, match="'throughput' on 's': the host observed none of its timed windows"):
        check_measured(_rows(1.0, 1.0, 1.0), {"windows": [], "memory": {}}, ["s"])
    with pytest.raises(BoundExceeded, match="no observation"):
        check_measured(_rows(1.0, 1.0, 1.0), None, ["s"])


def test_a_memory_figure_below_the_host_peak_by_more_than_the_gap_fails_naming_both_values():
    peak = 2 << 30
    floor = peak * (1 - MEMORY_GAP) - MEMORY_GAP_BYTES
    observed = {"windows": _windows("s", 100, 0.6), "memory": {"anon_peak_bytes": peak, "source": "cgroup v1 x"}}
    assert check_measured(_rows(1.0, 1.0, floor / GIB * 1.001), observed, ["s"])["memory_floor_bytes"] == floor
    with pytest.raises(BoundExceeded) as caught:
        check_measured(_rows(1.0, 1.0, 0.2), observed, ["s"])
    message = str(caught.value)
    assert "measured 'memory'" in message and "0.2 GiB" in message and repr(floor / GIB) in message
    assert "cgroup v1 x" in message


# --------------------------------------------------------------------------- a real local run

def test_an_honest_local_run_records_what_the_host_observed_and_compares_per_tag_results(home, store, tmp_path):
    setup_workspace(store, tmp_path, sizes=(12,))
    examples = [{"id": f"tagged-{i}", "statement": f"statement {i}", "label": LABELS[i % 3],
                 "tags": ["short"] if i % 2 else ["long", "short"]} for i in range(9)]
    counts = {lab: sum(1 for e in examples if e["label"] == lab) for lab in LABELS}
    store.datasets.add("tagged-test", "sentiment", "test", examples, dataset_digest(examples), counts)
    rec = evaluate(store, Workspace(home), run_request("tiny", ["set0-test", "tagged-test"], runner="local",
                                                      batch_size=4, latency_samples=4, warmup=0, min_seconds=0.2))
    assert rec.status == "succeeded", rec.error
    bounds = rec.profile["host_bounds"]
    assert bounds["bounded"] == ["throughput", "throughput_batched", "memory"]
    assert {(w["set"], w["mode"]) for w in bounds["windows"]} == {(s, m) for s in ("set0-test", "tagged-test")
                                                                   for m in ("batch1", "batched")}
    assert all(w["host_seconds"] >= 0.15 for w in bounds["windows"])  # 0.2 s windows, as the host saw them
    for row in bounds["throughput"]:
        assert row["claimed"] == metric(rec, row["metric"], row["dataset"]) and row["claimed"] <= row["bound"]
    assert bounds["memory"]["source"].startswith("process tree") and bounds["memory"]["anon_peak_bytes"] > 50 << 20
    assert metric(rec, "memory") * GIB >= bounds["memory_floor_bytes"]

    tags = rec.profile["tags"]
    assert set(tags) == {"set0-test", "tagged-test"} and tags["set0-test"] == {}
    assert tags["tagged-test"]["short"]["n"] == 9.0 and tags["tagged-test"]["long"]["n"] == 5.0
    folder = RunFolder(Path(rec.run_dir))
    worker = json.loads(folder.read_out("metrics.json"))
    args = (folder.spec_file, folder.data_dir, folder.predictions_file, worker["values"])
    assert worker["tags"] == tags and verified_rows(*args, worker["tags"])
    forged = json.loads(json.dumps(tags))
    honest = forged["tagged-test"]["long"]["macro_f1"]
    forged["tagged-test"]["long"]["macro_f1"] = 100.0
    with pytest.raises(ResultMismatch) as caught:
        verified_rows(*args, forged)
    assert caught.value.verdict == "mismatch"
    assert f"per-tag 'macro_f1' of tag 'long' on 'tagged-test': the host computes {honest!r}" in str(caught.value)
    assert "the worker reported 100.0" in str(caught.value)
    del forged["tagged-test"]["long"]
    with pytest.raises(ResultMismatch, match="tag 'long' on 'tagged-test': the host computes .* reported nothing"):
        verified_rows(*args, forged)
    with pytest.raises(ResultMismatch, match="no per-tag results \\(metrics.json 'tags' is missing\\)"):
        verified_rows(*args, None)


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
    assert ("allow at most" if field == "throughput" else "cgroup v") in rec.error
    assert rec.metrics == []
