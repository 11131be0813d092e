"""Two real `dynadesk worker` processes on a real redis-server share six Docker-sandboxed jobs; one is killed -9.

Each worker has its own workspace and cache; inputs reach them only through the broker.
The run of every job must be stored exactly once in the coordinating workspace, with the
same predictions digest as a run made here without the queue.
"""

from __future__ import annotations

import json
import os
import time

import pytest
from support.eval import MEASURED_WINDOW_S, run_request
from support.queue import (
    job_states,
    majority_workspace,
    remove_containers,
    result_of,
    run_cli,
    start_worker,
    trust,
    wait_for,
)

from dynadesk.orchestration.evaluate import default_limits, evaluate
from dynadesk.queue.broker import parse_broker
from dynadesk.queue.coordinator import Queue, collect, enqueue
from dynadesk.queue.tasks import send_job
from dynadesk.workspace import Workspace

pytestmark = [pytest.mark.docker, pytest.mark.timeout(1800)]  # the first Docker test of a session builds the image


def wait(what, until, timeout=300.0, poll=0.2):
    return wait_for(what, until, timeout, poll)


def test_six_jobs_split_over_two_workers_and_a_killed_workers_job_runs_once_elsewhere(
        redis_server, store, home, tmp_path, evaluator_image, docker_client):
    model = majority_workspace(store, tmp_path)
    ws = Workspace(home)
    workers = [start_worker(redis_server, tmp_path / name, name, lease=3.0) for name in ("w1", "w2")]
    keys = {w.name: trust(store, w) for w in workers}
    try:
        queue = Queue.open(parse_broker(redis_server.url))
        request = run_request(model, runner="docker", batch_size=4, latency_samples=2, warmup=0,
                              limits=default_limits(cpus=1.0, memory_bytes=2 << 30, timeout_s=600),
                              min_seconds=MEASURED_WINDOW_S)
        ids = [enqueue(store, ws, queue, request)[0] for _ in range(6)]

        def w1_busy_after_one_done():
            states = job_states(redis_server)
            done = [j for j, s in states.items() if s["state"] == "succeeded" and result_of(s).get("worker") == "w1"]
            running = [j for j, s in states.items() if s["state"] == "running" and s["worker"] == "w1"]
            return running if done and running else None

        (killed,) = wait("w1 to finish a job and start another", w1_busy_after_one_done)
        time.sleep(1.0)  # well inside the run: a container start alone takes longer
        workers[0].kill9()
        at_kill = job_states(redis_server)[killed]
        assert at_kill["state"] == "running" and at_kill["worker"] == "w1" and at_kill["attempt"] == "0"

        local = evaluate(store, ws, request, client=docker_client)  # the same request, without the queue
        assert local.status == "succeeded", local.error
        records = collect(store, ws, queue, ids, timeout_s=600)
        # Celery may deliver a message again (visibility timeout, a restored unacked message): never run twice
        for attempt in (0, 1):
            send_job(queue.app, killed, attempt)
        wait("w2 to drop both copies", lambda: workers[1].text().count(f"job {killed} attempt") >= 4, timeout=60)
        assert collect(store, ws, queue, ids) == []
    finally:
        for w in workers:
            w.stop()
        remove_containers(docker_client, tmp_path)
    log2 = workers[1].text()
    assert len(records) == 6 and all(r.status == "succeeded" for r in records), [(r.id, r.error) for r in records]
    by_job = {r.queue.job: r for r in records}
    assert sorted(by_job) == sorted(ids)  # one run per job
    assert {r.queue.worker for r in records} == {"w1", "w2"}  # split across both
    assert all(r.queue.worker_key == keys[r.queue.worker] for r in records)
    again = by_job[killed].queue
    assert again.worker == "w2" and again.attempt == 1 and again.requeued_from == "w1", again
    assert log2.count(f"job {killed} attempt 1: running") == 1
    for attempt in (0, 1):  # both copies dropped
        assert f"job {killed} attempt {attempt}: not run (succeeded)" in log2
    assert all(r.queue.hardware_class.startswith("cpu=") for r in records)
    assert {r.predictions_digest for r in records} == {local.predictions_digest}
    assert {r.image_id for r in records} == {local.image_id}
    assert len(store.evaluations.list()) == 7  # six queued runs and the local one: no duplicate

    # runs compare: a queued run and the local run agree on every deterministic field
    proc = run_cli("runs", "compare", str(by_job[killed].id), str(local.id), home=home)
    assert "OK" in proc.stdout.splitlines()[-1], proc.stdout


