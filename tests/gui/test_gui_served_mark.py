"""A served model's runs are marked "served, not sandboxed" in the app: the Evaluate page's run list (runner
column) and the leaderboard's row (icon and tooltip) and notes."""

from __future__ import annotations

import pytest
from support.gui import loaded, make_window, seed_run

from dynadesk.models.served import SERVED_NOTE

pytestmark = pytest.mark.qt
METRICS = dict(perf=80, throughput=100, memory=1, robustness=80, fairness=80)


@pytest.fixture
def window(require_qt, qtbot, tmp_path):
    from dynadesk.workspace import Workspace

    home = tmp_path / "ws"
    st = Workspace(home).open_store()
    seed_run(st, "alpha", "sentiment", METRICS)
    seed_run(st, "remote", "sentiment", dict(METRICS, perf=70))
    st.db.execute("UPDATE models SET kind = 'openai-served' WHERE name = 'remote'")  # as models add --served does
    st.db.conn.commit()
    st.close()
    services, win = make_window(qtbot, tmp_path, home)
    yield services, win
    win.close()
    services.close()


def test_the_run_list_and_the_leaderboard_mark_a_served_model(window, qtbot):
    _services, win = window
    page = loaded(qtbot, win.show_page("evaluate"))
    runner = {page.runs_table.item(r, 1).text(): page.runs_table.item(r, 3).text()
              for r in range(page.runs_table.rowCount())}
    assert runner == {"alpha": "local", "remote": f"local ({SERVED_NOTE})"}
    board = loaded(qtbot, win.show_page("leaderboard"))
    board.select_task("sentiment")
    loaded(qtbot, board)
    cells = {board.table.item(r, 1).text(): board.table.item(r, 1) for r in range(board.table.rowCount())}
    assert cells["remote"].toolTip() == f"remote: {SERVED_NOTE}" and not cells["remote"].icon().isNull()
    assert SERVED_NOTE not in cells["alpha"].toolTip() and cells["alpha"].icon().isNull()
    assert f"remote: {SERVED_NOTE}" in board.notes.text() and "alpha: " not in board.notes.text()
