"""Ctrl-C during `dynadesk eval` says what was kept and the command that finishes it (not a bare "Aborted.")."""

from __future__ import annotations

import signal
import subprocess
import sys
import time

from support.eval import add_test_set, setup_workspace
from test_eval_local import _worker_alive


def test_ctrl_c_names_the_kept_run_and_the_resume_command(home, store, tmp_path):
    setup_workspace(store, tmp_path)
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
    proc.send_signal(signal.SIGINT)
    _, err = proc.communicate(timeout=120)
    assert proc.returncode == 130
    assert "Aborted." not in err
    assert f"run {run.id} is kept as 'interrupted'" in err and run.run_dir in err
    assert f"'dynadesk eval --resume {run.id}'" in err
    assert store.evaluations.get(run.id).status == "interrupted"
