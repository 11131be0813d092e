"""The Celery app and its one task, ``dynadesk.run_job(job_id, attempt)``.

Settings follow the one-job-per-machine pattern: the worker runs the solo pool (one job
at a time, in its main thread), prefetches one message, and acknowledges it only after
the job is done (``acks_late``), so a message is never parked behind a long job on a busy
worker. Redelivery is not trusted to detect dead workers: the visibility timeout is long
and a redelivered or restored copy is dropped by the job's claim (see
:mod:`dynadesk.queue.jobs`); a dead worker's job is re-queued when its lease expires.
"""

from __future__ import annotations

from typing import Any

from dynadesk.queue.broker import BrokerURL

TASK = "dynadesk.run_job"
QUEUE = "dynadesk-eval"
VISIBILITY_TIMEOUT_S = 8 * 86400  # longer than any run's wall-clock limit: leases, not redelivery, find dead workers


def make_app(broker: BrokerURL) -> Any:
    """A Celery app on ``broker`` with the task registered (the worker's handler is bound in worker.py)."""
    from celery import Celery

    app = Celery("dynadesk", broker=broker.url, set_as_current=False)
    app.conf.update(
        task_acks_late=True,
        task_reject_on_worker_lost=True,
        worker_prefetch_multiplier=1,
        worker_concurrency=1,
        task_default_queue=QUEUE,
        task_ignore_result=True,
        broker_transport_options={"visibility_timeout": VISIBILITY_TIMEOUT_S},
        broker_connection_retry_on_startup=True,
        worker_cancel_long_running_tasks_on_connection_loss=False,
        worker_hijack_root_logger=False,
        task_serializer="json",
        accept_content=["json"],
    )
    return app


def send_job(app: Any, job_id: str, attempt: int) -> None:
    """The message that asks some worker to run attempt ``attempt`` of job ``job_id``; kombu's errors (the
    broker went away) become :class:`~dynadesk.errors.BrokerUnavailable`."""
    from kombu.exceptions import OperationalError

    from dynadesk.errors import BrokerUnavailable

    try:
        app.send_task(TASK, args=[job_id, attempt], queue=QUEUE)
    except OperationalError as exc:
        raise BrokerUnavailable(f"the broker did not take the message for job {job_id}: {exc}") from None
