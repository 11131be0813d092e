"""Jobs bound end to end, attacked on a real redis-server by a process holding only the broker password.

* the coordinator keeps (in its own store) the digest of every job payload it sends and a challenge per send;
  the worker signs the digest of the payload it actually ran and its answer to the challenge; both are compared
  with the coordinator's copy, never the broker's: a model swapped or limits rewritten on the broker, or an old
  signed result replayed with the broker's attempt and lease rewritten to match, is refused;
* a refused result is retried a bounded number of times, then the run fails naming why.
"""

from __future__ import annotations

import json

from support.eval import LABELS, MEASURED_WINDOW_S, run_request
from support.queue import majority_workspace, start_worker, trust

from dynadesk.models.bow import write_majority
from dynadesk.models.registry import tree_digest, tree_files
from dynadesk.queue import jobs
from dynadesk.queue.broker import parse_broker
from dynadesk.queue.coordinator import MAX_REFUSALS, Queue, collect, enqueue
from dynadesk.queue.identity import fingerprint_of, lease_id, load_or_create, sign
from dynadesk.queue.transfer import put_tree
from dynadesk.store import worker_keys
from dynadesk.sync.format.keys import public_raw
from dynadesk.workspace import Workspace


def _rewrite_payload(client, job: str, edit) -> None:
    """What the broker-password holder does between enqueue and the worker's claim: edit the job's payload."""
    payload = json.loads(client.hget(f"dynadesk:job:{job}", "payload"))
    edit(payload)
    client.hset(f"dynadesk:job:{job}", "payload", json.dumps(payload))


def test_a_model_swap_and_a_limits_rewrite_on_the_broker_are_refused_and_their_runs_fail(
        redis_server, store, home, tmp_path, monkeypatch):
    """Job A's model files and digest are replaced on the broker by another model's; job B's limits are
    rewritten; job C is left alone. Before, the trusted worker ran the other model (and the rewritten limits),
    signed, and the coordinator stored succeeded runs of the original model with the other model's predictions.
    Now A and B are refused (the signed payload digest is not the coordinator's), retried a bounded number of
    times (none here, to keep the suite quick: the retries are the untrusted-worker test's), then fail naming why;
    C succeeds."""
    from dynadesk.queue import coordinator

    monkeypatch.setattr(coordinator, "MAX_REFUSALS", 0)
    model = majority_workspace(store, tmp_path, size=6)  # answers 'positive'
    other = tmp_path / "models" / "other"
    write_majority(other, "sentiment", LABELS, ["statement"], ["negative"] * 3)
    ws = Workspace(home)
    queue = Queue.open(parse_broker(redis_server.url))
    request = run_request(model, runner="local", min_seconds=MEASURED_WINDOW_S)
    swapped, swapped_run = enqueue(store, ws, queue, request)
    rewritten, rewritten_run = enqueue(store, ws, queue, request)
    honest, honest_run = enqueue(store, ws, queue, request)
    attacker = redis_server.client()  # the password, nothing else

    def swap(payload):
        payload["model"]["files"] = put_tree(attacker, tree_files(other))
        payload["model"]["digest"] = tree_digest(other)

    def limits(payload):
        payload["request"]["limits"]["pids"] = 321
        payload["request"]["limits"]["cpus"] = 0.5

    _rewrite_payload(attacker, swapped, swap)
    _rewrite_payload(attacker, rewritten, limits)
    worker = start_worker(redis_server, tmp_path / "w1", "w1", "--allow-unsandboxed", lease=3.0)
    trust(store, worker)
    try:
        records = {r.id: r for r in collect(store, ws, queue, [swapped, rewritten, honest], timeout_s=300)}
    finally:
        worker.stop()
    assert records[honest_run].status == "succeeded", records[honest_run].error
    for run_id, job in ((swapped_run, swapped), (rewritten_run, rewritten)):
        record = records[run_id]
        assert record.status == "failed", (record.status, record.queue, record.predictions_digest)
        assert f"job {job}: its result was refused 1 times (retried at most 0 times)" in record.error, record.error
        assert "not the payload this workspace sent" in record.error, record.error
        view = jobs.view(queue.client, job)
        assert view.attempt == 0 and view.state == "failed" and "not the payload" in view.refused  # not run again
    assert records[swapped_run].predictions_digest is None
    assert records[honest_run].queue.limits["pids"] == request.limits.pids


