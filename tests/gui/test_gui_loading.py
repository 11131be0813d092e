"""The run list and the leaderboard are read off the GUI thread, and a late answer never lands on the wrong view.

A late answer is made deterministic with Qt's own queue: a read is started, the pool is waited for
(its answer is then queued for the GUI thread, undelivered), a newer read is asked for, and only then
are events processed, so the older answer arrives after the newer request. Real workspaces, real widgets.
"""

from __future__ import annotations

import threading

import pytest
from support.gui import loaded, make_window, seed_run

pytestmark = pytest.mark.qt

BOARD = {"alpha": dict(perf=90, throughput=10, memory=2, robustness=80, fairness=80),
         "bravo": dict(perf=80, throughput=100, memory=1, robustness=80, fairness=80)}


@pytest.fixture
def window(require_qt, qtbot, tmp_path):
    from dynadesk.workspace import Workspace

    home = tmp_path / "ws"
    st = Workspace(home).open_store()
    for name, metrics in BOARD.items():
        seed_run(st, name, "sentiment", metrics)
    seed_run(st, "nli-one", "nli", dict(BOARD["alpha"]))
    st.close()
    services, win = make_window(qtbot, tmp_path, home)
    yield services, win
    win.close()
    services.close()


def _hold_first_read(ws):
    """Make the next read on ``ws`` wait, its store open, until ``gate`` is set (the read itself is the real one);
    returns ``(started, gate)``."""
    started, gate, original, calls = threading.Event(), threading.Event(), ws.run_with_store, []

    def held(fn, *args, **kwargs):
        first = not calls
        calls.append(fn)

        def read(store, *a, **k):
            if first:
                started.set()
                gate.wait(30)
            return fn(store, *a, **k)
        return original(read, *args, **kwargs)

    ws.run_with_store = held
    return started, gate


def _deliver_late(qtbot, gate) -> None:
    from PySide6.QtCore import QThreadPool

    gate.set()
    QThreadPool.globalInstance().waitForDone()
    qtbot.wait(100)  # the held read's answer reaches the GUI thread, after the newer one


def test_the_board_is_read_on_a_pool_thread(window, qtbot):
    services, win = window
    page = loaded(qtbot, win.show_page("leaderboard"))
    page.select_task("sentiment")
    threads: list[str] = []
    original = page._svc._ws.run_with_store

    def spy(fn, *args, **kwargs):  # records where the read runs; the read itself is the real one
        def traced(store, *a, **k):
            threads.append(threading.current_thread().name)
            return fn(store, *a, **k)
        return original(traced, *args, **kwargs)

    page._svc._ws.run_with_store = spy
    page.reload()
    loaded(qtbot, page)
    assert threads and threading.main_thread().name not in threads
    assert page.ranking() == ["alpha", "bravo"]


def test_a_late_board_for_another_task_never_lands(window, qtbot):
    services, win = window
    page = loaded(qtbot, win.show_page("leaderboard"))
    page.select_task("sentiment")
    loaded(qtbot, page)
    started, gate = _hold_first_read(services.ws)
    page.reload()  # a read of sentiment's board, held ...
    assert started.wait(30)
    page.select_task("nli")  # ... while the user moves on: a newer read, answered first
    loaded(qtbot, page)
    assert page.task == "nli"
    _deliver_late(qtbot, gate)
    assert page.task == "nli" and page._svc.current("nli") is not None
    assert page._svc.current("sentiment") is None  # the late answer was dropped, not kept as the board
    page.rerank()  # what a slider move does: still nli's board
    assert page.result is None or {r.model for r in page.result.rows} <= {"nli-one"}


def test_a_late_run_list_of_a_closed_workspace_never_lands(window, qtbot, tmp_path):
    services, win = window
    page = loaded(qtbot, win.show_page("evaluate"))
    assert page.runs_table.rowCount() == 3  # alpha, bravo and nli-one
    started, gate = _hold_first_read(services.ws)
    page.refresh_runs()  # a read of this workspace's runs, held ...
    assert started.wait(30)
    services.ws.switch(tmp_path / "other")  # ... while the user opens an empty workspace
    loaded(qtbot, page)
    assert page.runs_table.rowCount() == 0
    _deliver_late(qtbot, gate)
    assert page.runs_table.rowCount() == 0  # the closed workspace's late answer was dropped
