"""The queue's trust boundary, attacked on a real redis-server: what a process holding only the broker password,
or a hostile coordinator, can no longer do.

* a result is stored only when a worker key this workspace trusts signed it, for the job's payload and round
  (the coordinator's own copy: see test_queue_binding.py);
* a worker refuses digests that are not ``sha256:<64 hex>``, re-verifies cached model folders, caps the
  limits a job asks for, and will not start on a broker that lets a client in without the password.
"""

from __future__ import annotations

import json
import shutil
import subprocess
import time
from dataclasses import replace
from pathlib import Path

import pytest
from support.eval import LABELS, MEASURED_WINDOW_S, add_test_set, run_request
from support.queue import (
    DYNADESK,
    job_states,
    majority_workspace,
    run_cli,
    start_redis,
    start_worker,
    trust,
    wait_for,
)

from dynadesk.errors import QueueError, TransferError
from dynadesk.orchestration.evaluate import default_limits, evaluate
from dynadesk.orchestration.folder import OUT_FILES, RunFolder
from dynadesk.queue import jobs
from dynadesk.queue.broker import parse_broker
from dynadesk.queue.coordinator import Queue, collect, enqueue
from dynadesk.queue.identity import fingerprint_of, lease_id, load_or_create, sign
from dynadesk.queue.transfer import BlobCache, put_file, put_tree
from dynadesk.workspace import Workspace

GIB = 1 << 30


def wait(what, until, timeout=120.0, poll=0.2):
    return wait_for(what, until, timeout, poll)


def _forge(client, job: str, result: dict, state: str = "succeeded") -> None:
    """What a process with only the broker password does: take the job under a real worker's public name, then
    finish it with a result of its making (plain Redis commands; no worker key)."""
    now = str(time.time())
    client.hset(f"dynadesk:job:{job}", mapping={"state": "running", "worker": "w1", "started": now,
                                               "heartbeat": now})
    client.set(f"dynadesk:lease:{job}", "w1", px=60000)
    client.hset(f"dynadesk:job:{job}", mapping={"state": state, "result": json.dumps(result), "finished": now})
    client.delete(f"dynadesk:lease:{job}")


def test_a_forged_result_from_a_broker_password_holder_is_refused_and_queued_again(
        redis_server, store, home, tmp_path):
    """The issue's attack: real predictions (from an honest run of the same request), a forged perf, signed by
    nobody, under worker w1's name. Refused, the job queued again; then an untrusted worker's genuine result is
    refused too; once its key is trusted, its run is stored and names that key."""
    model = majority_workspace(store, tmp_path, size=6)
    ws = Workspace(home)
    request = run_request(model, runner="local", min_seconds=MEASURED_WINDOW_S)
    honest = evaluate(store, ws, request)
    assert honest.status == "succeeded", honest.error
    queue = Queue.open(parse_broker(redis_server.url))
    job, run_id = enqueue(store, ws, queue, request)
    attacker = redis_server.client()  # holds the password, nothing else
    out = RunFolder(Path(honest.run_dir)).out_dir
    metrics = json.loads((out / "metrics.json").read_text())
    forged_metrics = tmp_path / "metrics.json"
    forged_metrics.write_text(json.dumps({**metrics, "forged": 100.0}))
    files = {p.name: put_file(attacker, p) for p in sorted(out.iterdir())
             if p.name in OUT_FILES and p.is_file() and p.name != "metrics.json"}
    files["metrics.json"] = put_file(attacker, forged_metrics)
    _forge(attacker, job, {"outcome": {"verdict": "ok", "exit_code": 0, "message": "", "seconds": 1.0, "log": ""},
                           "files": files, "image_id": None, "hardware_class": "cpu=forged", "worker": "w1",
                           "host": "w1", "attempt": 0})
    assert collect(store, ws, queue, [job], wait=False) == []
    assert store.evaluations.get(run_id).status == "queued"  # nothing stored
    view = jobs.view(queue.client, job)
    assert view.state == "queued" and view.attempt == 1 and "not signed" in view.refused, view

    worker = start_worker(redis_server, tmp_path / "w1", "w1", "--allow-unsandboxed", lease=3.0)
    try:
        def refused_for_its_key():
            collect(store, ws, queue, [job], wait=False)
            return "does not trust" in jobs.view(queue.client, job).refused
        wait("the untrusted worker's result to be refused", refused_for_its_key)
        assert store.evaluations.get(run_id).status == "queued"
        fpr = trust(store, worker)
        (record,) = collect(store, ws, queue, [job], timeout_s=120)
    finally:
        worker.stop()
    assert record.id == run_id and record.status == "succeeded", record.error
    assert record.queue.worker_key == fpr and record.queue.worker == "w1"
    assert record.predictions_digest == honest.predictions_digest
    assert f"worker key {fpr}" in worker.text()


