"""Evaluation runs over :mod:`dynadesk.orchestration.evaluate`, on a ``QThreadPool`` worker.

One job evaluates the chosen models one after another; the worker's progress
events become ``progress``/``log`` signals, and ``cancel()`` sets the event the
runner polls, so the run stops and is stored as ``cancelled``.
"""

from __future__ import annotations

import json
from typing import Any

from PySide6.QtCore import QObject, Signal

from dynadesk.gui.services.workspace import WorkspaceService
from dynadesk.gui.workers import WorkContext, Worker, relay_signals, start
from dynadesk.store.evaluations import EvaluationRecord

GIB = 1 << 30


def describe_event(event: dict[str, Any]) -> str:
    phase = event.get("phase", "?")
    if phase == "predict":
        return f"predict {event.get('dataset', '')}: {event.get('done', 0)}/{event.get('total', 0)}"
    if phase == "saved":
        return f"saved {event.get('examples', 0)} predictions for {event.get('dataset', '')} (kept on resume)"
    if phase == "start":
        return f"run {event.get('run')} started"
    return phase + ("" if len(event) == 1 else " " + json.dumps({k: v for k, v in event.items() if k != "phase"}))


class EvaluationService(QObject):
    started = Signal()
    runCreated = Signal(int)  # run id, once the run row exists
    progress = Signal(int, int, str)  # done, total, message
    log = Signal(str)
    finished = Signal(object)  # list[EvaluationRecord]
    failed = Signal(str)
    cancelled = Signal()
    runsChanged = Signal()

    def __init__(self, ws: WorkspaceService, parent: QObject | None = None):
        super().__init__(parent)
        self._ws = ws
        self._worker: Worker | None = None
        ws.opened.connect(lambda _h: self.runsChanged.emit())

    @property
    def running(self) -> bool:
        return self._worker is not None

    def runs(self, limit: int = 200) -> list[EvaluationRecord]:
        return self._ws.store.evaluations.list(limit=limit)

    def run(self, run_id: int) -> EvaluationRecord:
        return self._ws.store.evaluations.get(run_id)

    def start(self, models: list[str], datasets: list[str] | None, *, runner: str, cpus: float,
              memory_gib: float, timeout_s: float, batch_size: int, gpu: bool, resume_id: int | None = None) -> Worker:
        """Evaluate ``models`` (or resume ``resume_id``) on a pool thread; see the class signals."""
        if self._worker is not None:
            raise RuntimeError("an evaluation is already running")
        ws = self._ws

        def job(ctx: WorkContext) -> list[EvaluationRecord]:
            from dynadesk.orchestration.evaluate import default_limits, evaluate, resume

            store = ws.open_store()
            out: list[EvaluationRecord] = []
            try:
                targets = [None] if resume_id is not None else models
                for i, model in enumerate(targets):
                    ctx.check()
                    label = f"run {resume_id}" if model is None else model
                    ctx.log(f"== {label} ({i + 1}/{len(targets)}) with the {runner} runner")

                    def on_event(event: dict[str, Any], label=label) -> None:
                        if event.get("phase") == "start":
                            self.runCreated.emit(int(event.get("run", 0)))
                        done = int(event.get("overall_done", event.get("done", 0)) or 0)
                        total = int(event.get("overall_total", event.get("total", 0)) or 0)
                        ctx.progress(done, total, f"{label}: {describe_event(event)}")
                        ctx.log(describe_event(event))

                    if model is None:
                        rec = resume(store, ws.workspace, resume_id,  # type: ignore[arg-type]
                                     progress=on_event, cancel=ctx.cancel_event)
                    else:
                        limits = default_limits(cpus=float(cpus), memory_bytes=int(memory_gib * GIB),
                                                timeout_s=float(timeout_s))
                        rec = evaluate(store, ws.workspace, model, datasets or None, runner=runner,
                                       batch_size=int(batch_size), gpus="all" if gpu else None, limits=limits,
                                       progress=on_event, cancel=ctx.cancel_event)
                    ctx.log(f"== run {rec.id}: {rec.status}" + (f" ({rec.verdict}): {rec.error}" if rec.error else ""))
                    out.append(rec)
                return out
            finally:
                store.close()

        worker = Worker(job)
        relay_signals(worker, self)
        worker.signals.done.connect(self._done)
        self._worker = worker
        self.started.emit()
        return start(worker)

    def cancel(self) -> None:
        if self._worker is not None:
            self._worker.cancel()
            self.log.emit("== cancel requested: stopping the worker")

    def _done(self) -> None:
        self._worker = None
        self.runsChanged.emit()

    def close(self) -> None:
        """On quit: stop a running evaluation so its worker process does not outlive the app."""
        if self._worker is not None:
            self._worker.cancel()
