"""The queue's protocol on a real redis-server: password required, leases, reaping, cancel, stuck jobs, blobs.

No worker process here (see test_queue_workers.py for those): the job records are driven
through the same calls a worker makes, on a real broker with requirepass.
"""

from __future__ import annotations

import json
import time

import pytest
from support.queue import majority_workspace, run_cli

from dynadesk.errors import BrokerUnavailable, QueueError, TransferError
from dynadesk.queue import jobs
from dynadesk.queue.broker import connect, parse_broker
from dynadesk.queue.coordinator import Queue, collect, enqueue
from dynadesk.queue.identity import lease_id, payload_digest, sign
from dynadesk.queue.transfer import BlobCache, put_file, put_tree


def trusted_key(store, tmp_path):
    """A worker key made here and trusted by the workspace (what 'dynadesk jobs trust-worker' records)."""
    from dynadesk.queue.identity import fingerprint_of, load_or_create
    from dynadesk.store import worker_keys

    key = load_or_create(tmp_path / "worker-home")
    worker_keys.trust(store, fingerprint_of(key), key.public_key().public_bytes_raw().hex(), "test")
    return key


@pytest.mark.parametrize("url, says", [
    ("redis://127.0.0.1:6379/0", "has no password"),
    ("redis://user@127.0.0.1:6379/0", "has no password"),
    ("http://:pw@127.0.0.1:6379/0", "must start with redis://"),
    ("redis://:pw@127.0.0.1:6379/x", "database must be a number"),
    ("redis://:pw@:6379/0", "names no host"),
    ("", "no broker given"),
])
def test_bad_broker_urls_are_refused_with_what_is_wrong(url, says):
    with pytest.raises(QueueError, match=says):
        parse_broker(url)


def test_cli_refuses_a_broker_without_password_before_connecting(tmp_path):
    for args in (["worker", "--broker", "redis://127.0.0.1:6379/0"],
                 ["eval", "some-model", "--queue", "redis://127.0.0.1:6379/0"],
                 ["jobs", "list", "--broker", "redis://127.0.0.1:6379/0"]):
        proc = run_cli(*args, home=tmp_path / "ws", check=False)
        assert proc.returncode == 1, proc
        lines = proc.stderr.strip().splitlines()
        assert len(lines) == 1 and "has no password" in lines[0], proc.stderr


def test_wrong_password_is_one_clear_error_without_the_password(redis_server, tmp_path):
    with pytest.raises(BrokerUnavailable, match="refused the password"):
        connect(parse_broker(f"redis://:wrong@127.0.0.1:{redis_server.port}/0"))
    proc = run_cli("jobs", "list", "--broker", f"redis://:wrong@127.0.0.1:{redis_server.port}/0",
                   home=tmp_path / "ws", check=False)
    assert proc.returncode == 1 and "refused the password" in proc.stderr and "wrong" not in proc.stderr


def test_blobs_travel_by_digest_and_a_corrupted_one_is_refused(redis_server, tmp_path):
    client = redis_server.client()
    src = tmp_path / "big.bin"
    src.write_bytes(bytes(range(256)) * 40000)  # 10.2 MB: two 8 MiB chunks
    hexd = put_file(client, src)
    assert int(client.hget(f"dynadesk:blob:{hexd}", "chunks")) == 2
    cache = BlobCache(tmp_path / "cache")
    assert cache.blob(client, hexd).read_bytes() == src.read_bytes()
    other = tmp_path / "other.bin"
    other.write_bytes(b"hello")
    bad = put_file(client, other)
    client.set(f"dynadesk:blob:{bad}:0", b"hellO")
    with pytest.raises(TransferError, match="corrupted"):
        BlobCache(tmp_path / "cache2").blob(client, bad)
    with pytest.raises(TransferError, match="not on the broker"):
        cache.blob(client, "0" * 64)


def test_a_model_folder_is_rebuilt_and_checked_against_its_registered_digest(redis_server, tmp_path):
    from dynadesk.models.registry import tree_digest, tree_files

    client = redis_server.client()
    folder = tmp_path / "m"
    (folder / "sub").mkdir(parents=True)
    (folder / "a.json").write_text("{}")
    (folder / "sub" / "w.bin").write_bytes(b"\0" * 100)
    files = put_tree(client, tree_files(folder))
    digest = tree_digest(folder)
    rebuilt = BlobCache(tmp_path / "cache").model(client, files, digest)
    assert tree_digest(rebuilt) == digest
    with pytest.raises(TransferError, match="has digest"):
        BlobCache(tmp_path / "cache3").model(client, files[:1], digest)
    with pytest.raises(TransferError, match="leaves the model folder"):
        BlobCache(tmp_path / "cache4").model(client, [["../x", files[0][1]]], digest)


