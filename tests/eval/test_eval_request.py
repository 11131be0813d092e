"""Typed runs without a worker: the request round trip, checked status transitions, listing without logs,
the board's run selection by purpose and coverage, the run folder's stray detection and bounded output."""

from __future__ import annotations

import os
import time
from pathlib import Path

import pytest

from dynadesk.errors import ConfigError, RunFolderError, RunStateError
from dynadesk.orchestration.folder import RunFolder, read_no_follow
from dynadesk.orchestration.output import MAX_LOG_BYTES, WorkerOutput
from dynadesk.orchestration.request import RunRequest, RunSettings, default_limits
from dynadesk.store.evaluations import MetricValue, RunChange, RunSetup


def test_a_request_round_trips_and_refuses_what_it_does_not_understand():
    request = RunRequest(model="m", datasets=("a-test", "b-test"), runner="local",
                         limits=default_limits(cpus=1.5, gpus="0,1", out_bytes=1 << 20),
                         settings=RunSettings(batch_size=4, seed=7, latency_samples=3, warmup=0), purpose="audit")
    assert RunRequest.from_dict(request.to_dict()) == request
    assert request.device == "cuda" and request.threads == 2
    with pytest.raises(ConfigError, match="unknown field.*colour"):
        RunRequest.from_dict({**request.to_dict(), "colour": "red"})
    with pytest.raises(ConfigError, match="limits.cpus"):
        RunRequest.from_dict({**request.to_dict(), "limits": {**request.limits.to_dict(), "cpus": 0}})
    with pytest.raises(ConfigError, match="settings.batch_size"):
        RunSettings(batch_size=0)
    with pytest.raises(ConfigError, match="unknown runner 'cloud'"):
        RunRequest(model="m", runner="cloud")
    with pytest.raises(ConfigError, match="purpose 'board'"):
        RunRequest(model="m", purpose="board")
    with pytest.raises(ConfigError, match="must be an object"):
        RunRequest.from_dict(["m"])


def _model(store, name: str = "m") -> int:
    if not store.models.exists(name):
        store.models.add(name, "sentiment", "majority", f"/models/{name}", f"sha256:{name}", {"task": "sentiment"})
    return int(store.models.get(name).id)


def test_status_changes_follow_the_allowed_transitions(store):
    runs = store.evaluations
    run = runs.create(_model(store), "sentiment", runner="local", sandboxed=False, datasets=["d"])
    assert runs.get(run).status == "queued"
    with pytest.raises(RunStateError, match="'queued'; it cannot become 'succeeded'"):
        runs.transition(run, "succeeded")
    runs.transition(run, "running")
    runs.transition(run, "interrupted", RunChange(verdict="interrupted"))
    runs.transition(run, "running")  # resume
    runs.set_metrics(run, [MetricValue("", "perf", 1.0, "score", True)], RunChange(verdict="ok"), status="succeeded")
    for status in ("running", "failed", "queued"):
        with pytest.raises(RunStateError, match="'succeeded'; it cannot become"):
            runs.transition(run, status)
    with pytest.raises(RunStateError, match="unknown run status"):
        runs.transition(run, "done")
    with pytest.raises(RunStateError):
        runs.create(_model(store), "sentiment", runner="local", sandboxed=False, datasets=["d"], status="succeeded")
    rec = runs.get(run)
    assert (rec.status, rec.verdict, [m.metric for m in rec.metrics]) == ("succeeded", "ok", ["perf"])


def test_listing_runs_leaves_the_logs_in_the_database(store):
    runs = store.evaluations
    big = "line of worker output\n" * 40_000  # ~0.9 MiB, as a flooding run stores
    ids = []
    for _ in range(3):
        run = runs.create(_model(store), "sentiment", runner="local", sandboxed=False, datasets=["d"], status="running")
        runs.transition(run, "failed", RunChange(verdict="error", error="boom", log=big))
        runs.update(run, RunChange(profile={"x": 1}))
        ids.append(run)
    listed = runs.list()
    assert [r.id for r in listed] == ids[::-1]
    assert all(r.log == "" and r.profile == {} and r.error == "boom" for r in listed)
    assert runs.log(ids[0]) == big and runs.get(ids[0]).log == big