def test_a_trusted_keys_result_for_another_round_or_after_revocation_is_refused(redis_server, store, home, tmp_path):
    """A signature is bound to the job, the payload and the round's challenge it was made for: edited after
    signing, or replayed on a later round, it is refused; a revoked key's results are refused; trusted again,
    its result for the current round stands."""
    from dynadesk.canonical import digest

    majority_workspace(store, tmp_path, size=6)
    ws = Workspace(home)
    queue = Queue.open(parse_broker(redis_server.url))
    client = queue.client
    job, run_id = enqueue(store, ws, queue, run_request("maj", runner="local", min_seconds=MEASURED_WINDOW_S))
    key = load_or_create(tmp_path / "box")
    pub = tmp_path / "box" / "worker-key" / "worker.pub"
    assert run_cli("jobs", "trust-worker", str(pub), "--label", "box", home=home).stdout.startswith(
        f"trusted worker key {fingerprint_of(key)}")
    payload = jobs.payload(client, job)
    body = {"error": "x", "verdict": "error", "job": job, "request": payload["request"],
            "payload_digest": digest(payload), "state": "failed"}

    def signed(attempt: int, **edit) -> dict:
        return sign(key, {**body, "attempt": attempt, "lease": lease_id(f"secret-{attempt}"),
                          "challenge": jobs.challenge(client, job), **edit})

    round0 = signed(0)
    tampered = {**round0, "error": "edited after signing"}
    assert jobs.claim(client, job, 0, "box", 5.0, "secret-0") == "claimed"
    assert jobs.finish(client, job, "secret-0", "failed", tampered)
    assert collect(store, ws, queue, [job], wait=False) == []
    assert "does not verify" in jobs.view(client, job).refused

    assert jobs.claim(client, job, 1, "box", 5.0, "secret-1") == "claimed"  # round 0's signature, replayed
    assert jobs.finish(client, job, "secret-1", "failed", round0)
    assert collect(store, ws, queue, [job], wait=False) == []
    assert "not the one this workspace issued" in jobs.view(client, job).refused
    assert store.evaluations.get(run_id).status == "queued"

    listed = json.loads(run_cli("jobs", "trusted-workers", "--json", home=home).stdout)
    assert [(r["fingerprint"], r["label"], r["revoked_at"]) for r in listed] == [(fingerprint_of(key), "box", None)]
    run_cli("jobs", "revoke-worker", fingerprint_of(key), home=home)
    assert jobs.claim(client, job, 2, "box", 5.0, "secret-2") == "claimed"
    assert jobs.finish(client, job, "secret-2", "failed", signed(2))
    assert collect(store, ws, queue, [job], wait=False) == []
    assert "does not trust" in jobs.view(client, job).refused
    run_cli("jobs", "trust-worker", str(pub), home=home)  # trusted again: its result for this round stands
    assert jobs.claim(client, job, 3, "box", 5.0, "secret-3") == "claimed"
    assert jobs.finish(client, job, "secret-3", "failed", signed(3))
    (record,) = collect(store, ws, queue, [job], wait=False)
    assert record.status == "failed" and record.queue == store.evaluations.get(run_id).queue


