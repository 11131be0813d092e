"""Evaluation with the LocalRunner: stored metrics and profile, determinism, cancel, Ctrl-C, resume.

Real tiny transformers model, real worker subprocess, real SQLite workspace.
"""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest
from support.eval import add_test_set, deterministic_metrics, metric, predictions_bytes, run_request, setup_workspace

from dynadesk.cancel import CancelToken
from dynadesk.errors import ConfigError, EvaluationError
from dynadesk.orchestration.evaluate import evaluate, recover_stale, resume
from dynadesk.store.evaluations import RunChange
from dynadesk.workspace import Workspace


@pytest.fixture
def ws(home, store, tmp_path):
    setup_workspace(store, tmp_path)
    return Workspace(home)


def test_local_run_stores_metrics_profile_environment(store, ws):
    events = []
    # windows of 0.1 s: this test judges what the windows hold (each cycles its sample until then)
    rec = evaluate(store, ws, run_request("tiny", runner="local", latency_samples=12, warmup=2, min_seconds=0.1),
                   progress=events.append)
    assert rec.status == "succeeded", rec.error
    assert rec.runner == "local" and rec.sandboxed is False
    for ds in ("set0-test", "set1-test", ""):
        for name in ("perf", "macro_f1", "robustness", "fairness"):
            assert 0.0 <= metric(rec, name, ds) <= 100.0
    assert metric(rec, "perf") == pytest.approx((metric(rec, "perf", "set0-test") * 1
                                                 + metric(rec, "perf", "set1-test"))
                                                / 2)
    for name in ("throughput", "throughput_batched", "latency_p50_ms", "memory"):
        assert metric(rec, name) > 0
    assert metric(rec, "latency_p50_ms") <= metric(rec, "latency_p90_ms") <= metric(rec, "latency_p99_ms")
    units = {m.metric: m.unit for m in rec.metrics}
    assert units["throughput"] == "examples/s" and units["latency_p90_ms"] == "ms" and units["memory"] == "GiB"
    # 3 timed windows on each of the 2 test sets, each asking its whole sample (12 batch-1 queries asked; fewer
    # strata where the warm-up read the model slow: a loaded machine) unless cut short at 2 s
    windows = [t for d in rec.profile["measurement"]["datasets"].values() for t in d["batch1"]["trials"]]
    assert len(windows) == 3 * 2 and all(t["queries"] >= len(t["sample"]) or t["short"] for t in windows)
    assert {d["batch1"]["protocol"]["asked_per_window"] for d in rec.profile["measurement"]["datasets"].values()} \
        == {12}
    assert rec.profile["latency"]["samples"] >= 3 * 2 and rec.profile["latency"]["warmup"] == 2
    assert "nearest-rank" in rec.profile["latency"]["method"]
    assert rec.profile["throughput"]["batch_size"] == 1
    assert rec.profile["memory"]["rss_peak_bytes"] > 50 << 20
    env = rec.environment
    assert env["libraries"]["torch"].startswith("2.13.0") and env["deterministic"]["torch_deterministic_algorithms"]
    # threads from the cores free when the worker started, capped by the run's CPU limit (issue 50); recorded
    policy = env["thread_policy"]
    assert env["threads"] == policy["threads"] <= rec.worker.threads and policy["chosen_by"] in ("measured",
                                                                                               "environment")
    assert policy["wait_policy"] in ("default", "PASSIVE", "ACTIVE") and policy["busy_cores"] >= 0
    # ... and chosen again once torch had loaded (the start's one sample is kept beside)
    assert policy["at_start"]["wait_policy"] == policy["wait_policy"] and policy["at_start"]["threads"] >= 1
    assert env["gpu"]["nvml"]  # "ok" on a GPU machine, else the recorded reason NVML is missing
    pred_file = Path(rec.run_dir) / "out" / "predictions.jsonl"
    rows = [json.loads(line) for line in pred_file.read_text().splitlines()]
    assert len(rows) == 3 * (24 + 16)  # each test set plus its two perturbation sets
    assert set(rows[0]["prediction"]["probs"]) == {"negative", "neutral", "positive"}
    assert rec.predictions_digest.startswith("sha256:")
    overall = [e for e in events if e.phase == "predict"]
    assert overall[-1].done == overall[-1].total == 120
    assert "model 'tiny' loaded" in rec.log


