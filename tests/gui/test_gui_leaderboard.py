"""Leaderboard page: real runs in a real workspace DB; sliders re-rank through the widgets."""

from __future__ import annotations

import csv

import pytest
from PySide6.QtCore import Qt
from support.gui import loaded, make_window, seed_run

from dynadesk.store.evaluations import RunChange

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
    yield loaded(qtbot, page)
    window.close()
    services.close()


def _column(page, col: int) -> list[str]:
    return [page.table.item(r, col).text() for r in range(page.table.rowCount())]


def test_board_ranks_succeeded_runs_with_units(board_page):
    page = board_page
    assert page.ranking() == ["alpha", "bravo", "charlie"]
    assert _column(page, 1) == ["alpha", "bravo", "charlie"]
    headers = [page.table.horizontalHeaderItem(c).text() for c in range(page.table.columnCount())]
    assert headers == ["rank", "model", "Dynascore\n(pts)", "perf\n(%)", "throughput\n(ex/s)", "memory\n(GiB)",
                       "robustness\n(%)", "fairness\n(%)"]
    assert float(_column(page, 3)[0]) == pytest.approx(90.0)  # mean of d1/d2 at equal dataset weights
    assert set(page.dataset_sliders) == {"d1", "d2"}
    assert "Exchange rates: Dynaboard's rule" in page.notes.text()  # which rates scored it (issue 44)


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


def test_stability_chart_radar_and_csv_export(board_page, qtbot, tmp_path):
    page = board_page
    ranges = page.stability_chart.ranges()
    assert set(ranges) == {"alpha", "bravo", "charlie"}
    assert ranges["alpha"] == (1, 1, 2)  # perf weight 0 puts bravo first
    for r in page.result.rows:
        assert ranges[r.model] == (r.rank, r.stability["min_rank"], r.stability["max_rank"])
    page.table.selectRow(2)
    assert page.radar.series_names() == ["charlie"]
    page.table.selectAll()
    radar = page.radar.series()
    assert set(radar) == {"alpha", "bravo", "charlie"}
    assert page.radar.reference() == "charlie (the lowest-ranked row)"  # issue 44: measured against a named row
    assert radar["alpha"]["perf"] == pytest.approx(1.0)  # the best perf spans the axis
    assert radar["bravo"]["perf"] == pytest.approx((80 - 70) / (90 - 70))  # others as a fraction, from charlie
    assert radar["charlie"]["perf"] == pytest.approx(0.0)
    assert radar["bravo"]["throughput"] == pytest.approx(1.0) and radar["alpha"]["throughput"] < 0.2
    assert set(page.radar.scales().values()) == {"linear"}  # throughput spans only 10x here
    out = tmp_path / "board.csv"
    page.export_csv(str(out))
    rows = list(csv.reader(out.open()))
    assert rows[0][:4] == ["rank", "model", "dynascore", "perf (%)"]
    assert [r[1] for r in rows[1:]] == ["alpha", "bravo", "charlie"]


def test_breakdown_chart_is_each_metrics_share_of_the_dynascore(board_page, qtbot):
    page = board_page
    page.tabs.setCurrentIndex(1)
    shares = page.breakdown.contributions()
    assert list(shares) == page.ranking()
    last = page.result.rows[-1]  # no baseline: the bars are measured against the lowest-ranked row (issue 44)
    assert page.breakdown.reference() == f"{last.model} (the lowest-ranked row)"
    for r in page.result.rows:
        assert shares[r.model] == {k: pytest.approx(page.result.weights[k] * (r.converted[k] - last.converted[k]))
                                   for k in page.result.metrics}
        assert sum(shares[r.model].values()) == pytest.approx(r.dynascore - last.dynascore)
    qtbot.keyClick(page.metric_sliders["perf"].slider, Qt.Key.Key_Home)  # perf weight 0: no perf share
    assert all(v["perf"] == 0 for v in page.breakdown.contributions().values())
    for chart in (page.breakdown, page.stability_chart, page.radar):  # painting raises nothing (pytest-qt fails it)
        assert not chart.grab().isNull()


WIDE = {
    "a-model-with-a-long-name-from-the-hub-finetuned-on-everything": dict(
        perf={"d1": 92, "d2": 88}, throughput=12, memory=2, robustness=80, fairness=80, latency_p50_ms=40,
        latency_p90_ms=60, latency_p99_ms=90, throughput_batched=40, gpu_memory=1, macro_f1={"d1": 92, "d2": 88}),
    "majority-baseline": dict(perf={"d1": 40, "d2": 41}, throughput=324000, memory=0.1, robustness=100,
                              fairness=100, latency_p50_ms=0.01, latency_p90_ms=0.02, latency_p99_ms=0.03,
                              throughput_batched=900000, gpu_memory=0, macro_f1={"d1": 20, "d2": 21}),
    "small": dict(perf={"d1": 75, "d2": 80}, throughput=90, memory=1, robustness=85, fairness=90,
                  latency_p50_ms=11, latency_p90_ms=15, latency_p99_ms=30, throughput_batched=400, gpu_memory=0.5,
                  macro_f1={"d1": 70, "d2": 79}),
}