def test_a_path_traversal_digest_never_names_a_host_folder(redis_server, tmp_path):
    """``sha256:../../victim`` made the cache hand out any existing host folder as the model folder."""
    from dynadesk.queue.worker import check_digests

    victim = tmp_path / "victim"
    victim.mkdir()
    (victim / "secret.txt").write_text("host data")
    cache = BlobCache(tmp_path / "cache")
    with pytest.raises(TransferError, match="is not sha256:<64 hex digits>"):
        cache.model(redis_server.client(), [], "sha256:../../victim")
    payload = {"model": {"digest": "sha256:../../../DIR", "files": []}, "spec": "0" * 64, "data": []}
    with pytest.raises(QueueError, match=r"model digest 'sha256:\.\./\.\./\.\./DIR' is not sha256"):
        check_digests("j1", payload)
    with pytest.raises(QueueError, match="data file d.jsonl digest '../x' is not 64 hex"):
        check_digests("j1", {**payload, "model": {"digest": "sha256:" + "a" * 64, "files": []},
                             "data": [["d.jsonl", "../x"]]})


def test_a_cached_model_folder_is_verified_again_before_every_use(redis_server, tmp_path):
    from dynadesk.models.registry import tree_digest, tree_files

    client = redis_server.client()
    folder = tmp_path / "m"
    folder.mkdir()
    (folder / "a.json").write_text('{"w": 1}')
    files = put_tree(client, tree_files(folder))
    digest = tree_digest(folder)
    cache = BlobCache(tmp_path / "cache")
    cached = cache.model(client, files, digest)
    (cached / "a.json").chmod(0o644)
    (cached / "a.json").write_text('{"w": 666}')  # changed in the cache between two jobs
    again = cache.model(client, files, digest)
    assert (again / "a.json").read_text() == '{"w": 1}' and tree_digest(again) == digest


def test_oversized_job_limits_are_capped_and_a_traversal_digest_job_fails(redis_server, store, home, tmp_path):
    """A hostile coordinator's job asks for 4 TiB of memory, 100,000 pids, a 4 TiB tmpfs and a 7-day timeout: the
    worker runs it within its own maxima (printed at start, recorded in the run). Another job's model digest is
    a path: refused, no model folder made."""
    model = majority_workspace(store, tmp_path, size=6)
    ws = Workspace(home)
    queue = Queue.open(parse_broker(redis_server.url))
    huge = replace(default_limits(), memory_bytes=4 << 40, pids=100_000, tmpfs_bytes=4 << 40, timeout_s=7 * 86400.0)
    big, big_run = enqueue(store, ws, queue, run_request(model, runner="local", limits=huge,
                                                         min_seconds=MEASURED_WINDOW_S))
    bad, bad_run = enqueue(store, ws, queue, run_request(model, runner="local", min_seconds=MEASURED_WINDOW_S))
    payload = jobs.payload(queue.client, bad)
    payload["model"]["digest"] = "sha256:../../../DIR"
    queue.client.hset(f"dynadesk:job:{bad}", "payload", json.dumps(payload))
    worker = start_worker(redis_server, tmp_path / "w1", "w1", "--allow-unsandboxed", "--max-memory", "3",
                          "--max-pids", "512", "--max-tmpfs", "1", "--max-timeout", "900", lease=3.0)
    trust(store, worker)
    try:
        records = {r.id: r for r in collect(store, ws, queue, [big, bad], timeout_s=180)}
    finally:
        worker.stop()
    assert records[big_run].status == "succeeded", records[big_run].error
    limits = records[big_run].queue.limits
    assert (limits["memory_bytes"], limits["pids"], limits["tmpfs_bytes"], limits["timeout_s"]) == (
        3 * GIB, 512, GIB, 900.0)
    assert records[big_run].queue.maxima["memory_bytes"] == 3 * GIB
    assert "job limits capped at" in worker.text() and "3 GiB memory, 512 pids" in worker.text()
    assert records[bad_run].status == "failed" and "is not sha256:<64 hex digits>" in records[bad_run].error
    assert "not the payload this workspace sent" in records[bad_run].error  # the digest was edited on the broker
    assert not any(p.name.startswith("..") for p in (tmp_path / "w1" / "queue-cache" / "models").iterdir())
    assert job_states(redis_server)[bad]["state"] == "failed"


