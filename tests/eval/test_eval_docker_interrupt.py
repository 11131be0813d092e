"""A Ctrl-C while Docker creates the run's container must not leave that container behind.

The Docker runner held nothing while ``containers.create`` waited for the daemon's answer: a Ctrl-C (or the CLI's
SIGTERM, which raises the same KeyboardInterrupt) that arrived after the daemon had made the container but before
the call returned raised out of the call itself, so the runner never had the container to remove, and every
interrupted run left one behind (only the queue worker's start-up sweep removed them). The runner now holds both
signals while it creates the container and raises them again inside the block that removes it. Shown with a real
daemon and image, in a real process whose SIGINT handler is Python's own; the signal is sent the moment the
daemon has answered, where the old code lost the container.
"""

from __future__ import annotations

import os
import subprocess
import sys

import pytest
from support import REPO

pytestmark = [pytest.mark.docker]

SCRIPT = """
import os, signal, sys
from pathlib import Path
from docker.models.containers import ContainerCollection
from support.eval import run_request, setup_workspace
from dynadesk.orchestration.evaluate import evaluate
from dynadesk.workspace import Workspace

real_create = ContainerCollection.create

def create_then_interrupted(self, *args, **kwargs):
    container = real_create(self, *args, **kwargs)  # the daemon has made it
    os.kill(os.getpid(), signal.SIGINT)  # ... and the Ctrl-C comes before the call returns
    return container

ContainerCollection.create = create_then_interrupted
tmp = Path(sys.argv[1])
ws = Workspace(tmp / "ws").ensure()
store = ws.open_store()
setup_workspace(store, tmp, sizes=(8,))
try:
    evaluate(store, ws, run_request("tiny", runner="docker", image=sys.argv[2]))
    print("finished", flush=True)
except KeyboardInterrupt:
    print("interrupted", store.evaluations.list(limit=1)[0].status, flush=True)
"""


def test_a_ctrl_c_while_the_container_is_created_leaves_no_container(tmp_path, evaluator_image, docker_client):
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(REPO / "tests"), os.environ.get("PYTHONPATH", "")])}
    out = subprocess.run([sys.executable, "-c", SCRIPT, str(tmp_path), evaluator_image.image_id],
                         capture_output=True, text=True, timeout=300, env=env, cwd=REPO)
    assert out.stdout.strip() == "interrupted interrupted", out.stdout + out.stderr[-3000:]
    home = str((tmp_path / "ws").resolve())
    left = [c for c in docker_client.containers.list(all=True, filters={"label": "dynadesk.role=evaluation"})
            if c.labels.get("dynadesk.run-dir", "").startswith(home + os.sep)]
    for c in left:  # not left for the next run of this test to count
        c.remove(force=True)
    assert [c.name for c in left] == [], "containers of the interrupted run left behind"


def test_a_second_ctrl_c_while_held_is_not_held_again():
    """A user who presses Ctrl-C twice gets out at once: holding is for the moment of a start, not a hang."""
    script = """
import os, signal, time
from dynadesk.orchestration.runner_base import interrupts_held
try:
    with interrupts_held() as arrived:
        os.kill(os.getpid(), signal.SIGINT)
        time.sleep(0.2)
        os.kill(os.getpid(), signal.SIGINT)
        time.sleep(5)
        print("still held", flush=True)
except KeyboardInterrupt:
    print("out", signal.getsignal(signal.SIGINT) is signal.default_int_handler, flush=True)
"""
    out = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=60)
    assert out.stdout.strip() == "out True", out.stdout + out.stderr

