"""Annotators, rounds, example creation, validation and round statistics over
:mod:`dynadesk.annotation`. Submitting runs the target model, so it goes to a
worker; everything else is a quick query on the UI thread's connection."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Any

from PySide6.QtCore import QObject, Signal

import dynadesk.annotation as ann
from dynadesk.errors import NotFoundError
from dynadesk.gui.services.models import emit_warmed, warm_model
from dynadesk.gui.services.workspace import WorkspaceService
from dynadesk.store.annotation import AnnotatedExample, Round

if TYPE_CHECKING:
    from dynadesk.store import Store


class AnnotationService(QObject):
    annotatorsChanged = Signal()
    activeChanged = Signal(str)
    roundsChanged = Signal(str)  # task
    submitted = Signal(object)  # AnnotatedExample
    submitFailed = Signal(str)
    validated = Signal(object, object)  # Validation, ExampleStatus
    examplesChanged = Signal(str)  # task
    modelLoading = Signal(str)  # model name: loading into the live predictor has started
    modelReady = Signal(str)  # model name: loaded, the next prediction is quick
    modelFailed = Signal(str, str)  # model name, message
    reportReady = Signal(str, object)  # task, RoundReport
    reportFailed = Signal(str, str)  # task, message
    draftReady = Signal(object)  # annotation.assistant.Draft: the generative assistant's proposal
    draftFailed = Signal(str)

    def __init__(self, ws: WorkspaceService, parent: QObject | None = None):
        super().__init__(parent)
        self._ws = ws
        self.busy = False
        ws.opened.connect(self._on_workspace)

    @property
    def store(self):
        return self._ws.store

    def _on_workspace(self, _home: str) -> None:
        self.annotatorsChanged.emit()
        self.activeChanged.emit(self.active or "")

    # ---------------------------------------------------------- annotators
    def annotator_names(self) -> list[str]:
        return [a.name for a in ann.list_annotators(self.store)]

    def annotators(self):
        return ann.list_annotators(self.store)

    @property
    def active(self) -> str | None:
        a = ann.active_annotator(self.store)
        return a.name if a else None

    def set_active(self, name: str) -> None:
        ann.use_annotator(self.store, name)
        self.activeChanged.emit(name)

    def add_annotator(self, name: str, role: str = "annotator") -> None:
        first = not self.annotator_names()
        ann.add_annotator(self.store, name, role)
        self.annotatorsChanged.emit()
        if first:
            self.activeChanged.emit(self.active or "")

    # --------------------------------------------------------------- rounds
    def rounds(self, task: str) -> list[Round]:
        return ann.list_rounds(self.store, task)

    def current_round(self, task: str) -> Round | None:
        """The latest round of ``task`` (open or closed), None when there is none."""
        try:
            return ann.get_round(self.store, task)
        except NotFoundError:
            return None

    def new_round(self, task: str, models: list[str], contexts_file: str | None = None) -> Round:
        rnd = ann.new_round(self.store, task, models, contexts_file or None, created_by=self.active)
        self.roundsChanged.emit(task)
        self.warm(rnd)
        return rnd

    def models_for(self, task: str) -> list[str]:
        return [m.name for m in self.store.models.list(task)]

    def warm(self, rnd: Round) -> None:
        """Load the round's target models in the background so the first submit does not stall the page;
        ``modelLoading`` / ``modelReady`` / ``modelFailed`` tell the page (a failed load is also reported
        again by the submit that needs the model)."""
        for model in rnd.models:
            self.warm_model(model.name)

    def warm_model(self, name: str) -> None:
        self.modelLoading.emit(name)
        # a bound method: the connection goes with this service, so a late load never reaches a dead one
        self._ws.run_with_store(warm_model, name, on_result=self._on_warmed)

    def _on_warmed(self, result: tuple[str, str | None]) -> None:
        emit_warmed(result, self.modelReady, self.modelFailed)

    def report(self, task: str, test_sets: list[str] | None = None) -> None:
        """The round-over-round report (every model's error per round, and on ``test_sets``) on a worker:
        it runs every model over the examples, so never on the UI thread."""
        def job(store: Store) -> tuple[str, Any, str | None]:
            from dynadesk.annotation.report import round_report
            from dynadesk.errors import DynaDeskError

            try:
                return task, round_report(store, task, test_sets=test_sets or []), None
            except DynaDeskError as exc:
                return task, None, str(exc)

        self._ws.run_with_store(job, on_result=self._on_report)  # bound: dropped with this service

    def _on_report(self, result: tuple[str, Any, str | None]) -> None:
        task, report, error = result
        if error is None:
            self.reportReady.emit(task, report)
        else:
            self.reportFailed.emit(task, error)

    def stats(self, task: str) -> list:
        return ann.task_stats(self.store, task)

    def round_stats(self, task: str, number: int):
        return ann.round_stats(self.store, task, number)

    def export_round(self, task: str, path: str | Path, number: int, status: str) -> int:
        return ann.export_round(self.store, task, path, number, status)

    def register_round(self, task: str, name: str, number: int, status: str, split: str):
        summary = ann.register_round(self.store, task, name, number, status, split)
        return summary

    # --------------------------------------------------------------- create
    def next_context(self, task: str):
        return ann.next_context(self.store, task, self.active)

    def assistant_models(self, task: str) -> list[str]:
        """The open round's generative targets: the assistant is offered only when there is one."""
        from dynadesk.annotation.assistant import assistant_models

        return assistant_models(self.store, task)

    def propose_draft(self, task: str, label: str | None, given: dict[str, str]) -> None:
        """The generative assistant's draft, written on a worker; ``draftReady`` or ``draftFailed`` follows."""
        from dynadesk.annotation.assistant import propose

        self._ws.run_with_store(lambda store: propose(store, task, given=given, label=label),
                                on_result=self.draftReady.emit, on_error=self.draftFailed.emit)

    def submit(self, task: str, inputs: dict[str, str], target: Any, *, explanation: str = "", time_ms: int = 0,
               context_id: str | None = None, draft: Any = None, metadata: dict[str, str] | None = None) -> None:
        """Ask the round's target model (the library chooses it) on a worker; ``submitted`` or ``submitFailed``
        follows. ``draft``: the assistant's proposal the example was written from (its use is recorded with the
        example); ``metadata``: the values of the task file's ``metadata.create`` fields."""
        if self.busy:
            return
        self.busy = True
        annotator = self.active

        def job(store):
            ex = ann.submit_example(store, task, annotator, inputs, target,
                                    ann.ExampleDetails(context_id, explanation, time_ms, metadata))
            if draft is not None:
                from dynadesk.annotation.assistant import record_use

                record_use(store, ex, draft)
            return ex

        self._ws.run_with_store(job, on_result=self._on_submitted, on_error=self._on_submit_failed,
                                on_done=self._not_busy)

    def _not_busy(self) -> None:
        self.busy = False

    def _on_submitted(self, ex: AnnotatedExample) -> None:
        self.busy = False
        self.submitted.emit(ex)
        self.examplesChanged.emit(ex.task)

    def _on_submit_failed(self, message: str) -> None:
        self.busy = False
        self.submitFailed.emit(message)

    # ------------------------------------------------------------- validate
    def queue(self, task: str, round_number: int | None = None, seed: int = 0) -> list[AnnotatedExample]:
        return ann.validation_queue(self.store, task, self.active, round_number, seed=seed, limit=None)

    def validate(self, example_uid: str, verdict: str, label: Any = None, reason: str = "",
                 metadata: dict[str, str] | None = None):
        """One vote; ``metadata``: the values of the task file's ``metadata.validate`` fields asked with it."""
        v, status = ann.validate(self.store, example_uid, self.active, verdict, label, reason, metadata=metadata)
        self.validated.emit(v, status)
        ex = self.store.annotation.get_example(example_uid, with_validations=False)
        self.examplesChanged.emit(ex.task)
        return v, status