def _refused_then_replayed(redis_server, store, home, tmp_path, forge):
    """A job refused once for a key this workspace did not trust yet; the operator then trusts the key; ``forge``
    writes a result on the broker. What ``collect`` did with it: (view, run record)."""
    majority_workspace(store, tmp_path, size=6)
    ws = Workspace(home)
    queue = Queue.open(parse_broker(redis_server.url))
    client = queue.client
    job, run_id = enqueue(store, ws, queue, run_request("maj", runner="local", min_seconds=MEASURED_WINDOW_S))
    key = load_or_create(tmp_path / "box")
    payload = jobs.payload(client, job)
    body = {"error": "x", "verdict": "error", "job": job, "request": payload["request"],
            "payload_digest": _digest(payload)}
    challenge0 = _challenge(client, job)
    assert jobs.claim(client, job, 0, "box", 5.0, "secret-0") == "claimed"
    genuine = sign(key, {**body, "attempt": 0, "lease": lease_id("secret-0"), "challenge": challenge0,
                         "state": "failed"})
    assert jobs.finish(client, job, "secret-0", "failed", genuine)
    assert collect(store, ws, queue, [job], wait=False) == []
    assert "does not trust" in jobs.view(client, job).refused
    worker_keys.trust(store, fingerprint_of(key), public_raw(key).hex(), "box")
    forge(client, job, key, body, genuine, challenge0)
    collect(store, ws, queue, [job], wait=False)
    return jobs.view(client, job), store.evaluations.get(run_id)


def _digest(payload):
    from dynadesk.canonical import digest

    return digest(payload)


def _challenge(client, job) -> str:
    raw = client.hget(f"dynadesk:job:{job}", "challenge")
    return raw.decode() if raw else ""


def test_an_old_signed_result_replayed_with_the_brokers_attempt_and_lease_rewritten_is_refused(
        redis_server, store, home, tmp_path):
    """Before, the coordinator checked the signed attempt and lease id against the broker's job hash, which the
    password holder rewrites: an earlier (refused) result of a now-trusted key, put back with attempt 0 and its
    public lease id, was stored. Now the claim proof answers the coordinator's own challenge, renewed at each
    refusal: the replay is refused."""
    def replay(client, job, key, body, genuine, challenge0):
        client.hset(f"dynadesk:job:{job}", mapping={"state": "failed", "attempt": 0, "lease_id": lease_id("secret-0"),
                                                   "challenge": challenge0, "result": json.dumps(genuine)})

    view, record = _refused_then_replayed(redis_server, store, home, tmp_path, replay)
    assert record.status == "queued", (record.status, record.error)
    assert "challenge" in view.refused and "not the one this workspace issued" in view.refused, view.refused


def test_a_claim_proof_made_of_the_public_lease_id_and_a_broker_written_challenge_is_refused(
        redis_server, store, home, tmp_path):
    """The password holder writes a challenge of its own into the job hash and has a trusted key answer it with
    the lease id it read from the hash: the coordinator compares with its own challenge, and refuses."""
    def forged(client, job, key, body, genuine, challenge0):
        client.hset(f"dynadesk:job:{job}", mapping={"state": "running", "attempt": 1, "challenge": "f" * 64})
        public_lease = lease_id("anything")
        client.hset(f"dynadesk:job:{job}", "lease_id", public_lease)
        result = sign(key, {**body, "attempt": 1, "lease": public_lease, "challenge": "f" * 64, "state": "failed"})
        client.hset(f"dynadesk:job:{job}", mapping={"state": "failed", "result": json.dumps(result)})

    view, record = _refused_then_replayed(redis_server, store, home, tmp_path, forged)
    assert record.status == "queued", (record.status, record.error)
    assert "not the one this workspace issued" in view.refused, view.refused


def test_an_untrusted_workers_results_are_retried_a_bounded_number_of_times_then_the_run_fails(
        redis_server, store, home, tmp_path, monkeypatch):
    """Before, a result refused for an untrusted worker key was queued again without limit (attempt 196 after two
    minutes). Now the run fails after MAX_REFUSALS retries (3; 1 here, to keep the suite quick), naming the key
    and the next step."""
    from dynadesk.queue import coordinator

    assert MAX_REFUSALS == 3
    monkeypatch.setattr(coordinator, "MAX_REFUSALS", 1)
    majority_workspace(store, tmp_path, size=6)
    ws = Workspace(home)
    queue = Queue.open(parse_broker(redis_server.url))
    job, run_id = enqueue(store, ws, queue, run_request("maj", runner="local", min_seconds=MEASURED_WINDOW_S))
    worker = start_worker(redis_server, tmp_path / "w1", "w1", "--allow-unsandboxed", lease=3.0)
    try:
        (record,) = collect(store, ws, queue, [job], timeout_s=150, poll_s=0.3)
    finally:
        worker.stop()
    assert record.id == run_id and record.status == "failed"
    assert f"job {job}: its result was refused 2 times (retried at most 1 times)" in record.error, record.error
    assert "which this workspace does not trust" in record.error and "trust-worker" in record.error
    view = jobs.view(queue.client, job)
    assert view.attempt == 1 and view.state == "failed"  # attempts 0 and 1, no more
    assert store.evaluations.get(run_id).status == "failed"
