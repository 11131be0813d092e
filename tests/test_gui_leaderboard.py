"""Leaderboard page: real runs in a real workspace DB; sliders re-rank through the widgets."""

from __future__ import annotations

import csv

import pytest
from gui_support import make_window, seed_run
from PySide6.QtCore import Qt

pytestmark = pytest.mark.qt

BOARD = {
    "alpha": dict(perf={"d1": 92, "d2": 88}, throughput=10, memory=2, robustness=80, fairness=80),
    "bravo": dict(perf={"d1": 75, "d2": 85}, throughput=100, memory=1, robustness=80, fairness=80),
    "charlie": dict(perf={"d1": 70, "d2": 70}, throughput=50, memory=1.5, robustness=70, fairness=70),
}


@pytest.fixture
def board_page(require_qt, qtbot, tmp_path):
    from dynadesk.workspace import Workspace

    home = tmp_path / "ws"
    st = Workspace(home).open_store()
    for name, metrics in BOARD.items():
        seed_run(st, name, "sentiment", metrics)
    seed_run(st, "failed-one", "sentiment", {"perf": 99}, status="failed")  # not on the board
    st.close()
    services, window = make_window(qtbot, tmp_path, home)
    page = window.show_page("leaderboard")
    page.select_task("sentiment")
    yield page
    window.close()
    services.close()


def _column(page, col: int) -> list[str]:
    return [page.table.item(r, col).text() for r in range(page.table.rowCount())]


def test_board_ranks_succeeded_runs_with_units(board_page):
    page = board_page
    assert page.ranking() == ["alpha", "bravo", "charlie"]
    assert _column(page, 1) == ["alpha", "bravo", "charlie"]
    headers = [page.table.horizontalHeaderItem(c).text() for c in range(page.table.columnCount())]
    assert headers == ["rank", "model", "Dynascore (pts)", "perf (%)", "throughput (ex/s)", "memory (GiB)",
                       "robustness (%)", "fairness (%)"]
    assert float(_column(page, 3)[0]) == pytest.approx(90.0)  # mean of d1/d2 at equal dataset weights
    assert set(page.dataset_sliders) == {"d1", "d2"}


def test_moving_a_weight_slider_reorders_the_table(board_page, qtbot):
    page = board_page
    perf = page.metric_sliders["perf"].slider
    perf.setFocus()
    qtbot.keyClick(perf, Qt.Key.Key_Home)  # perf weight 4 -> 0
    assert page.weights()["perf"] == 0
    assert page.metric_sliders["perf"].value_label.text() == "0"
    assert _column(page, 1)[0] == "bravo"
    assert page.ranking() == ["bravo", "alpha", "charlie"]
    qtbot.mouseClick(page.reset_button, Qt.MouseButton.LeftButton)
    assert page.ranking() == ["alpha", "bravo", "charlie"]


def test_dataset_weight_changes_scores(board_page, qtbot):
    page = board_page
    before = float(_column(page, 2)[1])
    d1 = page.dataset_sliders["d1"].slider
    qtbot.keyClick(d1, Qt.Key.Key_Home)  # d1 weight 0: only d2 counts for perf
    perf = dict(zip(_column(page, 1), (float(x) for x in _column(page, 3))))
    assert perf == {"alpha": 88.0, "bravo": 85.0, "charlie": 70.0}
    assert float(_column(page, 2)[_column(page, 1).index("bravo")]) != before


def test_all_weights_zero_is_reported_not_crashing(board_page, qtbot):
    page = board_page
    for s in page.metric_sliders.values():
        qtbot.keyClick(s.slider, Qt.Key.Key_Home)
    assert page.banner.kind == "error"
    assert "weight" in page.banner.text()
    qtbot.keyClick(page.metric_sliders["fairness"].slider, Qt.Key.Key_PageUp)
    assert page.banner.kind == ""
    assert page.table.rowCount() == 3


def test_stability_radar_and_csv_export(board_page, qtbot, tmp_path):
    page = board_page
    stab = {page.stability.item(r, 0).text(): page.stability.item(r, 2).text()
            for r in range(page.stability.rowCount())}
    assert set(stab) == {"alpha", "bravo", "charlie"}
    assert stab["alpha"] == "1–2"  # perf weight 0 puts bravo first
    page.table.selectRow(2)
    assert page.radar.series_names() == ["charlie"]
    page.table.selectAll()
    radar = page.radar.series()
    assert set(radar) == {"alpha", "bravo", "charlie"}
    assert radar["alpha"]["perf"] == pytest.approx(1.0)  # the best perf spans the axis
    assert radar["bravo"]["perf"] == pytest.approx(80 / 90)  # others as a fraction of it
    assert radar["bravo"]["throughput"] == pytest.approx(1.0) and radar["alpha"]["throughput"] < 0.2
    out = tmp_path / "board.csv"
    page.export_csv(str(out))
    rows = list(csv.reader(out.open()))
    assert rows[0][:4] == ["rank", "model", "dynascore", "perf (%)"]
    assert [r[1] for r in rows[1:]] == ["alpha", "bravo", "charlie"]
