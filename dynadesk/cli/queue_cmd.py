"""``dynadesk worker`` and ``dynadesk jobs list|cancel|collect``: thin layers over dynadesk.queue."""

from __future__ import annotations

import time
from typing import TYPE_CHECKING, Any

import click

from dynadesk.cli.common import echo_json, echo_table, json_option, pass_app
from dynadesk.queue.broker import ENV_VAR

if TYPE_CHECKING:
    from dynadesk.store import Store

broker_option = click.option("--broker", envvar=ENV_VAR, default=None, metavar="URL",
                             help=f"Redis broker, redis://:PASSWORD@HOST:6379/0 (or ${ENV_VAR}).")


def open_queue(url: str | None) -> Any:
    from dynadesk.queue.broker import parse_broker
    from dynadesk.queue.coordinator import Queue

    return Queue.open(parse_broker(url))


@click.command("worker")
@broker_option
@click.option("--gpus", default=None, help="Device ids (e.g. '0') this worker gives to jobs that ask for GPUs.")
@click.option("--name", default=None, help="This worker's name on the broker (default: the host name).")
@click.option("--lease", "lease_s", type=click.FloatRange(1, 3600), default=60.0, show_default=True,
              help="Seconds a job stays leased without a heartbeat; after that another worker takes it.")
@click.option("--allow-unsandboxed", is_flag=True,
              help="Also take jobs queued with --runner local (run without the Docker sandbox).")
@click.option("--max-cpus", type=click.FloatRange(0.1, 4096), default=None,
              help="The most CPUs one job gets, whatever it asks for (default: this machine's cores).")
@click.option("--max-memory", "max_memory_gib", type=click.FloatRange(0.05, 65536), default=16.0, show_default=True,
              help="The most memory (GiB) one job gets.")
@click.option("--max-pids", type=click.IntRange(16, 1 << 22), default=1024, show_default=True,
              help="The most processes one job may start.")
@click.option("--max-tmpfs", "max_tmpfs_gib", type=click.FloatRange(0.01, 65536), default=4.0, show_default=True,
              help="The largest /tmp (GiB) one job gets.")
@click.option("--max-timeout", "max_timeout_s", type=click.FloatRange(1, 30 * 86400), default=86400.0,
              show_default=True, help="The longest wall-clock time (seconds) one job may run.")
@pass_app
def worker(app: Any, broker: str | None, gpus: str | None, name: str | None, lease_s: float,
           allow_unsandboxed: bool, max_cpus: float | None, max_memory_gib: float, max_pids: int,
           max_tmpfs_gib: float, max_timeout_s: float) -> None:
    """Take evaluation jobs from the broker, one at a time, and run them in this machine's Docker.

    The worker signs every result with its own key (created in HOME/worker-key/ at first start);
    the coordinating workspace must trust it: 'dynadesk jobs trust-worker HOME/worker-key/worker.pub'."""
    import socket

    from dynadesk.queue.broker import parse_broker
    from dynadesk.queue.worker import GIB, Maxima, WorkerConfig, serve

    app.workspace.ensure()
    maxima = Maxima(cpus=max_cpus or Maxima().cpus, memory_bytes=int(max_memory_gib * GIB), pids=max_pids,
                    tmpfs_bytes=int(max_tmpfs_gib * GIB), timeout_s=max_timeout_s)
    serve(WorkerConfig(parse_broker(broker), app.workspace.home, name=name or socket.gethostname(), gpus=gpus,
                       lease_s=lease_s, allow_unsandboxed=allow_unsandboxed, maxima=maxima))


@click.group()
def jobs():
    """Queued evaluation jobs on a broker: state, worker, heartbeat; cancel; collect results."""


def _age(stamp: float | None) -> str:
    return "" if stamp is None else f"{max(0.0, time.time() - stamp):.0f}s ago"


@jobs.command("list")
@broker_option
@click.option("--limit", type=click.IntRange(1, 10000), default=50, show_default=True)
@json_option
def jobs_list(broker, limit, as_json):
    """List jobs, newest first; a running job whose worker stopped renewing its lease shows as 'stuck'."""
    from dynadesk.progress import ProgressEvent, render_progress
    from dynadesk.queue import jobs as store
    from dynadesk.queue.broker import translated

    queue = open_queue(broker)
    with translated(queue.broker):
        views = store.list_jobs(queue.client, limit)
    if as_json:
        echo_json([v.to_dict() for v in views])
        return
    rows = []
    for v in views:
        p = v.progress
        rows.append([v.id, v.run_id, v.model, v.shown_state, v.attempt, v.worker or v.requeued_from,
                     _age(v.heartbeat) if v.state == "running" else "",
                     render_progress(ProgressEvent.from_dict(p)) if v.state == "running" else ""])
    echo_table(["job", "run", "model", "state", "attempt", "worker", "heartbeat", "progress"], rows)


@jobs.command("workers")
@broker_option
@json_option
def jobs_workers(broker, as_json):
    """List the workers alive on the broker: name, host, the job in hand, last heartbeat, hardware class."""
    from dynadesk.queue import jobs as store
    from dynadesk.queue.broker import translated

    queue = open_queue(broker)
    with translated(queue.broker):
        found = store.list_workers(queue.client)
    if as_json:
        echo_json(found)
        return
    echo_table(["worker", "host", "job", "heartbeat", "gpus", "hardware class"],
               [[w.get("name"), w.get("host"), w.get("job") or "", _age(w.get("seen")), w.get("gpus") or "",
                 w.get("hardware_class") or ""] for w in found])


