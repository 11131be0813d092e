"""Training the next round's target (:mod:`dynadesk.models.train`) on a ``QThreadPool`` worker.

Training is a normal background job (held by a :class:`~dynadesk.gui.jobs.JobSlot`): its
progress events (step of total steps, loss / dev score in the message) come back as they are,
``cancel()`` makes the loop save its checkpoint and stop, and a cancelled training can be resumed.
It never runs on the annotators' live-prediction path (that is
:class:`~dynadesk.gui.services.annotation.AnnotationService`'s own worker).
"""

from __future__ import annotations

from typing import Any

from dynadesk.gui.jobs import JobService
from dynadesk.gui.workers import Cancelled, WorkContext, Worker


class TrainingService(JobService):
    """Trainings (``progress``: done = the step, total = the steps; ``finished``: the TrainResult)."""

    what = "a training"

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
        ws = self._ws

        def job(ctx: WorkContext) -> Any:
            from dynadesk.models.train import TrainingCancelled, train_model

            store = ws.open_store()
            try:
                return train_model(store, ws.workspace.models_dir, request, resume=resume,
                                   progress=ctx.progress,
                                   cancel=ctx.cancel)
            except TrainingCancelled as exc:
                ctx.log(str(exc))
                raise Cancelled() from exc
            finally:
                store.close()

        return self.job.start(job)  # the service is idle when the page hears the outcome
