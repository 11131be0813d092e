"""Noise detection with a real CPU hog beside a real local evaluation (no mocks).

The hog is busy-loop subprocesses started by the test; the evaluation then sees other
processes' CPU time in /proc/stat during its timed windows, retries, and stores the run
as noisy, which ``runs show`` says. Without the hog the same evaluation is clean, unless
something outside the test loaded the machine, which the test then measures itself.
"""

from __future__ import annotations

import os
import subprocess
import sys

import pytest
from click.testing import CliRunner
from support.eval import MEASURED_WINDOW_S, add_test_set, run_request
from support.tiny_models import make_tiny_classifier

from dynadesk.cli import cli
from dynadesk.evaluator import measurement

LABELS = ["negative", "neutral", "positive"]


@pytest.fixture(scope="module")
def bench(tmp_path_factory):
    from dynadesk.models.registry import register_model
    from dynadesk.workspace import Workspace

    tmp = tmp_path_factory.mktemp("noise")
    ws = Workspace(tmp / "ws").ensure()
    store = ws.open_store()
    folder = make_tiny_classifier(tmp / "models" / "tiny", LABELS, task="sentiment")
    register_model(store, folder, "sentiment", name="tiny")
    add_test_set(store, "quiet-test", 24, seed=3, perturbed=False)
    yield ws, store
    store.close()


def _evaluate(ws, store):
    from dynadesk.orchestration.evaluate import evaluate

    rec = evaluate(store, ws, run_request("tiny", ["quiet-test"], batch_size=8, latency_samples=8, warmup=1,
                                               min_seconds=MEASURED_WINDOW_S))
    assert rec.status == "succeeded", rec.error
    return rec


def _show(ws, run_id: int) -> str:
    res = CliRunner().invoke(cli, ["--home", str(ws.home), "runs", "show", str(run_id)])
    assert res.exit_code == 0, res.output
    return res.output


def test_a_run_beside_a_cpu_hog_is_stored_and_shown_as_noisy(bench):
    ws, store = bench
    # two hogs a core, each in its own session, as programs started from other terminals are. Linux's autogroup
    # (kernel.sched_autogroup_enabled=1, the default here) shares the CPU between sessions first: the run's worker
    # has its own session (local_runner.py), so hogs left in the test's session were one group beside it and got
    # one core between them, the worker the other; its figures then matched a quiet run's (batch-1 ~540/s both)
    # and it was rightly not flagged (a clean-clone run failed so; 3 in 8 here). Own sessions: the worker waits
    # for a CPU ~58 % of each window and runs at half its quiet rate, every time.
    hogs = [subprocess.Popen([sys.executable, "-c", "while True: pass"], start_new_session=True)
            for _ in range(2 * (os.cpu_count() or 1))]
    try:
        rec = _evaluate(ws, store)
    finally:
        for hog in hogs:
            hog.kill()
            hog.wait()
    summary = rec.environment["measurement"]  # environment.json: signed into the run's bundle
    assert summary["noisy"] is True, (summary, rec.profile["measurement"]["datasets"])  # what each window saw
    # named by what competed: other processes' cores, or the run's own threads waiting for a CPU (schedstat)
    assert any("other processes used" in m or "waited for a CPU" in m for m in summary["noisy_measurements"]), summary
    per_set = rec.profile["measurement"]["datasets"]["quiet-test"]
    # the hog competes with every window, but which of the two measurements crosses a threshold varies by run
    flagged = [mode for mode in ("batch1", "batched") if per_set[mode]["noisy"]]
    assert flagged, per_set
    m = per_set[flagged[0]]
    assert m["attempts"] > 1 and m["earlier_attempts"][0]  # retried, still noisy
    noise = m["noise"]
    assert noise["others_cores"] > measurement.OTHERS_CORES or \
        noise["run_queue_fraction"] > measurement.RUN_QUEUE_FRACTION
    assert "measurement: NOISY" in _show(ws, rec.id)


def test_the_same_run_without_the_hog_is_not_noisy(bench):
    ws, store = bench
    before = measurement.snapshot()
    rec = _evaluate(ws, store)
    after = measurement.snapshot()  # own_cpu includes the finished worker (a waited-for child)
    outside = measurement.competition([(before, after)], threads=os.cpu_count() or 1)
    background, steal = outside["others_cores"], outside["steal_fraction"]
    summary = rec.environment["measurement"]
    output = _show(ws, rec.id)
    if summary["noisy"]:
        # Without the hog, the evaluator may still see noise from outside this test, and must then blame only
        # what was there: other processes or hypervisor steal that this test measured too, or the trials'
        # own spread (on a shared VM its neighbours slow whole windows without any trace in /proc; seen in
        # CI: "trials spread 44.4%" with 0.006 other cores and 0.07% steal). A reason with nothing behind it
        # is a false alarm and fails.
        sets = rec.profile["measurement"]["datasets"]["quiet-test"]
        for m in summary["noisy_measurements"]:
            which = "batch1" if " batch1:" in m else "batched"
            assert ("other processes used" in m and background > measurement.OTHERS_CORES / 2) or \
                ("steal" in m and steal > measurement.STEAL_FRACTION / 2) or \
                ("spread" in m and sets[which]["spread"] > measurement.SPREAD) or \
                ("waited for a CPU" in m and sets[which]["noise"]["run_queue_fraction"] > measurement.RUN_QUEUE_FRACTION
                 and background > 0), (m, sets[which], background, steal)
    else:
        assert "measurement: clean" in output
        assert rec.profile["measurement"]["datasets"]["quiet-test"]["batch1"]["noise"]["reasons"] == []
    assert "hardware class: " in output and f"{os.cpu_count()} cores" in output