def test_two_runs_give_byte_identical_predictions(store, ws):
    a = evaluate(store, ws, run_request("tiny", ["set1-test"], runner="local", latency_samples=4, warmup=0))
    b = evaluate(store, ws, run_request("tiny", ["set1-test"], runner="local", latency_samples=4, warmup=0))
    assert a.status == b.status == "succeeded"
    assert predictions_bytes(a) == predictions_bytes(b)
    assert a.predictions_digest == b.predictions_digest
    assert deterministic_metrics(a) == deterministic_metrics(b)


def test_cancel_then_resume_finishes_only_what_is_missing(store, ws):
    # a large last dataset, so the work left after the cancel takes far longer than the cancel does
    add_test_set(store, "set2-test", 600, seed=2)
    cancel = CancelToken()

    def progress(event):
        # "saved" comes after the dataset's part and marker are on disk, so cancelling here cannot race them
        if event.phase == "saved" and event.dataset == "set0-test~case":
            cancel.cancel()

    rec = evaluate(store, ws, run_request("tiny", runner="local", batch_size=8, latency_samples=4, warmup=0),
                   progress=progress, cancel=cancel)
    assert rec.status == "cancelled" and rec.verdict == "cancelled"
    parts = Path(rec.run_dir) / "out" / "parts"
    finished = {json.loads(p.read_text())["dataset"] for p in parts.glob("*.done.json")}
    assert {"set0-test", "set0-test~case"} <= finished and "set2-test~gender_words" not in finished
    assert not rec.metrics
    events = []
    done = resume(store, ws, rec.id, progress=events.append)
    assert done.id == rec.id and done.status == "succeeded", done.error
    assert {e.dataset for e in events if e.resumed} == finished  # only the missing ones were rerun
    assert set(done.profile["resumed_datasets"]) == finished
    fresh = evaluate(store, ws, run_request("tiny", runner="local", batch_size=8, latency_samples=4, warmup=0))
    assert predictions_bytes(done) == predictions_bytes(fresh)
    with pytest.raises(EvaluationError, match="already succeeded"):
        resume(store, ws, rec.id)


def test_ctrl_c_marks_interrupted_and_kills_worker(store, ws):
    def progress(event):
        if event.phase == "predict":
            raise KeyboardInterrupt  # what Ctrl-C raises in the thread that runs the evaluation

    with pytest.raises(KeyboardInterrupt):
        evaluate(store, ws, run_request("tiny", runner="local", batch_size=4), progress=progress)
    rec = store.evaluations.list(limit=1)[0]
    assert rec.status == "interrupted" and "--resume" in rec.error
    assert not _worker_alive(rec.run_dir)
    assert resume(store, ws, rec.id, progress=None).status == "succeeded"


def _worker_alive(run_dir: str) -> bool:
    """Is any process still running the worker for this run folder?"""
    import psutil

    for proc in psutil.process_iter(["cmdline"]):
        if any(run_dir in part for part in proc.info["cmdline"] or []):
            return True
    return False