def test_cancel_reaches_a_running_job_on_another_machine(redis_server, store, home, tmp_path):
    """`dynadesk jobs cancel` from the coordinator stops the job on the worker running it; the run is cancelled."""
    model = majority_workspace(store, tmp_path)
    ws = Workspace(home)
    worker = start_worker(redis_server, tmp_path / "w1", "w1", "--allow-unsandboxed", lease=3.0)
    trust(store, worker)
    try:
        queue = Queue.open(parse_broker(redis_server.url))
        job, run_id = enqueue(store, ws, queue, run_request(model, runner="local", min_seconds=MEASURED_WINDOW_S))
        wait("the job to start", lambda: job_states(redis_server)[job]["state"] == "running", timeout=60, poll=0.05)
        proc = run_cli("jobs", "cancel", job, "--broker", redis_server.url, home=home)
        assert proc.stdout.strip() == f"job {job}: cancel requested (running)"
        (alive,) = json.loads(run_cli("jobs", "workers", "--broker", redis_server.url, "--json", home=home).stdout)
        assert alive["name"] == "w1" and alive["pid"] == worker.proc.pid
        (record,) = collect(store, ws, queue, [job], timeout_s=120)
        # without --no-wait, 'eval --queue' waits for the job and stores its run, with a line per change
        waited = run_cli("eval", model, "--runner", "local", "--queue", redis_server.url, home=home)
    finally:
        worker.stop()
    assert record.id == run_id and record.status == "cancelled" and record.verdict == "cancelled", record.error
    (row,) = [line.split() for line in waited.stdout.splitlines()[2:]]
    assert row[2:4] == ["succeeded", "ok"] and row[5] == "w1", waited.stdout
    assert "running on w1" in waited.stderr and ": succeeded on w1" in waited.stderr
    assert f"job {job}: cancel requested; stopping" in worker.text()


def test_a_frozen_worker_loses_its_job_and_its_late_result_is_discarded(redis_server, store, home, tmp_path):
    """A worker cut off mid-job (SIGSTOP: no heartbeats, as on a lost connection) loses its lease; the job runs on
    the other worker; when the first one comes back its result is refused: one run, no duplicate."""
    import signal

    model = majority_workspace(store, tmp_path)
    ws = Workspace(home)
    workers = [start_worker(redis_server, tmp_path / n, n, "--allow-unsandboxed", lease=2.0) for n in ("w1", "w2")]
    for w in workers:
        trust(store, w)
    try:
        queue = Queue.open(parse_broker(redis_server.url))
        job, run_id = enqueue(store, ws, queue, run_request(model, runner="local", min_seconds=MEASURED_WINDOW_S))
        holder = wait("the job to start", lambda: job_states(redis_server)[job]["worker"], timeout=60, poll=0.05)
        frozen = next(w for w in workers if w.name == holder)
        other = next(w for w in workers if w.name != holder)
        os.killpg(frozen.proc.pid, signal.SIGSTOP)
        (record,) = collect(store, ws, queue, [job], timeout_s=180)
        os.killpg(frozen.proc.pid, signal.SIGCONT)
        wait("the frozen worker to come back", lambda: "(lease lost: result discarded)" in frozen.text(),
              timeout=60)
    finally:
        for w in workers:
            os.killpg(w.proc.pid, signal.SIGCONT)
            w.stop()
    assert record.status == "succeeded" and record.queue.worker == other.name
    assert record.queue.requeued_from == holder and record.queue.attempt == 1
    assert store.evaluations.get(run_id).queue.worker == other.name  # not overwritten
    assert len(store.evaluations.list()) == 1
