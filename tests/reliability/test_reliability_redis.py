"""Chaos on the queue's broker (issue 38): a real redis-server crashed (SIGKILL) and restarted during queued
evaluations, with the persistence docs/operators.md recommends (``appendonly yes``, ``appendfsync always``).

A real ``dynadesk worker`` runs the jobs (unsandboxed runner: the broker, not Docker, is under test here) and
the coordinating workspace is collecting them while the broker dies. Every job must end with exactly one
stored run; a job that ran again says why (``requeued_from`` and the reason on the job); no result is lost
and none stored twice. A broker without persistence loses the queue in the crash: the coordinator then says
so, naming the jobs and runs, and marks those runs failed instead of waiting forever.
"""

from __future__ import annotations

import os
import shutil
import signal
import threading
import time

import pytest
from support.eval import MEASURED_WINDOW_S, run_request
from support.queue import PASSWORD, job_states, majority_workspace, start_redis, start_worker, trust, wait_for
from support.sync import free_port

from dynadesk.queue.broker import parse_broker
from dynadesk.queue.coordinator import Queue, collect, enqueue
from dynadesk.workspace import Workspace

pytestmark = [pytest.mark.integration, pytest.mark.timeout(900)]  # its own redis-server


def wait(what, until, timeout=180.0, poll=0.1):
    return wait_for(what, until, timeout, poll)

DURABLE = ["--appendonly", "yes", "--appendfsync", "always", "--save", ""]  # what docs/operators.md recommends
VOLATILE = ["--appendonly", "no", "--save", ""]


def redis_argv(port: int, persistence: list[str]) -> list[str]:
    exe = shutil.which("redis-server") or "redis-server"
    return [exe, "--port", str(port), "--bind", "127.0.0.1", "--requirepass", PASSWORD, *persistence]


def crash_and_restart(server, folder, persistence, down_s: float = 2.0):
    """SIGKILL redis-server (no shutdown save), keep it down ``down_s`` seconds, start it again on the same port
    and folder; returns the new server."""
    os.kill(server.proc.pid, signal.SIGKILL)
    server.proc.wait(timeout=10)
    time.sleep(down_s)
    return start_redis(folder, argv=redis_argv(server.port, persistence), port=server.port)


class Collector(threading.Thread):
    """The coordinating workspace collecting its jobs (as ``eval --queue`` waits), while the broker dies."""

    def __init__(self, store, ws, queue, ids):
        super().__init__(daemon=True)
        self.args_ = (store, ws, queue, ids)
        self.records: list = []
        self.error: BaseException | None = None

    def run(self) -> None:
        store, ws, queue, ids = self.args_
        try:
            self.records = collect(store, ws, queue, ids, timeout_s=400, poll_s=0.3)
        except BaseException as exc:  # noqa: BLE001 - reported by the test
            self.error = exc


def test_redis_crash_mid_job_with_aof_loses_nothing_and_runs_each_job_once(store, home, tmp_path):
    folder = tmp_path / "redis"
    port = free_port()
    server = start_redis(folder, argv=redis_argv(port, DURABLE), port=port)
    model = majority_workspace(store, tmp_path)
    ws = Workspace(home)
    worker = start_worker(server, tmp_path / "w1", "w1", "--allow-unsandboxed", lease=3.0)
    trust(store, worker)
    try:
        queue = Queue.open(parse_broker(server.url))
        request = run_request(model, runner="local", min_seconds=MEASURED_WINDOW_S)  # long enough to be caught running
        ids = [enqueue(store, ws, queue, request)[0] for _ in range(3)]
        collector = Collector(store, ws, queue, ids)
        collector.start()
        wait("the first job to run", lambda: any(s["state"] == "running" for s in job_states(server).values()))
        time.sleep(0.5)
        server = crash_and_restart(server, folder, DURABLE)
        collector.join(timeout=500)
        states = job_states(server)
    finally:
        worker.stop()
        server.proc.terminate()
        server.proc.wait(timeout=10)
    log = worker.text()
    assert collector.error is None, f"{collector.error!r}\n{log}"
    records = collector.records
    assert sorted(r.queue.job for r in records) == sorted(ids), (records, log)
    assert all(r.status == "succeeded" for r in records), [(r.id, r.status, r.error) for r in records]
    assert len(store.evaluations.list()) == len(ids)  # one run per job, none twice
    for job in ids:
        assert states[job]["state"] == "succeeded", states[job]
        kept = next(r for r in records if r.queue.job == job).queue.to_dict()
        ran = log.count(f"job {job} attempt")
        if kept["attempt"] > 0:  # ran again: the job says who lost it and why
            assert kept["requeued_from"] == "w1" and "lease of worker w1 expired" in kept["requeued_why"], kept
        else:
            assert f"job {job} attempt 0: succeeded" in log, log
        assert ran >= 2, log


def test_redis_crash_without_persistence_requeues_the_lost_jobs_and_says_why(store, home, tmp_path):
    """The same crash on a broker with no persistence (``appendonly no``, no snapshots): every job, message and
    lease is gone. Before the fix the waiting coordinator died with "no job ... on this broker" and the runs stayed
    ``queued`` forever; now each lost job's run is sent again from its own folder, saying why, and stored once."""
    folder = tmp_path / "redis"
    port = free_port()
    server = start_redis(folder, argv=redis_argv(port, VOLATILE), port=port)
    model = majority_workspace(store, tmp_path)
    ws = Workspace(home)
    worker = start_worker(server, tmp_path / "w1", "w1", "--allow-unsandboxed", lease=3.0)
    trust(store, worker)
    try:
        queue = Queue.open(parse_broker(server.url))
        request = run_request(model, runner="local", min_seconds=MEASURED_WINDOW_S)  # long enough to be caught running
        queued = [enqueue(store, ws, queue, request) for _ in range(2)]
        ids = [job for job, _ in queued]
        collector = Collector(store, ws, queue, ids)
        collector.start()
        wait("the first job to run", lambda: any(s["state"] == "running" for s in job_states(server).values()))
        server = crash_and_restart(server, folder, VOLATILE)
        assert job_states(server) == {}  # the broker came back empty
        collector.join(timeout=500)
    finally:
        worker.stop()
        server.proc.terminate()
        server.proc.wait(timeout=10)
    log = worker.text()
    assert collector.error is None, f"{collector.error!r}\n{log}"
    records = collector.records
    assert sorted(r.id for r in records) == sorted(run for _, run in queued), records
    assert all(r.status == "succeeded" for r in records), [(r.id, r.status, r.error) for r in records]
    assert len(store.evaluations.list()) == len(ids)  # one run per queued run, none twice
    for r in records:
        q = r.queue.to_dict()
        assert q["job"] not in ids, q  # sent again as a new job ...
        assert f"of run {r.id} was gone from broker" in q["requeued_why"] and "appendonly" in q["requeued_why"], q
    for job in ids:  # ... and the worker holding a lost job could not finish it
        assert f"job {job} attempt 0: succeeded\n" not in log, log
