"""The one background job a service runs at a time, and the view that job belongs to.

Four services (evaluation, audit, training, the start page's jobs) and the data import each kept a
``self._worker`` by hand: refuse a second job, cancel, forget the worker when it ends, cancel on quit,
relay its signals. :class:`JobSlot` is that state, once. It also remembers the *view* a job was started
for (the open workspace, by default): the pages on screen show one workspace, and a job started in
workspace A that ends after the user opened workspace B must not put A's run numbers, progress or
"succeeded" on B's page (napari's habit: a late result never lands on the wrong view). Such an outcome
is not relayed; ``left`` says in one line what became of it and where it is stored, and ``done`` still
follows, so the page goes idle.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from PySide6.QtCore import QObject, Signal

from dynadesk.gui.workers import Worker, start

__all__ = ["JobService", "JobSignals", "JobSlot"]

RELAYED = ("started", "progress", "log", "finished", "failed", "cancelled", "done", "left")


@dataclass(frozen=True)
class _Job:
    """A started job: its worker and the view it was started for."""

    worker: Worker
    view: object


class JobSignals(QObject):
    """What a job says, on the UI thread: shared by the slot and the services that hold one."""

    started = Signal()
    progress = Signal(object)  # dynadesk.progress.ProgressEvent
    log = Signal(str)
    finished = Signal(object)  # the job's return value
    failed = Signal(str)
    cancelled = Signal()
    done = Signal()  # always last, whatever the outcome and whichever view is on screen: the page goes idle
    left = Signal(str)  # the outcome of a job whose view (workspace) was closed, in one line: where it went


class JobSlot(JobSignals):
    """Holds a service's one running job: :meth:`start` refuses a second, :meth:`cancel`, :attr:`running`,
    :meth:`close` on quit; its signals are the job's, already on the UI thread, and only for the view on
    screen (see the module docstring). :meth:`relay_to` forwards them to a service's same-named signals."""

    def __init__(self, what: str, view: Callable[[], object], parent: QObject | None = None):
        """``what`` names the job in messages ("an evaluation"); ``view()`` says which view is on screen now."""
        super().__init__(parent)
        self._what = what
        self._view = view
        self._job: _Job | None = None  # the running job
        self._jobs: dict[QObject, _Job] = {}  # every job not done yet, by its worker's signals (the sender)

    @property
    def running(self) -> bool:
        return self._job is not None

    def is_current(self, view: object) -> bool:
        return view == self._view()

    def relay_to(self, target: QObject, names: tuple[str, ...] = RELAYED) -> None:
        """Forward the slot's signals to ``target``'s signals of the same name (those it has)."""
        for name in names:
            if hasattr(type(target), name):
                getattr(self, name).connect(getattr(target, name))

    def start(self, fn: Callable[..., Any], *args: Any) -> Worker:
        """Run ``fn(ctx, *args)`` on a pool thread for the view on screen now."""
        if self._job is not None:
            raise RuntimeError(f"{self._what} is already running")
        worker = Worker(fn, *args)
        self._job = self._jobs[worker.signals] = _Job(worker, self._view())
        sig = worker.signals  # bound methods of this UI-thread object: queued, and dropped with the slot
        sig.progress.connect(self._on_progress)
        sig.log.connect(self._on_log)
        sig.finished.connect(self._on_finished)
        sig.failed.connect(self._on_failed)
        sig.cancelled.connect(self._on_cancelled)
        sig.done.connect(self._on_done)
        self.started.emit()
        return start(worker)

    def cancel(self) -> bool:
        """Ask the running job to stop; True when there was one."""
        if self._job is None:
            return False
        self._job.worker.cancel()
        return True

    def close(self) -> None:
        """On quit: stop the running job so its work (a worker process, a training loop) does not outlive the app."""
        self.cancel()

    def _sent(self) -> _Job | None:
        return self._jobs.get(self.sender())

    def _on_progress(self, event: object) -> None:
        job = self._sent()
        if job is not None and self.is_current(job.view):
            self.progress.emit(event)

    def _on_log(self, line: str) -> None:
        job = self._sent()
        if job is not None and self.is_current(job.view):
            self.log.emit(line)

    def _on_finished(self, result: object) -> None:
        self._outcome("finished", result)

    def _on_failed(self, message: str) -> None:
        self._outcome("failed", message)

    def _on_cancelled(self) -> None:
        self._outcome("cancelled")

    def _outcome(self, kind: str, *value: Any) -> None:
        job = self._sent()
        if job is None:
            return
        if job is self._job:
            self._job = None  # idle before anyone hears the outcome: a page may start the next job at once
        if self.is_current(job.view):
            getattr(self, kind).emit(*value)
            return
        said = {"finished": "finished", "cancelled": "was cancelled"}.get(kind) or f"failed: {value[0]}"
        self.left.emit(f"{self._what[0].upper()}{self._what[1:]} started in {job.view} {said} after another "
                       f"workspace was opened; what it wrote is in {job.view}.")

    def _on_done(self) -> None:
        job = self._jobs.pop(self.sender(), None)
        if job is None:
            return
        if job is self._job:  # a job that ended without an outcome signal (the app quitting)
            self._job = None
        self.done.emit()


class JobService(JobSignals):
    """A service that runs one background job at a time (a :class:`JobSlot`), over the open workspace: its
    signals are its job's, already on the UI thread and only for the workspace on screen. Subclasses name the
    job (``what``) and start it with ``self.job.start(fn)``."""

    what = "a job"  # in messages: "an evaluation is already running"

    def __init__(self, ws: Any, parent: QObject | None = None):
        """``ws``: the :class:`~dynadesk.gui.services.workspace.WorkspaceService` (its ``home`` is the view)."""
        super().__init__(parent)
        self._ws = ws
        self.job = JobSlot(self.what, lambda: ws.home, self)
        self.job.relay_to(self)

    @property
    def running(self) -> bool:
        return self.job.running

    def cancel(self) -> None:
        self.job.cancel()

    def close(self) -> None:
        """On quit: stop the running job so its work does not outlive the app."""
        self.job.close()