def _constant_outcomes() -> dict:
    from dynadesk.scoring import bootstrap as B

    golds = ["negative", "neutral", "positive"] * 10
    task = {"metric": "macro_f1", "output_kind": "label", "labels": ["negative", "neutral", "positive"]}
    return B.encode_outcomes(B.outcomes(task, "macro_f1", ["positive"] * 30, golds), "sha256:d1")


@pytest.fixture
def wide_page(require_qt, qtbot, tmp_path):
    from dynadesk.workspace import Workspace

    home = tmp_path / "ws"
    st = Workspace(home).open_store()
    for name, metrics in WIDE.items():
        run = seed_run(st, name, "sentiment", metrics)
        if name == "majority-baseline":  # its stored outcomes show one label for every example: a baseline
            st.evaluations.update(run, RunChange(profile={"outcomes": {"d1": _constant_outcomes()}}))
    st.close()
    services, window = make_window(qtbot, tmp_path, home)
    window.resize(1100, 700)
    page = window.show_page("leaderboard")
    page.select_task("sentiment")
    yield loaded(qtbot, page)
    window.close()
    services.close()


def _visible_width(page) -> int:
    return sum(page.table.columnWidth(c) for c in range(page.table.columnCount()) if not page.table.isColumnHidden(c))


def test_table_fits_its_pane_with_a_column_chooser(wide_page, qtbot):
    """The 13-column table used to be wider than its pane; the Dynascore metrics show, the rest are chosen."""
    page = wide_page
    qtbot.waitUntil(lambda: page.table.viewport().width() > 0)
    assert page.table.columnCount() == 3 + 11
    assert page.visible_metrics() == ["perf", "throughput", "memory", "robustness", "fairness"]
    assert _visible_width(page) <= page.table.viewport().width()
    assert page.table.horizontalScrollBar().maximum() == 0
    for action in page.column_actions.values():
        action.setChecked(True)  # every column: still no sideways scrolling
    assert all(not page.table.isColumnHidden(c) for c in range(page.table.columnCount()))
    assert _visible_width(page) <= page.table.viewport().width()
    page.column_actions["latency_p50_ms"].setChecked(False)
    page.rerank()  # a re-rank keeps the choice
    assert "latency_p50_ms" not in page.visible_metrics() and "gpu_memory" in page.visible_metrics()
    page.window().resize(800, 600)
    qtbot.wait(50)
    assert _visible_width(page) <= page.table.viewport().width()


def test_radar_axes_are_measured_against_the_baseline_and_log_scaled_where_they_span_decades(wide_page):
    """Issue 44: the constant baseline (324,000 examples/s, robustness and fairness 100) was the largest polygon;
    now every axis is measured against it (it sits at the centre wherever it gains nothing) and it is unranked."""
    from dynadesk.gui.charts import axis_fractions

    page = wide_page
    assert "majority-baseline" not in page.ranking()
    page.table.selectAll()
    assert page.radar.reference() == "majority-baseline (the baseline)"
    series = page.radar.series()
    assert set(series) == {*page.ranking(), "majority-baseline"}
    base = page.result.baselines[0].converted
    for metric in ("perf",):
        rel = {r.model: r.converted[metric] - base[metric] for r in page.result.rows}
        top = max(rel.values())
        for model, v in rel.items():
            assert series[model][metric] == pytest.approx(v / top)
        assert series["majority-baseline"][metric] == 0.0
    assert not page.radar.grab().isNull()
    assert axis_fractions([1.0, 10.0, 100.0]) == ([pytest.approx(1 / 3), pytest.approx(2 / 3), 1.0], "log")
    assert axis_fractions([5.0, 10.0]) == ([0.5, 1.0], "linear")
    # against a reference: zero at the reference, the sign kept, log in magnitude where it spans decades
    fr, scale = axis_fractions([0.0, 1.0, -1000.0])
    assert scale == "log" and fr == [pytest.approx(4 / 5), 1.0, 0.0]


def test_memory_budget_box_reranks_like_the_cli(wide_page):
    page = wide_page
    before = {r.model: r.dynascore for r in page.result.rows}
    page.budget.setValue(32.0)
    assert page.result.metrics["memory"].offset == 32.0
    assert all(r.dynascore != before[r.model] for r in page.result.rows)
    page.budget.setValue(0.5)  # over budget: memory saved is negative, drawn left of zero
    shares = page.breakdown.contributions()
    assert any(v["memory"] < 0 for v in shares.values())
    base = page.result.baselines[0]  # the bars are measured against the baseline (issue 44)
    assert page.breakdown.reference() == "majority-baseline (the baseline)"
    for r in page.result.rows:
        assert sum(shares[r.model].values()) == pytest.approx(r.dynascore - base.dynascore)
    assert not page.breakdown.grab().isNull()
    page.reset_weights()
    assert page.budget.value() == 16.0 and {r.model: r.dynascore for r in page.result.rows} == before


