"""The QThreadPool worker: results, core errors shown verbatim, unexpected errors with a
traceback, progress (the library's ProgressEvent, carried as it is) from the pool thread, and cooperative
cancellation."""

from __future__ import annotations

import threading
import time

import pytest

pytestmark = pytest.mark.qt


def test_result_progress_and_thread(require_qt, qtbot):
    from dynadesk.gui.workers import Worker, start

    seen = []

    from dynadesk.progress import ProgressEvent

    def job(ctx, n):
        for i in range(n):
            ctx.progress(ProgressEvent("step", i + 1, n, message=f"step {i + 1}"))
        return threading.current_thread().name

    w = Worker(job, 3)
    w.signals.progress.connect(lambda e: seen.append((e.done, e.total, e.message)))
    with qtbot.waitSignal(w.signals.finished, timeout=5000) as blocker:
        start(w)
    assert blocker.args[0] != threading.main_thread().name  # ran off the UI thread
    qtbot.waitUntil(lambda: len(seen) == 3)
    assert seen == [(1, 3, "step 1"), (2, 3, "step 2"), (3, 3, "step 3")]


def test_core_error_message_is_passed_through(require_qt, qtbot):
    from dynadesk.errors import NotFoundError
    from dynadesk.gui.workers import Worker, start

    def job(ctx):
        raise NotFoundError("no model named 'x' (see 'dynadesk models list')")

    w = Worker(job)
    with qtbot.waitSignal(w.signals.failed, timeout=5000) as blocker:
        start(w)
    assert blocker.args == ["no model named 'x' (see 'dynadesk models list')"]


def test_unexpected_error_comes_with_traceback(require_qt, qtbot):
    from dynadesk.gui.workers import Worker, start

    def job(ctx):
        return {}["missing"]

    w = Worker(job)
    with qtbot.waitSignal(w.signals.failed, timeout=5000) as blocker:
        start(w)
    assert blocker.args[0].startswith("unexpected error: KeyError('missing')")
    assert "Traceback" in blocker.args[0]


def test_cancel_stops_a_running_job(require_qt, qtbot):
    from dynadesk.gui.workers import Worker, start

    started = threading.Event()
    steps = []

    def job(ctx):
        started.set()
        while True:
            ctx.check()
            steps.append(1)
            time.sleep(0.01)

    w = Worker(job)
    done = []
    w.signals.done.connect(lambda: done.append(1))
    start(w)
    assert started.wait(5)
    with qtbot.waitSignal(w.signals.cancelled, timeout=5000):
        w.cancel()
    qtbot.waitUntil(lambda: done == [1])
    assert steps and not w.running
