"""Every note the app's leaderboard prints tells the truth (issue 44, item 8): each line under the table appears when,
and only when, its condition holds: the empty board's hint, a model left off with its reason, the coverage legend,
the AMRS line, the exchange rates in use, and the scoring board's own notes (tests/scoring/test_scoring_notes_truth.py
covers their conditions; here: that the app shows exactly the board's notes)."""

from __future__ import annotations

import pytest
from support.gui import loaded, make_window, seed_run

from dynadesk.scoring.leaderboard import COVERAGE_LEGEND, build_leaderboard

pytestmark = pytest.mark.qt
EMPTY = "No succeeded evaluation runs for task"


def _page(qtbot, tmp_path, runs: dict[str, dict]):
    from dynadesk.workspace import Workspace

    home = tmp_path / "ws"
    st = Workspace(home).open_store()
    for name, metrics in runs.items():
        seed_run(st, name, "sentiment", metrics)
    board = build_leaderboard(st, "sentiment") if runs else None
    st.close()
    services, window = make_window(qtbot, tmp_path, home)
    page = window.show_page("leaderboard")
    page.select_task("sentiment")
    return services, window, loaded(qtbot, page), board


def _lines(page) -> list[str]:
    return page.notes.text().removeprefix("<small>").removesuffix("</small>").split("<br>")


FULL = dict(perf=80, throughput=100, memory=1, robustness=70, fairness=75)


def test_an_empty_board_says_so_and_names_no_rates(require_qt, qtbot, tmp_path):
    services, window, page, _ = _page(qtbot, tmp_path, {})
    try:
        lines = _lines(page)
        assert any(EMPTY in x for x in lines)
        assert not any(x.startswith("AMRS:") for x in lines)  # no rate was estimated from no rows
        assert COVERAGE_LEGEND not in lines
    finally:
        window.close()
        services.close()


def test_the_app_shows_exactly_the_boards_notes_and_each_line_when_it_holds(require_qt, qtbot, tmp_path):
    runs = {"alpha": FULL, "bravo": dict(FULL, perf=70, throughput=300, memory=0.5, robustness=60),
            "charlie": dict(FULL, perf=60, robustness_sources=12, robustness_low_confidence=1),
            "partial": dict(perf=90)}  # lacks every other metric: left off
    services, window, page, board = _page(qtbot, tmp_path, runs)
    try:
        lines = _lines(page)
        assert not any(EMPTY in x for x in lines)  # rows exist
        assert [x for x in lines if " left off: " in x] == [f"partial left off: {board.left_off['partial']}"]
        assert COVERAGE_LEGEND in lines  # charlie's robustness has its coverage
        for note in board.notes:  # the scoring board's notes, each shown, none added
            assert note in lines, (note, lines)
        amrs = [x for x in lines if x.startswith("AMRS:")]
        assert len(amrs) == 1 and "throughput" in amrs[0]
        assert lines[-1] == f"Exchange rates: {board.rates}"
        shown = {x for x in lines if x not in board.notes and not x.startswith(("AMRS:", "Normalised weights:",
                                                                                  "Exchange rates:"))}
        assert shown == {f"partial left off: {board.left_off['partial']}", COVERAGE_LEGEND}
    finally:
        window.close()
        services.close()