def _succeeded(store, model: str, datasets: list[str], perf: float, purpose: str = "evaluation") -> int:
    request = RunRequest(model=model, datasets=tuple(datasets), runner="local", purpose=purpose)
    run = store.evaluations.create(_model(store, model), "sentiment", RunSetup(request=request.to_dict()),
                                   runner="local", sandboxed=False, datasets=datasets, status="running")
    values = [MetricValue(d, "perf", perf, "score", True) for d in datasets]
    store.evaluations.set_metrics(run, values, RunChange(verdict="ok"), status="succeeded")
    return run


def test_the_board_takes_each_models_latest_complete_evaluation(store):
    both = ["a-test", "b-test"]
    complete = _succeeded(store, "m1", both, 60.0)
    _succeeded(store, "m1", ["a-test"], 99.0)  # newer, on fewer datasets: must not replace the complete run
    _succeeded(store, "m1", both, 98.0, purpose="audit")  # an auditor's re-run: never a board entry
    _succeeded(store, "m1", both, 97.0, purpose="bench")
    older = _succeeded(store, "m2", both, 50.0)
    newer = _succeeded(store, "m2", both, 55.0)
    partial_only = _succeeded(store, "m3", ["b-test"], 40.0)  # no complete run: kept, on what it covers
    _succeeded(store, "m4", both, 30.0, purpose="preflight")  # only non-evaluation runs: not on the board
    failed = store.evaluations.create(_model(store, "m2"), "sentiment", runner="local", sandboxed=False, datasets=both,
                                      status="running")
    store.evaluations.transition(failed, "failed", RunChange(verdict="error"))
    chosen = {r.model_name: r.id for r in store.evaluations.board_runs("sentiment", both)}
    assert chosen == {"m1": complete, "m2": newer, "m3": partial_only} and older not in chosen.values()


def test_the_leaderboard_uses_the_board_runs(store):
    from dynadesk.scoring.leaderboard import build_leaderboard

    both = ["a-test", "b-test"]
    for model, perf in (("m1", 60.0), ("m2", 70.0)):
        run = _succeeded(store, model, both, perf)
        store.evaluations.set_metrics(run, [MetricValue(d, m, v, u, m == "perf" or m in ("robustness", "fairness"))
                                            for d in both for m, v, u in (("perf", perf, "score"),
                                                                          ("robustness", 50.0, "score"),
                                                                          ("fairness", 50.0, "score"))]
                                      + [MetricValue("", "throughput", 100.0, "examples/s", False),
                                         MetricValue("", "memory", 1.0, "GiB", False)])
    audit = _succeeded(store, "m1", both, 100.0, purpose="audit")
    store.evaluations.set_metrics(audit, [MetricValue(d, "perf", 100.0, "score", True) for d in both])
    board = build_leaderboard(store, "sentiment")
    perf = {r.model: r.values["perf"] for r in board.rows}
    assert perf == {"m1": pytest.approx(60.0), "m2": pytest.approx(70.0)}  # the audit re-run's 100 is not on it