@pytest.mark.integration  # a redis-server of its own
def test_a_broker_that_needs_no_password_is_refused_at_worker_start(tmp_path):
    """The URL carries a password, but the server lets anyone in: the worker connects without it, sees that, and
    refuses to start with one line (before, it ran)."""
    exe = shutil.which("redis-server")
    assert exe
    from support.sync import free_port

    port = free_port()
    server = subprocess.Popen([exe, "--port", str(port), "--bind", "127.0.0.1", "--save", "", "--appendonly", "no"],
                              stdout=subprocess.DEVNULL, stderr=subprocess.STDOUT, cwd=tmp_path)
    try:
        import redis

        wait("redis-server", lambda: _pings(redis.Redis(host="127.0.0.1", port=port)), timeout=20, poll=0.1)
        proc = subprocess.run([*DYNADESK, "--home", str(tmp_path / "w"), "worker", "--broker",
                               f"redis://:any-password@127.0.0.1:{port}/0", "--allow-unsandboxed"],
                              capture_output=True, text=True, timeout=90)
    finally:
        server.terminate()
        server.wait(timeout=10)
    lines = proc.stderr.strip().splitlines()
    assert proc.returncode == 1 and len(lines) == 1, proc.stderr
    assert "accepts clients without a password" in lines[0] and "any-password" not in lines[0]


def _pings(client) -> bool:
    try:
        return bool(client.ping())
    except Exception:  # noqa: BLE001 - not up yet
        return False


@pytest.mark.integration  # a redis-server of its own
def test_a_password_protected_broker_passes_the_check(tmp_path):
    from dynadesk.queue.broker import refuse_anonymous

    server = start_redis(tmp_path / "r")
    try:
        refuse_anonymous(parse_broker(server.url))  # NOAUTH without the password: fine
    finally:
        server.proc.terminate()
        server.proc.wait(timeout=10)


def _queued_bag_of_words(redis_server, home, tmp_path, runner: str, *worker_args: str):
    """The demo's bag-of-words model queued to a trusted worker on ``runner``; its bundle names the worker and the
    key that signed its result, 'bundle show' and 'dynadesk audit' print it, and the audit passes. The run."""
    from support.eval import sentences
    from support.sync import workspace_with_key

    from dynadesk.models.bow import BowTraining, train_bag_of_words
    from dynadesk.models.registry import register_model
    from dynadesk.sync.client.create import create_bundle

    ws, store = workspace_with_key(home)
    train = [{"id": f"t{i}", "statement": s, "label": LABELS[i % 3]} for i, s in enumerate(sentences(60, 5))]
    train_bag_of_words(tmp_path / "bow", "sentiment", LABELS, ["statement"], train, BowTraining(epochs=2))
    register_model(store, tmp_path / "bow", "sentiment", name="bow")
    add_test_set(store, "set0-test", 12, seed=0)
    queue = Queue.open(parse_broker(redis_server.url))
    limits = default_limits(cpus=1.0, memory_bytes=2 << 30, timeout_s=600)
    request = run_request("bow", runner=runner, limits=limits, min_seconds=MEASURED_WINDOW_S)  # its bounds are judged
    job, run_id = enqueue(store, ws, queue, request)
    worker = start_worker(redis_server, tmp_path / "w1", "w1", *worker_args, lease=3.0)
    fpr = trust(store, worker)
    try:
        (record,) = collect(store, ws, queue, [job], timeout_s=600)
    finally:
        worker.stop()
    assert record.status == "succeeded", record.error
    bundle = create_bundle(ws, store, run_id)
    assert bundle.payload.to_json()["worker"] == {"name": "w1", "key_fingerprint": fpr}
    assert bundle.payload.to_json()["runner"] == {"kind": runner, "sandboxed": runner == "docker"}
    path = tmp_path / "b.json"
    path.write_bytes(bundle.raw)
    shown = run_cli("bundle", "show", str(path), home=home).stdout
    assert f"evaluated by queue worker w1  worker key {fpr}" in shown
    audit = run_cli("audit", str(path), home=home)
    assert audit.returncode == 0 and f"worker key {fpr}" in audit.stdout, audit.stdout
    store.close()
    return record


