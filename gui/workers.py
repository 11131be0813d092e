"""Background work on the global ``QThreadPool`` with progress, log and cancel.

A :class:`Worker` wraps a plain function ``fn(ctx, *args)``; ``ctx`` is a
:class:`WorkContext` the function uses to report progress (the library's own
:class:`~dynadesk.progress.ProgressEvent`, carried as it is: the page reads its phase,
counts and dataset, as superqt's workers carry their domain value), append log lines and
check for cancellation. Results and errors come back to the UI thread as
signals (queued connections), so the window never blocks. A
:class:`~dynadesk.errors.DynaDeskError` arrives as ``failed(message)`` — shown
to the user, never swallowed; any other exception arrives with its traceback.
"""

from __future__ import annotations

import traceback
from collections.abc import Callable
from dataclasses import replace
from typing import Any

from PySide6.QtCore import QObject, QRunnable, QThreadPool, Signal

from dynadesk.cancel import CancelToken
from dynadesk.errors import Cancelled, DynaDeskError
from dynadesk.oserrors import write_problem
from dynadesk.progress import ProgressEvent, render_progress

__all__ = ["Cancelled", "ProgressEvent", "WorkContext", "Worker", "progress_line", "start"]

JOB_KEY = "job"  # ProgressEvent.detail key: which of a service's jobs the event is about (a model, "re-run")


class WorkerSignals(QObject):
    progress = Signal(object)  # a ProgressEvent
    log = Signal(str)
    finished = Signal(object)  # the function's return value
    failed = Signal(str)  # a message fit for the user
    cancelled = Signal()
    done = Signal()  # always last, whatever the outcome


class WorkContext:
    """Handed to the worker function: progress, log lines and the cancel flag."""

    def __init__(self, signals: WorkerSignals, cancel: CancelToken):
        self._signals = signals
        self.cancel = cancel  # handed on to the library call the job makes (evaluate, audit, train ...)

    @property
    def cancelled(self) -> bool:
        return self.cancel.cancelled()

    def check(self) -> None:
        """Raise :class:`~dynadesk.errors.Cancelled` (reported as ``cancelled``) once cancel was asked."""
        self.cancel.raise_if_cancelled()

    def progress(self, event: ProgressEvent, job: str | None = None) -> None:
        """Hand the library's event to the UI thread as it is; ``job`` names the service's job it belongs to."""
        if job is not None:
            event = replace(event, detail={**event.detail, JOB_KEY: job})
        try:
            self._signals.progress.emit(event)
        except RuntimeError:  # application gone
            self.cancel.cancel()

    def note(self, line: str, phase: str = "") -> None:
        """A step without counts (a job that reports lines): one log line and the event that says it."""
        self.log(line)
        self.progress(ProgressEvent(phase, message=line))

    def log(self, line: str) -> None:
        try:
            self._signals.log.emit(line)
        except RuntimeError:
            self.cancel.cancel()


class Worker(QRunnable):
    """Run ``fn(ctx, *args, **kwargs)`` on a pool thread; see the module docstring."""

    def __init__(self, fn: Callable[..., Any], *args: Any, **kwargs: Any):
        super().__init__()
        self.setAutoDelete(False)  # the owner keeps a reference until ``done``
        self.signals = WorkerSignals()
        self._cancel = CancelToken()
        self._fn, self._args, self._kwargs = fn, args, kwargs
        self.running = False

    def cancel(self) -> None:
        self._cancel.cancel()

    def run(self) -> None:
        self.running = True
        ctx = WorkContext(self.signals, self._cancel)
        try:
            result = self._fn(ctx, *self._args, **self._kwargs)
        except Cancelled:
            self._emit("cancelled")
        except DynaDeskError as exc:
            self._emit("failed", str(exc))
        except Exception as exc:  # noqa: BLE001 - reported to the user with its traceback
            line = write_problem(exc)  # a read-only workspace: one line and the fix, not a traceback
            self._emit("failed", line or f"unexpected error: {exc!r}\n\n{traceback.format_exc(limit=8)}")
        else:
            if self._cancel.cancelled():
                self._emit("cancelled")
            else:
                self._emit("finished", result)
        finally:
            self.running = False
            self._emit("done")

    def _emit(self, name: str, *args: Any) -> None:
        try:
            getattr(self.signals, name).emit(*args)
        except RuntimeError:  # the application quit while this job ran: nobody is listening any more
            pass


_live: set[Worker] = set()


def start(worker: Worker, pool: QThreadPool | None = None) -> Worker:
    """Start ``worker`` and keep it alive until it is done."""
    _live.add(worker)
    worker.signals.done.connect(lambda: _live.discard(worker))
    (pool or QThreadPool.globalInstance()).start(worker)
    return worker


def progress_line(event: ProgressEvent) -> str:
    """The event as the pages show it: the CLI's rendering, after the job it belongs to (``m: predict set 4/9``)."""
    text = render_progress(event)
    job = event.detail.get(JOB_KEY)
    return f"{job}: {text}" if job else text

