"""The coordinating workspace's side: enqueue a run, then collect what a worker sent back into it.

A queued run is an ordinary run of this workspace from the start: :func:`enqueue` creates its
record (status ``queued``) and run folder exactly as a local evaluation does, puts the spec,
data files and model files on the broker by sha256 and sends one job. :func:`collect` stores
a finished job's predictions, metrics and environment through the same code as a local run,
once: a run that is no longer ``queued`` is never written again, so a job can produce at most
one run. The worker, its host, hardware class and attempt are recorded in the run's
:class:`~dynadesk.store.evaluations.QueuePlacement` (``record.queue``), and the run ends in the same
:func:`~dynadesk.orchestration.evaluate.finish_run` as a local one.

The coordinator keeps its own copy of every job it sends (:mod:`dynadesk.store.queue_jobs`: the run, the
payload's digest, the round's challenge), never trusting the broker's. Only a result signed by a worker key this
workspace trusts, for this job, having run exactly the payload sent and answered the round's challenge, is stored
(:func:`~dynadesk.queue.identity.verify`); any other is refused and the job queued again with a new challenge, at
most :data:`MAX_REFUSALS` times, then its run fails naming why. So a process holding only the broker password can
neither make a run, nor swap the model, data or limits of one, nor replay an earlier result. The signing key's
fingerprint is ``record.queue.worker_key``.
"""

from __future__ import annotations

import json
import shutil
import socket
import time
from collections.abc import Callable
from dataclasses import dataclass, replace
from pathlib import Path
from typing import TYPE_CHECKING, Any

from dynadesk.errors import BrokerUnavailable, NotFoundError, QueueError
from dynadesk.progress import ProgressEvent, render_progress
from dynadesk.queue import jobs
from dynadesk.queue.broker import BrokerURL, RedisClient, connect, translated
from dynadesk.queue.tasks import make_app, send_job
from dynadesk.queue.transfer import BlobCache, put_file, put_tree
from dynadesk.store import queue_jobs
from dynadesk.store.evaluations import ImageBuild, QueuePlacement, RunChange

if TYPE_CHECKING:
    from dynadesk.cancel import CancelToken
    from dynadesk.progress import ProgressFn
    from dynadesk.store import Store
    from dynadesk.workspace import Workspace

JobWatch = Callable[[jobs.JobView], None]  # told each change of a job the coordinator waits on


@dataclass
class Queue:
    """A broker connection and its Celery app, opened once for a command."""

    broker: BrokerURL
    client: RedisClient
    app: Any

    @classmethod
    def open(cls, broker: BrokerURL) -> Queue:
        return cls(broker, connect(broker), make_app(broker))

    def send(self, job_id: str, attempt: int) -> None:
        with translated(self.broker):
            send_job(self.app, job_id, attempt)

    def requeue_expired(self) -> list[tuple[str, int]]:
        """Re-queue running jobs whose worker stopped renewing its lease (and send their new messages)."""
        with translated(self.broker):
            reaped = jobs.reap(self.client)
        for job_id, attempt in reaped:
            self.send(job_id, attempt)
        return reaped


def workspace_id(workspace: Workspace) -> str:
    """Which workspace owns a job: results are collected only into the workspace that queued it."""
    return f"{socket.gethostname()}:{Path(workspace.home).resolve()}"


def enqueue(store: Store, workspace: Workspace, queue: Queue, request: Any) -> tuple[str, int]:
    """Create the run (``queued``) and its folder, put its inputs on the broker, send the job: (job id, run id)."""
    from dynadesk.orchestration.evaluate import create_run, make_runner

    run_id, folder, model = create_run(store, workspace, request, make_runner(request))  # nothing connects here
    return send_run(store, workspace, queue, run_id, folder, model, request), run_id


