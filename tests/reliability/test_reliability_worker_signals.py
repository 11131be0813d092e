"""Chaos on queue workers (issue 38): a real ``dynadesk worker`` sent SIGTERM mid-job, and SIGKILL after its
warm-shutdown window, while it runs a Docker-sandboxed job on a real redis-server.

* SIGTERM alone is a warm shutdown: the job in hand finishes, its result is handed in and stored once.
* SIGTERM, then SIGKILL after the window (as systemd or ``docker stop`` do): the job is re-queued when the dead
  worker's lease expires, says why, and runs again; it is stored once. The dead worker's evaluation container
  (found by its ``dynadesk.*`` labels) is never left running past its own timeout, and a restarted worker
  removes what its previous life left behind.
"""

from __future__ import annotations

import os
import signal
import time
from datetime import datetime

import pytest
from support.eval import MEASURED_WINDOW_S, run_request
from support.queue import job_states, majority_workspace, remove_containers, start_worker, trust, wait_for

from dynadesk.orchestration.evaluate import default_limits
from dynadesk.queue.broker import parse_broker
from dynadesk.queue.coordinator import Queue, collect, enqueue
from dynadesk.workspace import Workspace

pytestmark = [pytest.mark.docker, pytest.mark.timeout(1200)]


def wait(what, until, timeout=180.0, poll=0.2):
    return wait_for(what, until, timeout, poll)

WARM_WINDOW_S = 3.0  # how long the test lets a SIGTERMed worker finish before SIGKILL (systemd: TimeoutStopSec)
TIMEOUT_S = 10  # the long job's own wall-clock limit (its attempt after the restart runs into it too)
SLACK_S = 15  # the container's in-sandbox deadline (timeout + 5 s) plus polling and a loaded machine


def containers_of(docker_client, home, running_only=True):
    """Evaluation containers whose run folder is under a worker's home (by the labels the runner sets).

    Sparse: the list's own fields, no inspect per container. A full list inspects each container it listed, and one
    the restarted worker's sweep removed in between failed the listing with a 404 (a clean-clone run); callers
    ``reload()`` a container before reading its state."""
    root = str(home.resolve())
    return [c for c in docker_client.containers.list(all=not running_only, sparse=True,
                                                      filters={"label": "dynadesk.role=evaluation"})
            if (c.attrs.get("Labels") or {}).get("dynadesk.run-dir", "").startswith(root)]


def test_sigterm_mid_job_is_a_warm_shutdown_that_finishes_and_stores_the_job(
        redis_server, store, home, tmp_path, evaluator_image, docker_client):
    model = majority_workspace(store, tmp_path, perturbed=False)
    ws = Workspace(home)
    worker = start_worker(redis_server, tmp_path / "w1", "w1", lease=3.0)
    trust(store, worker)
    try:
        queue = Queue.open(parse_broker(redis_server.url))
        job, run_id = enqueue(store, ws, queue, run_request(model, runner="docker", latency_samples=2, warmup=0,
                                                            limits=default_limits(cpus=1.0, timeout_s=600),
                                                            min_seconds=MEASURED_WINDOW_S))
        wait("the job's container", lambda: containers_of(docker_client, worker.home))
        assert job_states(redis_server)[job]["state"] == "running"
        os.killpg(worker.proc.pid, signal.SIGTERM)
        code = worker.proc.wait(timeout=300)
        (record,) = collect(store, ws, queue, [job], timeout_s=60)
    finally:
        worker.stop()
        remove_containers(docker_client, tmp_path)
    log = worker.text()
    assert code == 0, log
    assert "Warm shutdown" in log and f"job {job} attempt 0: succeeded" in log, log
    assert record.id == run_id and record.status == "succeeded", record.error
    assert record.queue.to_dict()["attempt"] == 0 and record.queue.to_dict()["worker"] == "w1"
    assert len(store.evaluations.list()) == 1
    assert not containers_of(docker_client, worker.home, running_only=False)  # the runner removed it


def test_sigkill_after_the_warm_window_requeues_the_job_and_leaves_no_container_past_its_timeout(
        redis_server, store, home, tmp_path, evaluator_image, docker_client):
    model = majority_workspace(store, tmp_path, perturbed=False)
    ws = Workspace(home)
    worker = start_worker(redis_server, tmp_path / "w1", "w1", lease=3.0)
    trust(store, worker)
    again = None
    try:
        queue = Queue.open(parse_broker(redis_server.url))
        # each of its six timed windows lasts 15 s: left alone the job would run ~90 s, far past its 10 s limit
        request = run_request(model, runner="docker", latency_samples=2, warmup=0, min_seconds=15.0,
                              limits=default_limits(cpus=1.0, timeout_s=TIMEOUT_S))
        job, run_id = enqueue(store, ws, queue, request)
        (container,) = wait("the job's container", lambda: containers_of(docker_client, worker.home))
        time.sleep(1.0)
        os.killpg(worker.proc.pid, signal.SIGTERM)
        time.sleep(WARM_WINDOW_S)
        assert worker.proc.poll() is None, worker.text()  # still finishing its job: warm shutdown
        worker.kill9()
        container.reload()
        started = datetime.fromisoformat(container.attrs["State"]["StartedAt"][:26].rstrip("Z"))
        assert container.status == "running"  # the worker is gone; its container is not

        def stopped():
            container.reload()
            return container.status != "running"

        wait("the orphaned container to stop", stopped, timeout=TIMEOUT_S + 60)
        container.reload()
        ended = datetime.fromisoformat(container.attrs["State"]["FinishedAt"][:26].rstrip("Z"))
        ran_s = (ended - started).total_seconds()
        assert ran_s <= TIMEOUT_S + SLACK_S, f"the orphaned container ran {ran_s:.0f} s; its limit is {TIMEOUT_S} s"

        again = start_worker(redis_server, tmp_path / "w1", "w1", lease=3.0)  # w1 restarted on its own home
        assert not [c for c in containers_of(docker_client, again.home, running_only=False) if c.id == container.id]
        (record,) = collect(store, ws, queue, [job], timeout_s=300)
    finally:
        for w in (worker, again):
            if w is not None:
                w.stop()
        remove_containers(docker_client, tmp_path)
    log = again.text()
    assert record.id == run_id and record.status == "failed" and record.verdict == "timeout", record.error
    q = record.queue.to_dict()
    assert q["attempt"] == 1 and q["requeued_from"] == "w1", q
    assert "lease of worker w1 expired" in q["requeued_why"], q
    assert f"job {job} attempt 1: running" in log and "removed 1 leftover run(s) (docker)" in log, log
    assert len(store.evaluations.list()) == 1  # re-queued, stored once
    assert not containers_of(docker_client, tmp_path / "w1", running_only=True)