@jobs.command("trust-worker")
@click.argument("keyfile", type=click.Path(exists=True, dir_okay=False))
@click.option("--label", default=None,
              help="A name for the key in 'dynadesk jobs trusted-workers' (default: the file).")
@pass_app
def jobs_trust_worker(app, keyfile, label):
    """Accept results signed by the worker key in KEYFILE (a worker's HOME/worker-key/worker.pub)."""
    from dynadesk.queue.identity import read_public_keyfile
    from dynadesk.store import worker_keys

    fpr, raw = read_public_keyfile(keyfile)
    row = worker_keys.trust(app.store, fpr, raw, label or str(keyfile))
    click.echo(f"trusted worker key {row.fingerprint} ({row.label})")


@jobs.command("trusted-workers")
@json_option
@pass_app
def jobs_trusted_workers(app, as_json):
    """List the worker keys this workspace accepts results from (revoked ones too, marked)."""
    from dynadesk.store import worker_keys

    rows = worker_keys.list_keys(app.store)
    if as_json:
        echo_json([r.to_dict() for r in rows])
        return
    echo_table(["fingerprint", "label", "trusted", "revoked"],
               [[r.fingerprint, r.label, r.trusted_at, r.revoked_at or ""] for r in rows])


@jobs.command("revoke-worker")
@click.argument("fingerprint")
@pass_app
def jobs_revoke_worker(app, fingerprint):
    """Stop accepting results signed by this worker key (its stored runs keep naming it)."""
    from dynadesk.store import worker_keys

    row = worker_keys.revoke(app.store, fingerprint)
    click.echo(f"revoked worker key {row.fingerprint} ({row.label}) at {row.revoked_at}")


@jobs.command("cancel")
@click.argument("job_ids", nargs=-1, required=True)
@broker_option
def jobs_cancel(job_ids, broker):
    """Cancel jobs: a queued one at once, a running one at its worker's next heartbeat (on any machine)."""
    from dynadesk.queue import jobs as store
    from dynadesk.queue.broker import translated

    queue = open_queue(broker)
    for job_id in job_ids:
        with translated(queue.broker):
            state = store.cancel(queue.client, job_id)
        click.echo(f"job {job_id}: " + ("cancelled" if state == "cancelled" else
                                        f"cancel requested ({state})" if state == "running" else
                                        f"already {state}"))


@jobs.command("collect")
@click.argument("job_ids", nargs=-1)
@broker_option
@click.option("--wait/--no-wait", default=True, show_default=True, help="Wait until every job is final.")
@json_option
@pass_app
def jobs_collect(app, job_ids, broker, wait, as_json):
    """Store the results of this workspace's finished jobs as its runs (all its queued runs without JOB_IDS)."""
    from dynadesk.queue.coordinator import collect, describe_progress

    queue = open_queue(broker)
    ids = list(job_ids) or queued_jobs(app.store)
    records = collect(app.store, app.workspace, queue, ids, wait=wait,
                      progress=None if as_json else lambda v: click.echo(describe_progress(v), err=True))
    report(records, as_json)


def queued_jobs(store: Store) -> list[str]:
    """Job ids of this workspace's runs still 'queued' on a broker."""
    out = []
    for record in store.evaluations.list(status="queued", limit=100000):
        if record.queue is not None:
            out.append(record.queue.job)
    return out


def report(records: list[Any], as_json: bool) -> None:
    """The runs a collect stored: one row each (or JSON)."""
    if as_json:
        echo_json([{"run": r.id, "model": r.model_name, "status": r.status, "verdict": r.verdict,
                    "job": r.queue.job if r.queue else None, "worker": r.queue.worker if r.queue else None,
                    "predictions_digest": r.predictions_digest} for r in records])
        return
    from dynadesk.orchestration.evaluate import failure_line

    echo_table(["run", "model", "status", "verdict", "job", "worker"],
               [[r.id, r.model_name, r.status, r.verdict or "", r.queue.job if r.queue else None,
                 r.queue.worker if r.queue else None] for r in records])
    for r in records:
        if r.status not in ("succeeded", "cancelled"):
            click.echo(failure_line(r), err=True)


def enqueue_and_wait(app: Any, broker: str, requests: list[Any], wait: bool, as_json: bool) -> None:
    """``dynadesk eval ... --queue``: one job per request; with ``wait``, store the results as they come back."""
    from dynadesk.queue.coordinator import collect, describe_progress, enqueue

    queue = open_queue(broker)
    ids = []
    for request in requests:
        job_id, run_id = enqueue(app.store, app.workspace, queue, request)
        ids.append(job_id)
        if not as_json:
            click.echo(f"queued job {job_id} (run {run_id}, model {request.model})", err=True)
    if not wait:
        if as_json:
            echo_json({"jobs": ids})
        else:
            click.echo(" ".join(ids))
        return
    records = collect(app.store, app.workspace, queue, ids,
                      progress=None if as_json else lambda v: click.echo(describe_progress(v), err=True))
    report(records, as_json)
    if any(r.status != "succeeded" for r in records):
        raise SystemExit(1)