def test_a_queued_bag_of_words_run_bundle_names_the_worker_key_and_its_audit_passes(redis_server, home, tmp_path):
    record = _queued_bag_of_words(redis_server, home, tmp_path, "local", "--allow-unsandboxed")
    bounds = record.profile["host_bounds"]  # the worker's own view of its run, signed into its result
    assert bounds["memory"]["source"].startswith("process tree") and "throughput" in bounds["bounded"]


@pytest.mark.docker
@pytest.mark.timeout(1800)
def test_a_queued_bag_of_words_run_in_the_docker_sandbox_bundle_names_the_worker_key_and_its_audit_passes(
        redis_server, home, tmp_path, evaluator_image, docker_client):
    from support.queue import remove_containers

    try:
        record = _queued_bag_of_words(redis_server, home, tmp_path, "docker")
    finally:
        remove_containers(docker_client, tmp_path)
    assert record.sandboxed and record.image_id == evaluator_image.image_id
    bounds = record.profile["host_bounds"]
    assert bounds["memory"]["source"].startswith("cgroup") and bounds["loadgen"]["finished"]
    assert bounds["bounded"] == ["latency_p50_ms", "latency_p90_ms", "latency_p99_ms", "throughput",
                                 "throughput_batched", "memory"]


def test_a_bundle_worker_field_is_schema_checked_and_old_bundles_still_pass():
    from dynadesk.errors import BundleFormatError
    from dynadesk.sync.format.payload import parse_payload as check_payload

    with pytest.raises(BundleFormatError, match=r"payload.worker.key_fingerprint: has the wrong form"):
        check_payload({"worker": {"name": "w1", "key_fingerprint": "w1"}, **_minimal_payload()})
    with pytest.raises(BundleFormatError, match=r"payload.worker: unknown field\(s\) extra"):
        check_payload({"worker": {"name": "w1", "key_fingerprint": "sha256:" + "a" * 64, "extra": 1},
                       **_minimal_payload()})
    check_payload(_minimal_payload())  # no worker field: as every bundle made before it
    check_payload({"worker": {"name": "w1", "key_fingerprint": "sha256:" + "a" * 64}, **_minimal_payload()})


def _minimal_payload() -> dict:
    return {"created_at": "2026-01-01T00:00:00Z", "task": "sentiment", "model": {"name": "m", "digest": "sha256:"
            + "b" * 64}, "datasets": [{"name": "d", "split": "test", "digest": "sha256:" + "c" * 64, "size": 1}],
            "evaluator": {"image_digest": None, "version": "v"}, "runner": {"kind": "local", "sandboxed": False},
            "environment": {}, "seeds": {},
            "worker_settings": {"batch_size": 1, "device": "cpu", "deterministic": True, "seed": 0},
            "metrics": [{"dataset": "", "metric": "perf", "value": 1.0, "unit": "%", "deterministic": True}],
            "predictions": {"digest": "sha256:" + "d" * 64, "merkle_root": "e" * 64, "count": 1},
            "submitter": {"key_fingerprint": "sha256:" + "f" * 64}, "evaluation_id": 1}
