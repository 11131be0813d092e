"""Job records and leases in Redis: what makes a job run once, and a dead worker's job run again.

A job is the hash ``dynadesk:job:<id>`` (state, attempt, worker, heartbeat, progress, payload,
result). Celery only delivers "run job X, attempt N"; whether that delivery may run is
decided here, atomically (Lua):

* **claim** — only a ``queued`` job whose attempt matches the message's, and only by taking
  the lease ``dynadesk:lease:<id>`` (``SET NX`` with a TTL). The lease holds the sha1 of a
  secret the claiming worker drew for this claim, never its public name: heartbeat and finish
  must show the secret. (The lease keeps two honest workers apart; it proves nothing to the
  coordinator, which checks the signed payload digest and the answer to its own challenge,
  ``challenge`` in the job hash: see :mod:`dynadesk.queue.identity`.) A second delivery of the same
  message (Celery's visibility timeout, a restored unacked message) finds the job running or
  the attempt stale and is dropped: a running job never runs twice.
* **heartbeat** — the worker renews its lease every few seconds and writes its progress; a
  cancel request is read back in the same call.
* **reap** — a ``running`` job whose lease has expired (its worker died, or lost the broker)
  goes back to ``queued`` with attempt N+1 and a new message is sent; the late result of
  attempt N, should its worker come back, is refused by **finish**, so no duplicate run.

Until reaped, a running job without a lease is shown as ``stuck`` (see :func:`view`).
"""

from __future__ import annotations

import json
import time
import uuid
from dataclasses import dataclass
from typing import Any

from dynadesk.errors import NotFoundError, QueueError
from dynadesk.queue.broker import RedisClient, key

STATES = ("queued", "running", "succeeded", "failed", "cancelled")
FINAL = ("succeeded", "failed", "cancelled")
JOB_TTL_S = 30 * 86400

CLAIM = """
local state = redis.call('HGET', KEYS[1], 'state')
if not state then return 'missing' end
if state ~= 'queued' then return state end
if redis.call('HGET', KEYS[1], 'attempt') ~= ARGV[1] then return 'stale' end
if redis.call('HGET', KEYS[1], 'cancel') == '1' then
  redis.call('HSET', KEYS[1], 'state', 'cancelled', 'finished', ARGV[4])
  redis.call('SREM', KEYS[3], ARGV[5])
  return 'cancelled'
end
local lease = redis.sha1hex(ARGV[6])
if not redis.call('SET', KEYS[2], lease, 'NX', 'PX', ARGV[3]) then return 'leased' end
redis.call('HSET', KEYS[1], 'state', 'running', 'worker', ARGV[2], 'started', ARGV[4], 'heartbeat', ARGV[4],
           'lease_ms', ARGV[3], 'progress', '', 'lease_id', lease, 'result', '')
redis.call('SADD', KEYS[3], ARGV[5])
return 'claimed'
"""

HEARTBEAT = """
if redis.call('GET', KEYS[2]) ~= redis.sha1hex(ARGV[1]) then return 'lost' end
redis.call('PEXPIRE', KEYS[2], ARGV[2])
redis.call('HSET', KEYS[1], 'heartbeat', ARGV[3])
if ARGV[4] ~= '' then redis.call('HSET', KEYS[1], 'progress', ARGV[4]) end
if redis.call('HGET', KEYS[1], 'cancel') == '1' then return 'cancel' end
return 'ok'
"""

FINISH = """
if redis.call('GET', KEYS[2]) ~= redis.sha1hex(ARGV[1]) then return 'lost' end
if redis.call('HGET', KEYS[1], 'state') ~= 'running' then return 'lost' end
redis.call('HSET', KEYS[1], 'state', ARGV[2], 'result', ARGV[3], 'finished', ARGV[4])
redis.call('DEL', KEYS[2])
redis.call('SREM', KEYS[3], ARGV[5])
return 'ok'
"""

REAP = """
if redis.call('HGET', KEYS[1], 'state') ~= 'running' then return 0 end
if redis.call('EXISTS', KEYS[2]) == 1 then return 0 end
local attempt = redis.call('HINCRBY', KEYS[1], 'attempt', 1)
local dead = redis.call('HGET', KEYS[1], 'worker') or ''
local beat = tonumber(redis.call('HGET', KEYS[1], 'heartbeat') or '') or tonumber(ARGV[2])
local why = string.format('the lease of worker %s expired (its last heartbeat was %.1f s ago: it died, froze or ' ..
                          'lost the broker); attempt %d runs anew', dead, tonumber(ARGV[2]) - beat, attempt)
redis.call('HSET', KEYS[1], 'state', 'queued', 'worker', '', 'requeued_from', dead, 'progress', '',
           'requeued_why', why)
redis.call('SREM', KEYS[3], ARGV[1])
return attempt
"""