def send_run(store: Store, workspace: Workspace, queue: Queue, run_id: int, folder: Any, model: Any, request: Any,
             why: str = "") -> str:
    """Put a queued run's inputs on the broker and send its job; the job id (``why``: why it is sent again)."""
    from dynadesk.evaluator.schema import evaluator_version
    from dynadesk.models.registry import tree_files
    from dynadesk.queue.identity import new_challenge, payload_digest

    challenge = new_challenge()
    with translated(queue.broker):
        spec = put_file(queue.client, folder.spec_file)
        data = [[p.name, put_file(queue.client, p)] for p in sorted(folder.data_dir.iterdir())]
        files = put_tree(queue.client, tree_files(Path(model.path)))
        payload = {"request": request.to_dict(), "spec": spec, "data": data, "run_id": run_id,
                   "model": {"name": model.name, "digest": model.digest, "files": files},
                   "evaluator_version": evaluator_version()}
        sent = payload_digest(json.loads(json.dumps(payload)))  # as the worker reads it back
        job_id = jobs.new_job(queue.client, payload, run_id, workspace_id(workspace), requeued_why=why,
                              challenge=challenge)
    queue_jobs.record(store, job_id, run_id, sent, challenge)  # our copy, before any worker is told of the job
    store.evaluations.update(run_id, RunChange(run_dir=str(folder.root), evaluator_version=evaluator_version(),
                                               queue=QueuePlacement(job=job_id, requeued_why=why or None)))
    queue.send(job_id, 0)
    return job_id


def collect(store: Store, workspace: Workspace, queue: Queue, job_ids: list[str], *, wait: bool = True,
            progress: JobWatch | None = None, poll_s: float = 1.0, timeout_s: float | None = None) -> list[Any]:
    """Store every finished job of ``job_ids`` as its run; with ``wait``, until all are final (re-queuing the jobs
    of dead workers meanwhile). Returns the runs collected now."""
    pending = list(dict.fromkeys(job_ids))
    done: list[Any] = []
    seen: dict[str, tuple[str, Any]] = {}
    deadline = None if timeout_s is None else time.monotonic() + timeout_s
    outage_since: float | None = None
    while pending:
        try:
            _collect_once(store, workspace, queue, pending, done, seen, progress)
            outage_since = None
        except BrokerUnavailable:
            # a broker restart (redis-server crashed, or restarted for an upgrade) is waited out: the jobs and
            # their results are on it (docs/operators.md: appendonly), and nothing was stored for a job half-way
            outage_since = outage_since or time.monotonic()
            if not wait or time.monotonic() - outage_since > BROKER_OUTAGE_S:
                raise
        if not pending or not wait:
            break
        if deadline is not None and time.monotonic() > deadline:
            raise QueueError(f"jobs {', '.join(pending)} did not finish within {timeout_s:g} s "
                             "(see 'dynadesk jobs list')")
        time.sleep(poll_s)
    return done


BROKER_OUTAGE_S = 300.0
"""How long a waiting :func:`collect` rides out an unreachable broker before it gives up (then it raises)."""


def _collect_once(store: Store, workspace: Workspace, queue: Queue, pending: list[str], done: list[Any],
                  seen: dict[str, tuple[str, Any]], progress: JobWatch | None) -> None:
    """One pass over the pending jobs: re-queue dead workers' jobs, store each final one (removed from
    ``pending``). A broker error part-way leaves the rest pending; a stored run is never written again."""
    queue.requeue_expired()
    for job_id in list(pending):
        try:
            with translated(queue.broker):
                view = jobs.view(queue.client, job_id)
        except NotFoundError:
            again = requeue_lost_job(store, workspace, queue, job_id)
            pending.remove(job_id)
            if again:
                pending.append(again)
            continue
        sent = queue_jobs.get(store, job_id)  # our own copy: the job's run, payload digest and challenge
        if sent is not None:
            view = replace(view, run_id=sent.run_id)  # the run is ours to name, not the broker's
        elif view.workspace != workspace_id(workspace):
            raise QueueError(f"job {job_id} was queued by workspace {view.workspace}, not this one")
        if progress and seen.get(job_id) != (view.shown_state, view.progress.get("overall_done")):
            seen[job_id] = (view.shown_state, view.progress.get("overall_done"))
            progress(view)
        if view.state in jobs.FINAL:
            refused, failed = refuse_unsigned(store, queue, view, sent)
            if failed is not None:  # refused too often: the run failed, naming why
                done.append(failed)
                pending.remove(job_id)
                continue
            if refused:
                if progress:
                    progress(view)
                continue
            record = store_result(store, workspace, queue, view)
            if record is not None:
                done.append(record)
            pending.remove(job_id)


