"""A run killed outright leaves its folders in the system's temporary folder; the next run removes them.

The load generator's socket folder and the sandbox's data folder are removed when a run ends; a process killed
with SIGKILL never gets there (this suite's kill tests left 85 pairs a day), and where the temporary folder is a
tmpfs the data folder holds copies of the run's test sets. Real processes, a real SIGKILL, the real load generator.
"""

from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

import psutil
import pytest

from dynadesk.orchestration.run_dirs import make_run_dir, pid_namespace, sweep_stale_run_dirs

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
    me, ns = os.getpid(), pid_namespace()
    started = psutil.Process(me).create_time()
    reused = tmp_path / f"dynadesk-data-{ns}-{me}-abcd1234"  # changed last an hour before this process started
    reused.mkdir()
    (reused / "d000.jsonl").write_text("{}\n")
    os.utime(reused, (started - 3600, started - 3600))
    ours = tmp_path / f"dynadesk-lg-{ns}-{me}-efgh5678"
    ours.mkdir()
    unknown = tmp_path / "dynadesk-lg-abc-zz"  # not a name this module makes: never touched
    unknown.mkdir()
    a_file = tmp_path / "dynadesk-data-1-x1"
    a_file.write_text("")
    gone = subprocess.run([sys.executable, "-c", "import os; print(os.getpid())"], capture_output=True, text=True)
    dead = tmp_path / f"dynadesk-lg-{ns}-{gone.stdout.strip()}-ijkl9012"
    dead.mkdir()
    elsewhere = tmp_path / f"dynadesk-lg-{ns + 1}-{gone.stdout.strip()}-qrst7890"  # another PID namespace's
    elsewhere.mkdir()
    earlier = tmp_path / f"dynadesk-lg-{gone.stdout.strip()}-uvwx1234"  # an earlier version's: no namespace,
    earlier.mkdir()  # so judged by age: changed a week ago, within the longest run's timeout and a day
    week = time.time() - 7 * 86400
    os.utime(earlier, (week, week))
    ancient = tmp_path / f"dynadesk-data-{me}-yz012345"  # ... and nine days ago, though its id is a live process
    ancient.mkdir()
    (ancient / "d000.jsonl").write_text("{}\n")
    nine = time.time() - 9 * 86400
    os.utime(ancient, (nine, nine))
    oldest, recent = tmp_path / "dynadesk-lg-a1b2c3_d", tmp_path / "dynadesk-data-e4f5g6h7"  # named by no id at all
    oldest.mkdir()
    recent.mkdir()
    os.utime(oldest, (nine, nine))
    time.sleep(0.1)
    assert sorted(sweep_stale_run_dirs(tmp_path)) == sorted([reused, dead, ancient, oldest])
    assert recent.is_dir()
    assert ours.is_dir() and unknown.is_dir() and a_file.is_file() and elsewhere.is_dir() and earlier.is_dir()
    if os.geteuid() == 0:  # another user's folder is never removed (only root can make one here)
        foreign = tmp_path / f"dynadesk-lg-{ns}-{gone.stdout.strip()}-mnop3456"
        foreign.mkdir()
        os.chown(foreign, 65534, 65534)
        assert sweep_stale_run_dirs(tmp_path) == [] and foreign.is_dir()


# A run in a PID namespace of its own (a container sharing the host's /tmp): its init forks children that exit until
# one has the id it was given (free here: looked up in ours, that id is no process), which runs the load generator.
IN_A_NAMESPACE = """
import os, sys
want = int(sys.argv[1])
while True:
    pid = os.fork()
    if pid == 0:
        if os.getpid() < want:
            os._exit(17)
        sys.argv = sys.argv[1:]
        exec(sys.argv[2])
        os._exit(0)
    if os.waitstatus_to_exitcode(os.waitpid(pid, 0)[1]) != 17:
        break
"""


def _free_id() -> int:
    """The lowest process id above 1 that no process has here (a namespace's ids start at 1)."""
    return next(n for n in range(2, 1 << 16) if not psutil.pid_exists(n))


@pytest.mark.parametrize("own_proc", [True, False], ids=["its-own-proc", "the-hosts-proc"])
def test_a_live_run_in_another_pid_namespace_keeps_its_folders(tmp_path, own_proc):
    """Two DynaDesk containers on one ``/tmp``, or a container beside its host: a sweep by process id alone read
    the other namespace's live run as gone and removed its socket and data. And a namespace without its own
    ``/proc`` (``unshare --pid`` alone) read the host's process table: its run removed its own live socket folder.
    A real PID namespace (``unshare``; in a user namespace of its own, so any user can make one, its files this
    user's outside it), a real run in it."""
    want = _free_id()
    unshare = ["unshare", "--user", "--map-root-user", "--pid", "--fork", "--kill-child",
               *(["--mount-proc"] if own_proc else [])]
    child = subprocess.Popen([*unshare, sys.executable, "-c", IN_A_NAMESPACE, str(want), str(tmp_path / "other"),
                              CHILD], stdout=subprocess.PIPE, text=True)
    theirs: list[Path] = []
    try:
        assert child.stdout is not None
        line = child.stdout.readline()
        assert line, "the run in its own PID namespace did not start"
        theirs = [Path(p) for p in json.loads(line)]
        assert all(p.name.split("-")[-2] == str(want) for p in theirs)  # here, no such process
        assert all(p.is_dir() for p in theirs), "the run in the namespace removed its own live folders"
        mine = make_run_dir("lg")
        mine.rmdir()
        assert all(p.is_dir() for p in theirs), "a live run's folders in another PID namespace were removed"
    finally:
        child.kill()
        child.wait(timeout=30)
        for p in theirs:
            shutil.rmtree(p, ignore_errors=True)
