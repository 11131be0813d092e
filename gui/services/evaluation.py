"""Evaluation runs over :mod:`dynadesk.orchestration.evaluate`, on a ``QThreadPool`` worker.

One job evaluates the chosen models one after another, held by a :class:`~dynadesk.gui.jobs.JobSlot`; the
runner's progress events (:class:`~dynadesk.progress.ProgressEvent`) reach the page as they are
(``progress``), and as the one line the CLI writes (``log``); ``cancel()`` cancels the token the runner
polls, so the run stops and is stored as ``cancelled``. A job whose workspace was closed before it ended
says so in ``left``. The run list is read on a pool thread too (:meth:`EvaluationService.load_runs`); only
the newest read lands (``runsLoaded``).
"""

from __future__ import annotations

from collections.abc import Callable

from PySide6.QtCore import QObject, Signal

from dynadesk.gui.jobs import JobService
from dynadesk.gui.services.workspace import WorkspaceService
from dynadesk.gui.workers import WorkContext, Worker, start
from dynadesk.orchestration.evaluate import evaluate, failure_line, resume
from dynadesk.orchestration.request import RunRequest
from dynadesk.progress import ProgressEvent, render_progress
from dynadesk.store.evaluations import EvaluationRecord


class EvaluationService(JobService):
    """Evaluations (``finished``: the list of EvaluationRecord; a progress event's detail names the model, which
    :func:`~dynadesk.gui.workers.progress_line` writes) and the run list."""

    what = "an evaluation"
    runCreated = Signal(int)  # run id, once the run row exists
    runsChanged = Signal()
    runsLoaded = Signal(object)  # list[EvaluationRecord]: the newest run-list read asked for
    gpuChecked = Signal(str, bool, str)  # runner, a GPU answers, the line to show

    def __init__(self, ws: WorkspaceService, parent: QObject | None = None):
        super().__init__(ws, parent)
        self.job.progress.connect(self._on_progress)
        self.job.done.connect(self.runsChanged)
        self._runs_request = 0  # the newest run-list read's number: an older read's answer is dropped
        self.served_models: frozenset[str] = frozenset()  # models shown "served, not sandboxed" (models/served.py)
        ws.opened.connect(self._on_opened)

    def _on_opened(self, _home: str) -> None:
        self._runs_request += 1  # a read still running is for the workspace closed
        self.runsChanged.emit()

    def _on_progress(self, event: ProgressEvent) -> None:
        if event.phase == "start" and event.run is not None:
            self.runCreated.emit(event.run)  # on the UI thread, and only for the workspace on screen

    def runs(self, limit: int = 200) -> list[EvaluationRecord]:
        """Recent runs without their logs (see :meth:`run_log`), read on the calling thread."""
        return self._ws.store.evaluations.list(limit=limit)

    def load_runs(self, limit: int = 200) -> int:
        """Read the recent runs on a pool thread (its own connection); ``runsLoaded(records)`` when it is still the
        newest read asked for. Returns the read's number."""
        self._runs_request += 1
        number = self._runs_request

        def read(store):
            from dynadesk.models.served import served_names

            return number, store.evaluations.list(limit=limit), served_names(store)

        self._ws.run_with_store(read, on_result=self._on_runs_read,
                                on_error=lambda msg, n=number: self._on_runs_failed(n, msg))
        return number

    def _on_runs_read(self, result: tuple[int, list[EvaluationRecord], frozenset[str]]) -> None:
        number, records, served = result
        if number == self._runs_request:
            self.served_models = served
            self.runsLoaded.emit(records)

    def _on_runs_failed(self, number: int, message: str) -> None:
        if number == self._runs_request:
            self.failed.emit(message)

    def run_log(self, run_id: int) -> str:
        return self._ws.store.evaluations.log(run_id)

    def run(self, run_id: int) -> EvaluationRecord:
        return self._ws.store.evaluations.get(run_id)

    def start(self, requests: list[RunRequest]) -> Worker:
        """Evaluate each request on a pool thread, one after another; see the class signals."""
        return self._start([(r.model, lambda store, on_event, ctx, r=r: evaluate(
            store, self._ws.workspace, r, progress=on_event, cancel=ctx.cancel)) for r in requests])

    def start_queued(self, requests: list[RunRequest], broker_url: str) -> Worker:
        """Queue each request on a Redis broker for 'dynadesk worker' machines and wait for its run (docs/queue.md);
        Cancel cancels the job on whichever machine runs it."""
        from dynadesk.queue.broker import parse_broker
        from dynadesk.queue.coordinator import run_queued

        broker = parse_broker(broker_url)  # a URL without a password is refused before anything starts
        return self._start([(r.model, lambda store, on_event, ctx, r=r: run_queued(
            store, self._ws.workspace, broker, r, progress=on_event, cancel=ctx.cancel)) for r in requests])

    def resume(self, run_id: int) -> Worker:
        """Finish a stored run by replaying its stored request (nothing is re-asked)."""
        return self._start([(f"run {run_id}", lambda store, on_event, ctx: resume(
            store, self._ws.workspace, run_id, progress=on_event, cancel=ctx.cancel))])

    def _start(self, jobs: list[tuple[str, Callable[..., EvaluationRecord]]]) -> Worker:
        ws = self._ws

        def job(ctx: WorkContext) -> list[EvaluationRecord]:
            store = ws.open_store()
            out: list[EvaluationRecord] = []
            try:
                for i, (label, run) in enumerate(jobs):
                    ctx.check()
                    ctx.log(f"== {label} ({i + 1}/{len(jobs)})")

                    def on_event(event: ProgressEvent, label: str = label) -> None:
                        ctx.progress(event, job=label)
                        ctx.log(render_progress(event))

                    rec = run(store, on_event, ctx)
                    if rec.status != "succeeded":
                        ctx.log(failure_line(rec))
                    else:
                        ctx.log(f"== run {rec.id}: {rec.status}")
                    out.append(rec)
                return out
            finally:
                store.close()

        return self.job.start(job)

    def check_gpu(self, runner: str) -> None:
        """Ask (on a pool thread: it may wait for Docker) whether ``runner`` can give a run a GPU."""
        from dynadesk.gui.workers import Worker

        def job(_ctx: WorkContext) -> tuple[str, bool, str]:
            from dynadesk.orchestration.evaluate import gpu_status

            status = gpu_status(runner)
            return runner, status.ok, status.detail

        worker = Worker(job)
        worker.signals.finished.connect(self._on_gpu_result)  # bound: dropped with this service
        start(worker)

    def _on_gpu_result(self, result: tuple[str, bool, str]) -> None:
        self.gpuChecked.emit(*result)

    def cancel(self) -> None:
        if self.job.cancel():
            self.log.emit("== cancel requested: stopping the worker")