def test_a_noisy_run_is_marked_on_the_table(require_qt, qtbot, tmp_path):
    """Issue 39: a run measured on a busy machine carries a warning icon and says why in its tooltip."""
    from dynadesk.workspace import Workspace

    home = tmp_path / "ws"
    st = Workspace(home).open_store()
    runs = {name: seed_run(st, name, "sentiment", metrics) for name, metrics in BOARD.items()}
    st.evaluations.update(runs["charlie"], RunChange(environment={"measurement": {
        "noisy": True, "noisy_measurements": ["d1 batch1: trials spread 120%"]}}))
    st.close()
    services, window = make_window(qtbot, tmp_path, home)
    try:
        page = window.show_page("leaderboard")
        page.select_task("sentiment")
        loaded(qtbot, page)
        cells = {page.table.item(r, 1).text(): page.table.item(r, 1) for r in range(page.table.rowCount())}
        assert set(cells) == {"alpha", "bravo", "charlie"}  # the name stays the name (selection reads it)
        assert not cells["charlie"].icon().isNull() and "trials spread 120%" in cells["charlie"].toolTip()
        assert cells["alpha"].icon().isNull() and "noisy" not in cells["alpha"].toolTip()
    finally:
        window.close()
        services.close()


def test_interval_chart_draws_error_bars_and_ties_from_stored_intervals(require_qt, qtbot, tmp_path):
    """Issue 36: the app's chart shows each run's 95% interval as an error bar and marks a tie."""
    from dynadesk.scoring import bootstrap as B
    from dynadesk.workspace import Workspace

    golds = ["negative", "neutral", "positive"] * 10
    task = {"metric": "macro_f1", "output_kind": "label", "labels": ["negative", "neutral", "positive"]}
    home = tmp_path / "ws"
    st = Workspace(home).open_store()
    shown = {}
    for name, preds, perf in (("same-a", golds, 100), ("same-b", golds, 100), ("off", golds[1:] + golds[:1], 0)):
        run = seed_run(st, name, "sentiment", dict(perf={"d1": perf}, throughput=10, memory=1, robustness=80,
                                                   fairness=80))
        o = B.outcomes(task, "macro_f1", preds, golds)
        iv = B.interval(o, B.derive_seed(name, "sha256:d1", "macro_f1"))
        st.evaluations.update(run, RunChange(profile={"intervals": {"d1": iv},
                                                      "outcomes": {"d1": B.encode_outcomes(o, "sha256:d1")}}))
        shown[name] = iv
    st.close()
    services, window = make_window(qtbot, tmp_path, home)
    page = window.show_page("leaderboard")
    page.select_task("sentiment")
    loaded(qtbot, page)
    bars = page.interval_chart.bars()
    assert bars[("same-a", "d1")] == (100.0, 100.0, 100.0)
    assert bars[("off", "d1")][1:] == (shown["off"]["low"], shown["off"]["high"])
    assert [r[5] for r in page.interval_chart._rows] == [True, False, False]  # same-a ≈ same-b; off is not tied
    page.tabs.setCurrentWidget(page.tabs.widget(page.tabs.count() - 1))
    page.interval_chart.grab()  # painting raises nothing
    window.close()
    services.close()


def test_the_majority_model_is_a_baseline_row_unranked_in_the_app(wide_page):
    """Issue 44, item 4: the constant predictor is listed after the ranked rows with 'baseline' for its rank, its
    robustness and fairness marked trivial, and the notes say why; a board without one says none of it."""
    page = wide_page
    ranks = dict(zip(_column(page, 1), _column(page, 0)))
    assert ranks["majority-baseline"] == "baseline", "the constant predictor was ranked"
    assert all(v.isdigit() for m, v in ranks.items() if m != "majority-baseline")  # (the two trained rows tie)
    assert _column(page, 1)[-1] == "majority-baseline"  # after every ranked row
    headers = [page.table.horizontalHeaderItem(c).text().split("\n")[0] for c in range(page.table.columnCount())]
    row = _column(page, 1).index("majority-baseline")
    assert page.table.item(row, headers.index("robustness")).text() == "100 trivial"
    assert page.table.item(row, headers.index("fairness")).text() == "100 trivial"
    notes = page.notes.text()
    assert "majority-baseline: a baseline (its predictions are constant" in notes
    assert "majority-baseline: robustness and fairness trivial" in notes


def test_a_board_without_a_baseline_says_nothing_of_baselines(board_page):
    plain = board_page
    assert "baseline" not in plain.notes.text() and "trivial" not in plain.notes.text()
    assert "baseline" not in _column(plain, 0)