def requeue_lost_job(store: Store, workspace: Workspace, queue: Queue, job_id: str) -> str | None:
    """A job this workspace queued is gone from the broker (it lost its data: restarted without persistence, or
    the record expired). Its run, if still ``queued``, is sent again as a new job from the run's own folder and
    request, the new job saying why; the new job's id (None: the run was stored already). A worker still running
    the lost job can no longer finish it (its lease went with the broker), so the run is stored once."""
    from dynadesk.orchestration.folder import RunFolder
    from dynadesk.orchestration.request import RunRequest

    for record in store.evaluations.list(limit=100_000):
        if record.queue is None or record.queue.job != job_id:
            continue
        if record.status != "queued":
            return None  # stored already; its job record may expire
        request = RunRequest.from_dict(record.request)
        why = (f"job {job_id} of run {record.id} was gone from broker {queue.broker.shown} (the broker lost its "
               "data: restarted without persistence? docs/operators.md recommends appendonly yes); sent again")
        return send_run(store, workspace, queue, record.id, RunFolder.stored(record.run_dir, record.id),
                        store.models.get(request.model), request, why=why)
    raise QueueError(f"no job '{job_id}' on broker {queue.broker.shown} and no queued run of this workspace names it"
                     " (see 'dynadesk jobs list')")


MAX_REFUSALS = 3
"""How many times a job whose result was refused is sent again; the next refusal fails its run, naming why."""


def refuse_unsigned(store: Store, queue: Queue, view: jobs.JobView,
                    sent: queue_jobs.SentJob | None) -> tuple[str, Any]:
    """Why this final job's result does not stand ('' when it does), after queuing the job again with a new
    challenge, or -- refused more than :data:`MAX_REFUSALS` times, or a job this workspace has no copy of --
    failing its run: (why, the failed run or None). Checked against ``sent``, this workspace's own copy."""
    from dynadesk.queue.identity import ResultRefused, new_challenge, verify

    if view.state == "cancelled" and not view.result:  # cancelled here before any worker claimed it
        return "", None
    if store.evaluations.get(view.run_id).status != "queued":
        return "", None  # stored already: store_result ignores it
    if sent is None:
        why = (f"job {view.id}: this workspace kept no copy of the payload it sent (queued before jobs were bound,"
               " or not by this workspace), so no result of it can be checked; evaluate the model again")
        return why, _give_up(store, queue, view, why)
    try:
        verify(store, view.result or {}, job=view.id, payload=sent.payload_digest, challenge=sent.challenge,
               state=view.state)
        return "", None
    except ResultRefused as exc:
        why = str(exc)
    challenge = new_challenge()
    count = queue_jobs.refused(store, view.id, why, challenge)
    if count > MAX_REFUSALS:
        return why, _give_up(store, queue, view, f"job {view.id}: its result was refused {count} times (retried "
                                                 f"at most {MAX_REFUSALS} times); the last: {why}")
    with translated(queue.broker):
        attempt = jobs.requeue(queue.client, view.id, why, challenge)
    if attempt:
        queue.send(view.id, attempt)
    return why, None


def _give_up(store: Store, queue: Queue, view: jobs.JobView, why: str) -> Any:
    """Fail the job's (still queued) run with ``why``, and mark the job failed on the broker; the run."""
    from dynadesk.store.datasets import now_iso

    store.evaluations.transition(view.run_id, "failed", RunChange(verdict="refused", finished_at=now_iso(), error=why))
    with translated(queue.broker):
        jobs.give_up(queue.client, view.id, why)
    return store.evaluations.get(view.run_id)