def test_sigterm_to_the_cli_marks_the_run_interrupted_and_stops_the_worker(store, ws, home):
    import signal
    import subprocess
    import sys
    import time

    add_test_set(store, "set2-test", 3000, seed=2)  # long enough to be caught mid-run
    proc = subprocess.Popen([sys.executable, "-c", "from dynadesk.cli import main; main()", "--home", str(home),
                             "eval", "tiny", "--dataset", "set2-test", "--runner", "local", "--batch-size", "1"],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    deadline = time.monotonic() + 300
    run = None
    while time.monotonic() < deadline and proc.poll() is None:
        runs = store.evaluations.list(limit=1)
        if runs and runs[0].status == "running" and runs[0].run_dir and _worker_alive(runs[0].run_dir):
            run = runs[0]
            break
        time.sleep(0.2)
    assert run is not None, "the evaluation never got going: " + (proc.stderr.read() if proc.poll() is not None else "")
    proc.send_signal(signal.SIGTERM)
    _, err = proc.communicate(timeout=120)
    assert proc.returncode == 130 and ("Aborted" in err or "Interrupted" in err)
    rec = store.evaluations.get(run.id)
    assert rec.status == "interrupted" and "--resume" in rec.error
    assert not _worker_alive(rec.run_dir)


def test_crashed_run_is_marked_interrupted(store, ws):
    model = store.models.get("tiny")
    run_id = store.evaluations.create(model.id, "sentiment", runner="local", sandboxed=False,
                                      datasets=["set0-test"], status="running")
    import socket

    store.evaluations.update(run_id, RunChange(pid=2 ** 22 + 12345, host=socket.gethostname()))  # no such process
    other = store.evaluations.create(model.id, "sentiment", runner="local", sandboxed=False,
                                     datasets=["set0-test"], status="running")
    store.evaluations.update(other, RunChange(pid=os.getpid(), host=socket.gethostname()))  # alive: left alone
    assert recover_stale(store) == [run_id]
    assert store.evaluations.get(run_id).status == "interrupted"
    assert store.evaluations.get(other).status == "running"


def test_bad_inputs_get_clear_errors(store, ws, tmp_path):
    with pytest.raises(ConfigError, match="perturbation set of 'set0-test'"):
        evaluate(store, ws, run_request("tiny", ["set0-test~case"], runner="local"))
    with pytest.raises(ConfigError, match="unknown runner"):
        evaluate(store, ws, run_request("tiny", runner="cloud"))
    with pytest.raises(ConfigError, match="batch_size"):
        evaluate(store, ws, run_request("tiny", runner="local", batch_size=0))


def test_tampered_data_file_fails_with_named_dataset(store, ws):
    cancel = CancelToken()
    cancel.cancel()  # stop at once: we only want the prepared run folder
    rec = evaluate(store, ws, run_request("tiny", ["set1-test"], runner="local"), cancel=cancel)
    data = Path(rec.run_dir) / "data" / "d000.jsonl"
    data.write_text(data.read_text().replace("set1-test-0", "set1-test-X"))
    failed = resume(store, ws, rec.id)
    assert failed.status == "failed" and failed.verdict == "error"
    assert "dataset 'set1-test'" in failed.error and "sha256" in failed.error


def test_pickle_model_is_refused_outside_the_sandbox(store, ws, tmp_path):
    from support.tiny_models import make_tiny_classifier

    from dynadesk.models.registry import register_model

    folder = make_tiny_classifier(tmp_path / "pkl", ["negative", "neutral", "positive"], pickle_weights=True)
    register_model(store, folder, "sentiment", name="pkl", allow_pickle=True)
    with pytest.raises(EvaluationError, match="only the Docker sandbox"):
        evaluate(store, ws, run_request("pkl", runner="local"))
    assert not [r for r in store.evaluations.list() if r.model_name == "pkl"]


def test_cli_eval_and_runs_listing(store, ws, home):
    import subprocess
    import sys

    def cli(*args):
        return subprocess.run([sys.executable, "-c", "from dynadesk.cli import main; main()", "--home", str(home),
                               *args], capture_output=True, text=True)

    proc = cli("eval", "tiny", "--dataset", "set1-test", "--runner", "local", "--batch-size", "4", "--json")
    assert proc.returncode == 0, proc.stderr
    run = json.loads(proc.stdout)
    assert run["status"] == "succeeded" and run["worker"]["batch_size"] == 4
    assert run["request"]["settings"]["batch_size"] == 4
    assert {m["metric"] for m in run["metrics"]} >= {"perf", "macro_f1", "robustness", "fairness", "throughput",
                                                     "throughput_batched", "latency_p99_ms", "memory"}
    listed = json.loads(cli("runs", "list", "--json").stdout)
    assert [r["id"] for r in listed] == [run["id"]] and "log" not in listed[0]
    shown = cli("runs", "show", str(run["id"]))
    assert shown.returncode == 0 and "NOT sandboxed" in shown.stdout and "latency_p50_ms" in shown.stdout
    table = cli("runs", "list").stdout
    assert "succeeded" in table and "tiny" in table
    bad = cli("eval", "nope", "--runner", "local")
    assert bad.returncode == 1 and "no model named 'nope'" in bad.stderr
    missing = cli("runs", "show", "999")
    assert missing.returncode == 1 and "no evaluation run with id 999" in missing.stderr


def test_runs_compare_cli_finds_identical_runs_and_a_changed_prediction(store, ws, home):
    import subprocess
    import sys

    def cli(*args):
        return subprocess.run([sys.executable, "-c", "from dynadesk.cli import main; main()", "--home", str(home),
                               *args], capture_output=True, text=True)

    a = evaluate(store, ws, run_request("tiny", ["set1-test"], runner="local", latency_samples=4, warmup=0))
    b = evaluate(store, ws, run_request("tiny", ["set1-test"], runner="local", latency_samples=4, warmup=0))
    same = cli("runs", "compare", str(a.id), str(b.id))
    assert same.returncode == 0, same.stderr
    assert "deterministic fields identical; OK" in same.stdout and "predictions.merkle_root" in same.stdout
    report = json.loads(cli("runs", "compare", str(a.id), str(b.id), "--json").stdout)
    assert report["ok"] and {c["field"] for c in report["checks"]} >= {"predictions.digest", "metrics[set1-test].perf"}

    pred_file = Path(b.run_dir) / "out" / "predictions.jsonl"
    rows = [json.loads(line) for line in pred_file.read_text().splitlines()]
    flipped = next(lab for lab in ("negative", "neutral", "positive") if lab != rows[0]["prediction"]["label"])
    rows[0]["prediction"]["label"] = flipped
    pred_file.write_text("".join(json.dumps(r) + "\n" for r in rows))
    differs = cli("runs", "compare", str(a.id), str(b.id), "--json")
    assert differs.returncode == 1
    failed = json.loads(differs.stdout)["failures"]
    assert "predictions.digest" in failed and "predictions.merkle_root" in failed
    unknown = cli("runs", "compare", str(a.id), "999")
    assert unknown.returncode == 1 and "no evaluation run with id 999" in unknown.stderr


@pytest.mark.parametrize("kind", ["bag-of-words", "majority"])
def test_every_demo_model_kind_evaluates(store, home, tmp_path, kind):
    """The demo's non-transformers models go through the same worker (a bag-of-words adapter once
    had an ``encode`` of its own meaning that the token sort took for the tokenizer's: IndexError)."""
    from support.eval import LABELS, sentences

    from dynadesk.models.bow import BowTraining, train_bag_of_words, write_majority
    from dynadesk.models.registry import register_model

    texts = sentences(30, seed=3)
    train = [{"statement": t, "label": LABELS[i % 3]} for i, t in enumerate(texts)]
    folder = tmp_path / "models" / kind
    if kind == "bag-of-words":
        train_bag_of_words(folder, "sentiment", list(LABELS), ["statement"], train,
                           BowTraining(dim=8, epochs=3, seed=1))
    else:
        write_majority(folder, "sentiment", list(LABELS), ["statement"], [ex["label"] for ex in train])
    register_model(store, folder, "sentiment", name=kind)
    add_test_set(store, "set0-test", 20, seed=0)
    rec = evaluate(store, Workspace(home), run_request(kind, runner="local", latency_samples=4, warmup=1))
    assert rec.status == "succeeded", rec.error
    assert 0.0 <= metric(rec, "macro_f1", "set0-test") <= 100.0
    assert len(predictions_bytes(rec).splitlines()) == 3 * 20
    # the host's load generator tells the worker what it spent issuing the windows, and the worker's noise
    # account leaves it out (it flagged every fast model's run noisy and retried each measurement twice)
    timed = json.loads((Path(rec.run_dir) / "out" / "profile.json").read_text())["measurement"]["datasets"]
    for mode in ("batch1", "batched"):
        noise = timed["set0-test"][mode]["noise"]
        assert noise["harness_cpu_seconds"] > 0, noise


@pytest.mark.parametrize("fails_at", ["start", "predict"])
def test_a_progress_callback_that_raises_never_leaves_the_run_running(store, ws, fails_at):
    """A display that breaks (a closed terminal, a full disk under the log) stops the run; the run is recorded as
    failed, never left 'running' for recover_stale to guess about."""

    class DisplayBroke(RuntimeError):
        pass

    def progress(event):
        if event.phase == fails_at:
            raise DisplayBroke(f"the display broke at {fails_at}")

    with pytest.raises(DisplayBroke):
        evaluate(store, ws, run_request("tiny", runner="local", latency_samples=4, warmup=0), progress=progress)
    (rec,) = store.evaluations.list()
    assert rec.status == "failed" and f"the display broke at {fails_at}" in rec.error, (rec.status, rec.error)
