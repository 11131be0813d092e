"""Cycles (a Qt object in a cycle among them) are collected on the GUI thread while the app runs
(dynadesk.gui.collector), not on whichever pool thread allocated when a count was reached: a Qt object destroyed
on another thread may crash the process."""

from __future__ import annotations

import gc
import threading
import weakref

import pytest

pytestmark = pytest.mark.qt


class _Cycle:
    def __init__(self, freed_on: list[str]):
        self.me = self
        weakref.finalize(self, lambda: freed_on.append(threading.current_thread().name))


def test_cycles_made_on_a_pool_thread_are_collected_on_the_gui_thread(require_qt, qtbot):
    from dynadesk.gui.workers import Worker, start

    assert not gc.isenabled()  # the suite's Qt tests run as the app does (tests/conftest.py)
    freed_on: list[str] = []

    def job(ctx):
        # 2,000 cycles of ~3 tracked objects each: the young generation's count (allocations less deallocations)
        # passes its threshold (700) several times over, so the automatic collector would have run on this thread
        for _ in range(2000):
            _Cycle(freed_on)

    worker = Worker(job)
    # connected before the job starts: a job done before waitSignal connected would never be seen (the
    # clean-clone CI run of 2026-12-06 timed out here under load)
    with qtbot.waitSignal(worker.signals.done, timeout=30_000):
        start(worker)
    # a collection frees what is pending when a count passes its threshold: the last few hundred may wait for more
    # allocations, as they would under the automatic collector
    qtbot.waitUntil(lambda: len(freed_on) >= 1500, timeout=10_000)
    assert set(freed_on) == {threading.main_thread().name}
