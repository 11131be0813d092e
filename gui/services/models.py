"""Registered models: list, register a folder (hashing runs on a worker), remove, and live
prediction for the "try it" panel. Torch loads only when a model is first used."""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from PySide6.QtCore import QObject, Signal, SignalInstance

from dynadesk.gui.services.workspace import WorkspaceService
from dynadesk.store.models import ModelRecord

if TYPE_CHECKING:
    from dynadesk.store import Store


def parse_labels(text: str) -> list[str] | None:
    """``"a, b,c"`` -> ``["a", "b", "c"]`` as ``models add --labels`` reads it; blank -> None."""
    return [x.strip() for x in text.split(",")] if text.strip() else None


def warm_model(store: Store, name: str) -> tuple[str, str | None]:
    """The worker job that loads model ``name`` into the shared predictor (so a first prediction does not stall a
    page): ``(name, None)``, or ``(name, why)`` when it cannot be loaded. The Models and Annotate pages' services
    both run it."""
    from dynadesk.errors import DynaDeskError
    from dynadesk.models import default_predictor

    try:
        default_predictor().warm(store.models.get(name))
    except DynaDeskError as exc:
        return name, str(exc)
    return name, None


def emit_warmed(result: tuple[str, str | None], ready: SignalInstance, failed: SignalInstance) -> None:
    """Say how a :func:`warm_model` job ended: ``ready(name)``, or ``failed(name, why)``."""
    name, error = result
    if error is None:
        ready.emit(name)
    else:
        failed.emit(name, error)


class ModelsService(QObject):
    changed = Signal()
    registered = Signal(object)  # ModelRecord
    registerFailed = Signal(str)
    predicted = Signal(int, object)  # request id, prediction dict
    predictFailed = Signal(int, str)
    loading = Signal(str)  # model name: loading into the live predictor started
    loaded = Signal(str)  # model name: loaded, predictions are quick now
    loadFailed = Signal(str, str)  # model name, message

    def __init__(self, ws: WorkspaceService, parent: QObject | None = None):
        super().__init__(parent)
        self._ws = ws
        self._request = 0
        self._inflight = False
        self._pending: tuple[int, str, dict[str, str]] | None = None
        ws.opened.connect(lambda _h: self.changed.emit())

    def list(self, task: str | None = None) -> list[ModelRecord]:
        return self._ws.store.models.list(task)

    def get(self, name: str) -> ModelRecord:
        return self._ws.store.models.get(name)

    def register(self, path: str, task: str, name: str | None = None, replace: bool = False, *,
                 kind: str | None = None, labels: Sequence[str] | None = None, allow_pickle: bool = False) -> None:
        """Hash and register ``path`` on a worker (the CLI's checks: same function, same options);
        ``registered`` or ``registerFailed`` follows."""
        def job(store: Store) -> ModelRecord:
            from dynadesk.models import ModelDeclaration, register_model

            return register_model(store, path, task, name=name or None, declared=ModelDeclaration(
                                      kind, tuple(labels) if labels is not None else None),
                                  allow_pickle=allow_pickle, replace=replace)

        self._ws.run_with_store(job, on_result=self._on_registered, on_error=self.registerFailed.emit)

    def _on_registered(self, rec: ModelRecord) -> None:
        self.changed.emit()
        self.registered.emit(rec)

    def remove(self, name: str) -> None:
        from dynadesk.models import remove_model

        remove_model(self._ws.store, name)
        self.changed.emit()

    # ------------------------------------------------------------ live
    def predict(self, model: str, inputs: dict[str, str]) -> int:
        """Queue a live prediction; only the newest request waiting is kept (typing is faster than models)."""
        self._request += 1
        self._pending = (self._request, model, dict(inputs))
        if not self._inflight:
            self._next()
        return self._request

    @property
    def latest_request(self) -> int:
        return self._request

    def forget_requests(self) -> None:
        """The view changed (another model selected): results of requests made so far are stale."""
        self._request += 1
        self._pending = None

    def warm(self, model: str) -> None:
        """Load ``model`` in the background so the first prediction does not stall the page."""
        self.loading.emit(model)
        self._ws.run_with_store(warm_model, model, on_result=self._on_warmed)  # bound: dropped with this service

    def _on_warmed(self, result: tuple[str, str | None]) -> None:
        emit_warmed(result, self.loaded, self.loadFailed)

    def _next(self) -> None:
        if self._pending is None:
            return
        rid, model, inputs = self._pending
        self._pending = None
        self._inflight = True

        def job(store) -> tuple[int, Any]:
            from dynadesk.models import predict_live

            return rid, predict_live(store, model, inputs)

        def failed(message: str) -> None:
            self.predictFailed.emit(rid, message)

        self._ws.run_with_store(job, on_result=lambda r: self.predicted.emit(*r), on_error=failed,
                                on_done=self._done)

    def _done(self) -> None:
        self._inflight = False
        self._next()
