"""Training the next round's target (:mod:`dynadesk.models.train`) on a ``QThreadPool`` worker.

Training is a normal background job: progress (step, total, loss / dev score) comes back as
signals, ``cancel()`` makes the loop save its checkpoint and stop, and a cancelled training
can be resumed. It never runs on the annotators' live-prediction path (that is
:class:`~dynadesk.gui.services.annotation.AnnotationService`'s own worker).
"""

from __future__ import annotations

from typing import Any

from PySide6.QtCore import QObject, Signal

from dynadesk.gui.services.workspace import WorkspaceService
from dynadesk.gui.workers import Cancelled, WorkContext, Worker, relay_signals, start


class TrainingService(QObject):
    started = Signal()
    progress = Signal(int, int, str)  # step, total steps, message
    log = Signal(str)
    finished = Signal(object)  # TrainResult
    failed = Signal(str)
    cancelled = Signal()

    def __init__(self, ws: WorkspaceService, parent: QObject | None = None):
        super().__init__(parent)
        self._ws = ws
        self._worker: Worker | None = None

    @property
    def running(self) -> bool:
        return self._worker is not None

    def datasets(self, task: str, first: str = "train") -> list[str]:
        """The task's datasets that may train a model or stop it early: never a test split (issue 47; the
        library refuses one anyway), the ``first`` split's sets listed first."""
        sets = [d for d in self._ws.store.datasets.list(task, include_derived=False) if d.split != "test"]
        return [d.name for d in sorted(sets, key=lambda d: (d.split != first, d.name))]

    def base_models(self, task: str) -> list[str]:
        return [m.name for m in self._ws.store.models.list(task)
                if m.kind in ("hf-sequence-classification", "hf-question-answering") and not m.has_pickle]

    def start(self, request: Any, *, resume: bool = False) -> Worker:
        """Train ``request`` (a :class:`~dynadesk.models.train.TrainRequest`) on a pool thread."""
        if self._worker is not None:
            raise RuntimeError("a training is already running")
        ws = self._ws

        def job(ctx: WorkContext) -> Any:
            from dynadesk.models.train import TrainingCancelled, train_model

            store = ws.open_store()
            try:
                return train_model(store, ws.workspace.models_dir, request, resume=resume,
                                   progress=lambda e: ctx.progress(e.done or 0, e.total or 0, e.message),
                                   cancel=ctx.cancel)
            except TrainingCancelled as exc:
                ctx.log(str(exc))
                raise Cancelled() from exc
            finally:
                store.close()

        worker = Worker(job)
        for outcome in (worker.signals.finished, worker.signals.failed, worker.signals.cancelled):
            outcome.connect(self._done)  # connected first: the service is idle when the page hears the outcome
        relay_signals(worker, self)
        self._worker = worker
        self.started.emit()
        return start(worker)

    def cancel(self) -> None:
        if self._worker is not None:
            self._worker.cancel()

    def _done(self, *_outcome: Any) -> None:
        self._worker = None

    def close(self) -> None:
        self.cancel()