REQUEUE = """
local state = redis.call('HGET', KEYS[1], 'state')
if state ~= 'succeeded' and state ~= 'failed' and state ~= 'cancelled' then return 0 end
local attempt = redis.call('HINCRBY', KEYS[1], 'attempt', 1)
local who = redis.call('HGET', KEYS[1], 'worker') or ''
redis.call('HSET', KEYS[1], 'state', 'queued', 'worker', '', 'requeued_from', who, 'progress', '', 'result', '',
           'lease_id', '', 'refused', ARGV[1], 'requeued_why', 'its result was refused: ' .. ARGV[1],
           'challenge', ARGV[2])
redis.call('DEL', KEYS[2])
return attempt
"""

CANCEL = """
local state = redis.call('HGET', KEYS[1], 'state')
if not state then return 'missing' end
redis.call('HSET', KEYS[1], 'cancel', '1')
if state == 'queued' then
  redis.call('HSET', KEYS[1], 'state', 'cancelled', 'finished', ARGV[1])
  return 'cancelled'
end
return state
"""


def _job_key(job_id: str) -> str:
    return key("job", job_id)


def _lease_key(job_id: str) -> str:
    return key("lease", job_id)


RUNNING_SET = key("running")
ALL_JOBS = key("jobs")


def new_job(client: RedisClient, payload: dict[str, Any], run_id: int, workspace: str, requeued_why: str = "",
            challenge: str = "") -> str:
    """Record a queued job (attempt 0) and return its id; the caller then sends its Celery message. ``challenge``
    is the coordinator's for this round: the worker signs it back (public; the coordinator keeps its own copy)."""
    job_id = uuid.uuid4().hex[:12]
    now = time.time()
    client.hset(_job_key(job_id), mapping={
        "id": job_id, "state": "queued", "attempt": 0, "run_id": run_id, "workspace": workspace,
        "model": payload["request"]["model"], "created": now, "payload": json.dumps(payload), "cancel": 0,
        "worker": "", "heartbeat": "", "progress": "", "requeued_why": requeued_why, "challenge": challenge})
    client.expire(_job_key(job_id), JOB_TTL_S)
    client.zadd(ALL_JOBS, {job_id: now})
    return job_id


def claim(client: RedisClient, job_id: str, attempt: int, worker: str, lease_s: float, secret: str) -> str:
    """``claimed``, or why not: ``stale`` / ``running`` / ``cancelled`` / a final state / ``missing``.

    ``worker`` is only shown (``jobs list``); the lease is held by ``secret``, drawn for this claim."""
    out = client.eval(CLAIM, 3, _job_key(job_id), _lease_key(job_id), RUNNING_SET, str(attempt), worker,
                      str(int(lease_s * 1000)), str(time.time()), job_id, secret)
    return _text(out)


def heartbeat(client: RedisClient, job_id: str, secret: str, lease_s: float, progress: dict[str, Any] | None) -> str:
    """Renew the lease; ``ok``, ``cancel`` (someone asked to cancel) or ``lost`` (the lease is gone)."""
    out = client.eval(HEARTBEAT, 2, _job_key(job_id), _lease_key(job_id), secret, str(int(lease_s * 1000)),
                      str(time.time()), json.dumps(progress) if progress else "")
    return _text(out)


def finish(client: RedisClient, job_id: str, secret: str, state: str, result: dict[str, Any]) -> bool:
    """Record the result while still holding the lease; False when the lease was lost (result discarded)."""
    if state not in FINAL:
        raise QueueError(f"a job finishes as one of {', '.join(FINAL)}, not '{state}'")
    out = client.eval(FINISH, 3, _job_key(job_id), _lease_key(job_id), RUNNING_SET, secret, state,
                      json.dumps(result), str(time.time()), job_id)
    return _text(out) == "ok"


def reap(client: RedisClient) -> list[tuple[str, int]]:
    """Re-queue every running job whose lease expired; returns (job, new attempt) to send messages for."""
    out = []
    for raw in client.smembers(RUNNING_SET):
        job_id = _text(raw)
        attempt = client.eval(REAP, 3, _job_key(job_id), _lease_key(job_id), RUNNING_SET, job_id, str(time.time()))
        if attempt:
            out.append((job_id, int(attempt)))
    return out