def store_result(store: Store, workspace: Workspace, queue: Queue, view: jobs.JobView) -> Any:
    """Write a final job into its run, once; None when the run was already stored (or is not ours)."""
    from dynadesk.orchestration.evaluate import finish_run  # the local runs' one end
    from dynadesk.orchestration.folder import RunFolder
    from dynadesk.orchestration.runner_base import RunOutcome
    from dynadesk.store.datasets import now_iso

    record = store.evaluations.get(view.run_id)
    if record.status != "queued":
        return None
    result = view.result or {}
    now = now_iso()
    if view.state == "cancelled" and "outcome" not in result:
        store.evaluations.transition(view.run_id, "cancelled",
                                     RunChange(verdict="cancelled", finished_at=now,
                                               error=f"job {view.id} was cancelled before a worker started it"))
        return store.evaluations.get(view.run_id)
    if "outcome" not in result:
        store.evaluations.transition(view.run_id, "failed",
                                     RunChange(verdict=result.get("verdict", "error"), finished_at=now,
                                               error=f"job {view.id} on worker {result.get('worker') or '?'}: "
                                                     f"{result.get('error', 'no result')}"))
        return store.evaluations.get(view.run_id)
    folder = RunFolder.stored(record.run_dir, record.id)
    folder.out_dir.mkdir(exist_ok=True)
    cache = BlobCache(Path(workspace.cache_dir) / "queue")
    with translated(queue.broker):
        for name, hexd in sorted(result.get("files", {}).items()):
            if "/" in name or name.startswith("."):
                raise QueueError(f"job {view.id}: the worker sent a result file named '{name}'")
            fetched = cache.blob(queue.client, hexd)
            shutil.copyfile(fetched, folder.out_dir / name)
            fetched.unlink()  # the run folder keeps the file; the cache is only the verified landing place
    placement = QueuePlacement(
        job=view.id, attempt=result.get("attempt", view.attempt), worker=result.get("worker"), host=result.get("host"),
        hardware_class=result.get("hardware_class"), requeued_from=view.requeued_from or None,
        requeued_why=view.requeued_why or None,
        worker_key=worker_key_of(result), limits=result.get("limits"), maxima=result.get("maxima"))
    build = ImageBuild.from_dict(result["image_build"]) if result.get("image_build") else record.image_build
    o = result["outcome"]
    outcome = RunOutcome.from_wire(o)  # its observation: the signing worker's view of the run
    store.evaluations.transition(view.run_id, "running", RunChange(queue=placement, image_build=build,
                                                                   started_at=result.get("started") or now,
                                                                   host=result.get("host"), pid=None,
                                                                   image_id=result.get("image_id")))
    log = f"[dynadesk: job {view.id} attempt {placement.attempt} on worker {result.get('worker')}]\n" + outcome.log
    return finish_run(store, view.run_id, folder, outcome, log)


def worker_key_of(result: dict[str, Any]) -> str | None:
    """The fingerprint of the key that signed a (verified) result."""
    from dynadesk.sync.format.keys import fingerprint

    raw = result.get("worker_key")
    return fingerprint(bytes.fromhex(raw)) if isinstance(raw, str) else None


def describe_progress(view: jobs.JobView) -> str:
    """One line per change of a job, for the waiting coordinator's stderr."""
    shown = render_progress(ProgressEvent.from_dict(view.progress)) if view.state == "running" else ""
    where = f" on {view.worker}" if view.worker else ""
    return f"job {view.id} (run {view.run_id}, attempt {view.attempt}): {view.shown_state}{where}" + \
        (f" {shown}" if shown else "")



def run_queued(store: Store, workspace: Workspace, broker: BrokerURL, request: Any, *,
               progress: ProgressFn | None = None, cancel: CancelToken | None = None,
               poll_s: float = 1.0) -> Any:
    """Queue ``request`` as one job and wait for its run, like :func:`~dynadesk.orchestration.evaluate.evaluate`
    (the app's Evaluate page with a broker): progress events as a local run sends them; cancelling ``cancel``
    cancels the job wherever it runs."""
    queue = Queue.open(broker)
    job_id, run_id = enqueue(store, workspace, queue, request)
    if progress:
        progress(ProgressEvent("start", run=run_id, message=f"run {run_id} started"))
    cancelled = False
    while True:
        if cancel is not None and cancel.cancelled() and not cancelled:
            with translated(broker):
                jobs.cancel(queue.client, job_id)
            cancelled = True

        def relay(view: jobs.JobView) -> None:
            if progress:
                event = ProgressEvent.from_dict(view.progress)
                progress(replace(event, phase=event.phase or view.shown_state,
                                 detail={**event.detail, "job": view.id, "worker": view.worker}))
        done = collect(store, workspace, queue, [job_id], wait=False, progress=relay)
        if done:
            return done[0]
        record = store.evaluations.get(run_id)
        if record.status != "queued":  # stored by another collector meanwhile
            return record
        time.sleep(poll_s)
