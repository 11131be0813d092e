"""A run killed outright leaves its folders in the system's temporary folder; the next run removes them.

The load generator's socket folder and the sandbox's data folder are removed when a run ends; a process killed
with SIGKILL never gets there (this suite's kill tests left 85 pairs a day), and where the temporary folder is a
tmpfs the data folder holds copies of the run's test sets. Real processes, a real SIGKILL, the real load generator.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import psutil

from dynadesk.orchestration.run_dirs import make_run_dir, sweep_stale_run_dirs

CHILD = """
import json, sys, time
from pathlib import Path
from dynadesk.evaluator.schema import DatasetSpec, Settings, Spec
from dynadesk.orchestration.loadgen import start_loadgen
root = Path(sys.argv[1])
(root / "data").mkdir(parents=True)
(root / "data" / "d000.jsonl").write_text('{"id": "e0", "statement": "a fine film", "label": "a"}\\n')
spec = Spec(task={"inputs": [{"name": "statement"}]}, model={"manifest": {}},
            datasets=[DatasetSpec("s", "d000.jsonl", "0" * 64, 1)], settings=Settings())
(root / "spec").mkdir()
spec.write(root / "spec" / "spec.json")
(root / "out").mkdir()
lg = start_loadgen(root / "spec" / "spec.json", root / "data", root / "out")
lg._stage_data()  # as after the timed windows: the sandbox's data folder holds the set
print(json.dumps([str(lg.dir), str(lg.sandbox_data)]), flush=True)
time.sleep(600)
"""


def _a_run_in_another_process(root: Path) -> tuple[subprocess.Popen, list[Path]]:
    child = subprocess.Popen([sys.executable, "-c", CHILD, str(root)], stdout=subprocess.PIPE, text=True)
    assert child.stdout is not None
    line = child.stdout.readline()
    assert line, "the child run did not start its load generator"
    return child, [Path(p) for p in json.loads(line)]


def test_the_folders_of_a_run_killed_outright_are_removed_by_the_next_run_and_a_live_ones_kept(tmp_path):
    killed, left = _a_run_in_another_process(tmp_path / "killed")
    live, kept = _a_run_in_another_process(tmp_path / "live")
    try:
        assert all(p.is_dir() for p in left + kept) and (left[1] / "d000.jsonl").is_file()
        assert all(str(killed.pid) in p.name for p in left)  # each folder names its maker
        killed.send_signal(signal.SIGKILL)
        killed.wait(timeout=30)
        assert all(p.is_dir() for p in left)  # SIGKILL: nothing of the run cleaned up
        mine = make_run_dir("lg")  # the next run
        try:
            assert not any(p.exists() for p in left), left
            assert all(p.is_dir() for p in kept)  # a run still going keeps its folders
        finally:
            mine.rmdir()
    finally:
        live.kill()
        live.wait(timeout=30)


def test_a_folder_whose_process_id_was_reused_is_stale_and_others_are_left(tmp_path):
    me = os.getpid()
    started = psutil.Process(me).create_time()
    reused = tmp_path / f"dynadesk-data-{me}-abcd1234"  # changed last an hour before this process started
    reused.mkdir()
    (reused / "d000.jsonl").write_text("{}\n")
    os.utime(reused, (started - 3600, started - 3600))
    ours = tmp_path / f"dynadesk-lg-{me}-efgh5678"
    ours.mkdir()
    unknown = tmp_path / "dynadesk-lg-abc-zz"  # not a name this module makes: never touched
    unknown.mkdir()
    a_file = tmp_path / "dynadesk-data-1-x1"
    a_file.write_text("")
    gone = subprocess.run([sys.executable, "-c", "import os; print(os.getpid())"], capture_output=True, text=True)
    dead = tmp_path / f"dynadesk-lg-{gone.stdout.strip()}-ijkl9012"
    dead.mkdir()
    time.sleep(0.1)
    assert sorted(sweep_stale_run_dirs(tmp_path)) == sorted([reused, dead])
    assert ours.is_dir() and unknown.is_dir() and a_file.is_file()
    if os.geteuid() == 0:  # another user's folder is never removed (only root can make one here)
        foreign = tmp_path / f"dynadesk-lg-{gone.stdout.strip()}-mnop3456"
        foreign.mkdir()
        os.chown(foreign, 65534, 65534)
        assert sweep_stale_run_dirs(tmp_path) == [] and foreign.is_dir()
