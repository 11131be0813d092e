"""kill -9 of a real `dynadesk eval` process mid-run: the database stays intact, the run is
marked interrupted (its process is dead), and `--resume` finishes it with the same predictions
as an uninterrupted run."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

from support.eval import deterministic_metrics, predictions_bytes, run_request, setup_workspace

from dynadesk.orchestration.evaluate import evaluate, recover_stale, resume
from dynadesk.workspace import Workspace


def test_kill_9_mid_evaluation_then_resume(home, store, tmp_path):
    ws = Workspace(home)
    setup_workspace(store, tmp_path, sizes=(40, 24))
    proc = subprocess.Popen([sys.executable, "-c", "from dynadesk.cli import main; main()", "--home", str(home),
                             "eval", "tiny", "--runner", "local", "--batch-size", "4"],
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, start_new_session=True)
    deadline = time.monotonic() + 300
    run_dir = None
    while time.monotonic() < deadline:  # wait until the worker has finished at least one dataset part
        runs = store.evaluations.list(limit=1)
        if runs and runs[0].run_dir and list((Path(runs[0].run_dir) / "out" / "parts").glob("*.done.json")):
            run_dir = runs[0].run_dir
            break
        assert proc.poll() is None, "the evaluation ended before it could be killed"
        time.sleep(0.05)
    assert run_dir, "the evaluation never got going"
    os.killpg(proc.pid, signal.SIGKILL)  # the CLI and its worker subprocess, like a power cut
    proc.wait()

    assert store.integrity_check() == "ok"
    run_id = store.evaluations.list(limit=1)[0].id
    assert store.evaluations.get(run_id).status == "running"  # nobody could record anything
    assert recover_stale(store) == [run_id]
    assert store.evaluations.get(run_id).status == "interrupted"
    done = resume(store, ws, run_id)
    assert done.status == "succeeded", done.error
    assert done.profile["resumed_datasets"], "resume reran everything instead of only what was missing"
    fresh = evaluate(store, ws, run_request("tiny", runner="local", batch_size=4))
    assert predictions_bytes(done) == predictions_bytes(fresh)
    assert deterministic_metrics(done) == deterministic_metrics(fresh)
