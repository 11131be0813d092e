"""A run left ``running`` by a process that is gone is marked ``interrupted`` when the workspace is next opened.

Real `dynadesk eval` subprocess (tiny model, local runner), killed with SIGKILL mid-run like a power cut; real
SQLite workspace reopened through :meth:`Workspace.open_store`, the path the CLI and the app open it by.
"""

from __future__ import annotations

import os
import signal
import socket
import subprocess
import sys
import time

from support.eval import setup_workspace

from dynadesk.store.evaluations import RunChange
from dynadesk.store.run_owner import Owner, current_owner, record_owner
from dynadesk.workspace import Workspace


def _reopen_status(home, run_id):
    st = Workspace(home).open_store()
    try:
        rec = st.evaluations.get(run_id)
        return rec.status, rec.error or ""
    finally:
        st.close()


def _owner_pid(store, run_id):
    row = store.db.execute("SELECT pid FROM run_owners WHERE evaluation_id = ?", [run_id]).fetchone()
    return row[0] if row else None


def test_a_run_whose_worker_was_killed_is_interrupted_on_the_next_open_and_a_live_one_is_left_alone(
        home, store, tmp_path):
    setup_workspace(store, tmp_path, sizes=(60, 40))
    proc = subprocess.Popen([sys.executable, "-c", "from dynadesk.cli import main; main()", "--home", str(home),
                             "eval", "tiny", "--runner", "local", "--batch-size", "2"],
                            stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True, start_new_session=True)
    run_id = None
    deadline = time.monotonic() + 300
    try:
        while time.monotonic() < deadline:
            runs = store.evaluations.list(limit=1)
            if runs and runs[0].status == "running" and _owner_pid(store, runs[0].id) == proc.pid:
                run_id = runs[0].id
                break
            assert proc.poll() is None, "the evaluation ended before it could be killed: " + proc.stderr.read()
            time.sleep(0.05)
        assert run_id is not None, "the evaluation never got going"
        # the worker is alive: opening the workspace (another window, another command) leaves its run alone
        assert _reopen_status(home, run_id) == ("running", "")
        assert proc.poll() is None, "the run finished before the kill: make the data bigger"
    finally:
        os.killpg(proc.pid, signal.SIGKILL)  # the CLI and its worker subprocess, at once
        proc.wait()
    assert store.evaluations.get(run_id).status == "running"  # nobody could record anything

    status, error = _reopen_status(home, run_id)
    assert status == "interrupted"
    assert f"the worker (pid {proc.pid} on {socket.gethostname()}) is gone" in error
    assert "the app or machine stopped during the run" in error and f"dynadesk eval --resume {run_id}" in error
    assert _reopen_status(home, run_id)[0] == "interrupted"  # and stays so: a second open changes nothing


def test_a_recycled_pid_does_not_keep_a_dead_run_running(home, store, tmp_path):
    """The recorded owner's pid now belongs to another (live) process: told apart by its start time."""
    setup_workspace(store, tmp_path, sizes=(4,))
    model = store.models.get("tiny")
    me = current_owner()
    recycled = store.evaluations.create(model.id, "sentiment", runner="local", sandboxed=False,
                                        datasets=["set0-test"])
    store.evaluations.transition(recycled, "running", RunChange(pid=me.pid, host=me.host))
    record_owner(store, recycled, Owner(me.pid, me.host, (me.started or 0.0) - 3600))  # an hour before this one
    live = store.evaluations.create(model.id, "sentiment", runner="local", sandboxed=False, datasets=["set0-test"])
    store.evaluations.transition(live, "running", RunChange(pid=me.pid, host=me.host))  # owned by this (live) process
    elsewhere = store.evaluations.create(model.id, "sentiment", runner="local", sandboxed=False,
                                         datasets=["set0-test"])
    store.evaluations.transition(elsewhere, "running")
    record_owner(store, elsewhere, Owner(2 ** 22 + 7, "another-host.example", 1.0))  # only that host can tell

    status, error = _reopen_status(home, recycled)
    assert status == "interrupted"
    assert f"pid {me.pid} is now another process" in error
    assert _reopen_status(home, live)[0] == "running"
    assert _reopen_status(home, elsewhere)[0] == "running"


def test_a_run_from_before_owners_were_recorded_falls_back_on_its_pid(home, store, tmp_path):
    setup_workspace(store, tmp_path, sizes=(4,))
    model = store.models.get("tiny")
    old = store.evaluations.create(model.id, "sentiment", runner="local", sandboxed=False, datasets=["set0-test"],
                                   status="running")
    # no such process, no owner row
    store.evaluations.update(old, RunChange(pid=2 ** 22 + 12345, host=socket.gethostname()))
    status, error = _reopen_status(home, old)
    assert status == "interrupted" and f"pid {2 ** 22 + 12345}" in error and "--resume" in error