def test_run_folder_names_links_and_foreign_files_and_removes_only_them(tmp_path):
    victim = tmp_path / "victim.txt"
    victim.write_text("keep me")
    folder = RunFolder(tmp_path / "run")
    folder.create()
    (folder.out_dir / "metrics.json").write_text("{}")
    (folder.out_dir / "parts").mkdir()
    (folder.out_dir / "parts" / "d000.jsonl").write_text("")
    (folder.out_dir / "evil").symlink_to(victim)
    (folder.out_dir / "parts" / "d001.jsonl").symlink_to(victim)
    (folder.out_dir / "notes.txt").write_text("?")
    os.mkfifo(folder.out_dir / "pipe")
    assert folder.strays() == ["evil", "notes.txt", "parts/d001.jsonl", "pipe"]
    with pytest.raises(RunFolderError, match="regular file"):
        folder.read_out("evil")
    with pytest.raises(RunFolderError, match="not a regular file"):
        read_no_follow(folder.out_dir / "pipe", 10)
    assert folder.remove_strays() == ["evil", "notes.txt", "parts/d001.jsonl", "pipe"]
    assert folder.strays() == [] and victim.read_text() == "keep me"
    assert (folder.out_dir / "metrics.json").exists() and (folder.out_dir / "parts" / "d000.jsonl").exists()
    (folder.spec_dir / "spec.json").symlink_to(victim)
    with pytest.raises(RunFolderError, match="spec/spec.json"):
        folder.check_inputs()


def test_output_without_newlines_is_handled_in_linear_time_and_the_tail_is_kept():
    out = WorkerOutput(progress=None)
    chunk = b"y" * (64 << 10)
    start = time.perf_counter()
    out.feed([chunk] * 1024 + [b"\nlast words of the worker\n"])  # 64 MiB on one line, then a last line
    seconds = time.perf_counter() - start
    text = out.text()
    assert seconds < 5, f"{seconds:.1f} s for 64 MiB"
    assert len(text) < 2 * MAX_LOG_BYTES
    assert "line cut" in text and text.rstrip().endswith("last words of the worker")


def test_a_flood_of_lines_keeps_the_head_and_the_tail():
    out = WorkerOutput(progress=None)
    out.feed(f"line {i}\n".encode() for i in range(1_500_000))  # ~13 MiB of short lines
    lines = out.text().splitlines()
    assert lines[0] == "line 0" and lines[-1] == "line 1499999"
    assert any("log truncated" in line for line in lines)
    assert len("\n".join(lines)) < MAX_LOG_BYTES + (1 << 20)


def test_the_watched_out_limit_counts_links_as_themselves(tmp_path):
    big = tmp_path / "big.bin"
    big.write_bytes(b"0" * (1 << 20))
    folder = RunFolder(tmp_path / "run")
    folder.create()
    (folder.out_dir / "link").symlink_to(big)
    (folder.out_dir / "small").write_bytes(b"1" * 100)
    assert folder.out_bytes() < 1000
    assert Path(folder.root / "run.log") == folder.log_file


def test_a_run_stored_before_requests_is_replayed_from_its_flat_settings(tmp_path):
    """Runs recorded before requests were stored get theirs from the store's migration (m005_run_record), built from
    their flat settings as ``legacy_request`` reads them; one whose settings lack a part cannot be replayed."""
    from test_eval_run_record import old_workspace

    from dynadesk.orchestration.evaluate import request_of
    from dynadesk.orchestration.request import legacy_request

    store = old_workspace(tmp_path)
    try:
        flat = store.evaluations.get(4)  # recorded with flat settings only, request '{}'
        request = request_of(flat)
        assert (request.model, request.datasets, request.runner, request.image) == ("bow-a", ("d-test",), "docker",
                                                                                     "dynadesk-evaluator:old")
        assert request.settings == RunSettings(batch_size=32, seed=13, latency_samples=64, warmup=8)
        assert request.limits.memory_bytes == 4 << 30 and request.limits.out_bytes == default_limits().out_bytes
        assert request == legacy_request("bow-a", ["d-test"], "docker", {
            "batch_size": 32, "seed": 13, "latency_samples": 64, "warmup": 8, "image": "dynadesk-evaluator:old",
            "limits": request.limits.to_dict()})
        with pytest.raises(ConfigError, match="run 5 was recorded without a complete request"):
            request_of(store.evaluations.get(5))  # its settings had no limits
    finally:
        store.close()