def test_lease_claim_heartbeat_reap_and_a_late_result_is_refused(redis_server, store, home, tmp_path):
    from dynadesk.workspace import Workspace

    majority_workspace(store, tmp_path, size=6)
    from dynadesk.orchestration.request import RunRequest

    queue = Queue.open(parse_broker(redis_server.url))
    job, run_id = enqueue(store, Workspace(home), queue, RunRequest(model="maj", runner="local"))
    client = queue.client
    assert jobs.claim(client, job, 0, "w1", lease_s=1.0, secret="s1") == "claimed"
    # a second delivery of the same message (visibility timeout, restored unacked message) is dropped
    assert jobs.claim(client, job, 0, "w2", lease_s=1.0, secret="s2") == "running"
    assert jobs.heartbeat(client, job, "s1", 1.0, {"phase": "predict", "overall_done": 2, "overall_total": 6}) == "ok"
    assert jobs.view(client, job).progress["overall_done"] == 2
    assert jobs.heartbeat(client, job, "s2", 1.0, None) == "lost"  # not w2's lease
    assert jobs.heartbeat(client, job, "w1", 1.0, None) == "lost"  # the public name holds nothing
    assert jobs.reap(client) == []  # w1's lease is alive
    time.sleep(1.3)  # w1 stops renewing: dead
    view = jobs.view(client, job)
    assert view.shown_state == "stuck" and view.worker == "w1"
    assert jobs.reap(client) == [(job, 1)]
    assert jobs.reap(client) == []  # once only
    assert jobs.claim(client, job, 0, "w2", lease_s=5.0, secret="s2") == "stale"  # the old message
    assert jobs.claim(client, job, 1, "w2", lease_s=5.0, secret="s2") == "claimed"
    assert not jobs.finish(client, job, "s1", "succeeded", {"late": True})  # w1 came back: refused
    key = trusted_key(store, tmp_path)
    payload = jobs.payload(client, job)
    result = sign(key, {"error": "test", "worker": "w2", "job": job, "attempt": 1, "lease": lease_id("s2"),
                        "request": payload["request"], "state": "failed", "payload_digest": payload_digest(payload),
                        "challenge": jobs.challenge(client, job)})
    assert jobs.finish(client, job, "s2", "failed", result)
    assert jobs.view(client, job).result == result
    records = collect(store, Workspace(home), queue, [job])
    assert [r.id for r in records] == [run_id] and records[0].status == "failed"
    assert "w2" in records[0].error
    assert collect(store, Workspace(home), queue, [job]) == []  # stored once: no second run, no rewrite
    assert len(store.evaluations.list()) == 1


def test_cancel_a_queued_job_from_the_cli_and_its_delivery_is_dropped(redis_server, store, home, tmp_path):
    majority_workspace(store, tmp_path, size=6)
    proc = run_cli("eval", "maj", "--runner", "local", "--queue", redis_server.url, "--no-wait", home=home)
    job = proc.stdout.split()[-1]
    assert "queued job " + job in proc.stderr
    proc = run_cli("jobs", "cancel", job, "--broker", redis_server.url, home=home)
    assert proc.stdout.strip() == f"job {job}: cancelled"
    assert jobs.claim(redis_server.client(), job, 0, "w1", 5.0, "s1") == "cancelled"
    proc = run_cli("jobs", "collect", "--broker", redis_server.url, "--json", home=home)
    (row,) = json.loads(proc.stdout)
    assert row["status"] == "cancelled" and row["job"] == job
    proc = run_cli("jobs", "cancel", "nosuchjob", "--broker", redis_server.url, home=home, check=False)
    assert proc.returncode == 1 and "no job 'nosuchjob'" in proc.stderr


def test_a_job_whose_worker_stopped_shows_as_stuck(redis_server, store, home, tmp_path):
    """The record a worker killed mid-job leaves (lease taken, never renewed): 'dynadesk jobs list' says stuck."""
    majority_workspace(store, tmp_path, size=6)
    proc = run_cli("eval", "maj", "--runner", "local", "--queue", redis_server.url, "--no-wait", home=home)
    job = proc.stdout.split()[-1]
    assert jobs.claim(redis_server.client(), job, 0, "gpu-box-1", lease_s=0.5, secret="s1") == "claimed"
    time.sleep(0.8)
    proc = run_cli("jobs", "list", "--broker", redis_server.url, "--json", home=home)
    (row,) = json.loads(proc.stdout)
    assert row["state"] == "stuck" and row["worker"] == "gpu-box-1" and row["heartbeat"] is not None
    text = run_cli("jobs", "list", "--broker", redis_server.url, home=home).stdout
    assert "stuck" in text and "gpu-box-1" in text