def requeue(client: RedisClient, job_id: str, why: str, challenge: str = "") -> int:
    """Put a finished job whose result was refused back in the queue with the coordinator's new ``challenge``;
    its new attempt (0: it was not final)."""
    return int(client.eval(REQUEUE, 2, _job_key(job_id), _lease_key(job_id), why[:500], challenge))


def give_up(client: RedisClient, job_id: str, why: str) -> None:
    """Mark a job whose results were refused too often as failed on the broker too (``jobs list`` shows why)."""
    client.hset(_job_key(job_id), mapping={"state": "failed", "refused": why[:500], "requeued_why": ""})


def challenge(client: RedisClient, job_id: str) -> str:
    """The challenge published for the job's current round ('' for a job sent before there were any)."""
    raw = client.hget(_job_key(job_id), "challenge")
    return _text(raw) if raw is not None else ""


def cancel(client: RedisClient, job_id: str) -> str:
    """Ask for a job to stop: a queued one is cancelled now; a running one by its worker's next heartbeat."""
    out = _text(client.eval(CANCEL, 1, _job_key(job_id), str(time.time())))
    if out == "missing":
        raise NotFoundError(f"no job '{job_id}' on this broker (see 'dynadesk jobs list')")
    return out


def payload(client: RedisClient, job_id: str) -> dict[str, Any]:
    raw = client.hget(_job_key(job_id), "payload")
    if raw is None:
        raise NotFoundError(f"no job '{job_id}' on this broker")
    data: dict[str, Any] = json.loads(raw)
    return data


@dataclass(frozen=True)
class JobView:
    """One job as ``dynadesk jobs list`` shows it; ``shown_state`` is ``stuck`` for a running job with no lease."""

    id: str
    state: str
    attempt: int
    model: str
    run_id: int
    workspace: str
    worker: str
    heartbeat: float | None
    progress: dict[str, Any]
    leased: bool
    result: dict[str, Any] | None
    requeued_from: str
    cancel_requested: bool
    created: float
    lease_id: str = ""
    refused: str = ""
    requeued_why: str = ""  # why the job runs again: a dead worker's lease expired, or its result was refused

    @property
    def shown_state(self) -> str:
        return "stuck" if self.state == "running" and not self.leased else self.state

    def to_dict(self) -> dict[str, Any]:
        return {"id": self.id, "state": self.shown_state, "attempt": self.attempt, "model": self.model,
                "run_id": self.run_id, "worker": self.worker, "heartbeat": self.heartbeat,
                "progress": self.progress, "requeued_from": self.requeued_from,
                "cancel_requested": self.cancel_requested, "refused": self.refused,
                "requeued_why": self.requeued_why}


def view(client: RedisClient, job_id: str) -> JobView:
    data = {_text(k): _text(v) for k, v in client.hgetall(_job_key(job_id)).items()}
    if not data:
        raise NotFoundError(f"no job '{job_id}' on this broker (see 'dynadesk jobs list')")
    return JobView(
        id=job_id, state=data.get("state", "?"), attempt=int(data.get("attempt") or 0), model=data.get("model", ""),
        run_id=int(data.get("run_id") or 0), workspace=data.get("workspace", ""), worker=data.get("worker", ""),
        heartbeat=float(data["heartbeat"]) if data.get("heartbeat") else None,
        progress=json.loads(data["progress"]) if data.get("progress") else {},
        leased=bool(client.exists(_lease_key(job_id))),
        result=json.loads(data["result"]) if data.get("result") else None,
        requeued_from=data.get("requeued_from", ""), cancel_requested=data.get("cancel") == "1",
        created=float(data.get("created") or 0), lease_id=data.get("lease_id", ""), refused=data.get("refused", ""),
        requeued_why=data.get("requeued_why", ""))


def list_jobs(client: RedisClient, limit: int = 100) -> list[JobView]:
    """The newest ``limit`` jobs, newest first (expired records are dropped from the index)."""
    out = []
    for raw in client.zrevrange(ALL_JOBS, 0, limit - 1):
        job_id = _text(raw)
        try:
            out.append(view(client, job_id))
        except NotFoundError:
            client.zrem(ALL_JOBS, job_id)
    return out


def _text(value: Any) -> str:
    return value.decode() if isinstance(value, bytes) else str(value)


def list_workers(client: RedisClient) -> list[dict[str, Any]]:
    """The workers that announced themselves within their last three leases (name, host, job, seen ...)."""
    out = []
    for raw in client.scan_iter(match=key("worker", "*"), count=500):
        body = client.get(raw)
        if body is not None:
            out.append(json.loads(body))
    return sorted(out, key=lambda w: str(w.get("name")))
