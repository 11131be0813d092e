"""Leaderboard: the Dynascore table per task with 0–5 sliders for every metric and dataset
weight (re-ranked on every move), units on every column, a radar comparing the selected
models, the rank-stability view and CSV export."""

from __future__ import annotations

from PySide6.QtCore import Qt
from PySide6.QtWidgets import (QAbstractItemView, QComboBox, QFileDialog, QGridLayout, QGroupBox, QHBoxLayout,
                               QLabel, QPushButton, QScrollArea, QSlider, QSplitter, QTabWidget, QVBoxLayout,
                               QWidget)

from dynadesk.errors import DynaDeskError
from dynadesk.gui.charts import RadarChart
from dynadesk.gui.pages.base import Page
from dynadesk.gui.pages.tasks_data import fill, table
from dynadesk.gui.services.leaderboard import BOARD_METRICS, BoardInputs, LeaderboardService
from dynadesk.scoring.dynascore import DynascoreResult, default_metrics

STEPS = 2  # slider ticks per weight unit: 0, 0.5, …, 5


class WeightSlider(QWidget):
    """A labelled 0–5 slider (half steps)."""

    def __init__(self, name: str, value: float, parent: QWidget | None = None):
        super().__init__(parent)
        self.name = name
        lay = QHBoxLayout(self)
        lay.setContentsMargins(0, 0, 0, 0)
        self.label = QLabel(name)
        self.label.setMinimumWidth(110)
        self.slider = QSlider(Qt.Orientation.Horizontal)
        self.slider.setRange(0, 5 * STEPS)
        self.slider.setPageStep(STEPS)
        self.slider.setValue(round(value * STEPS))
        self.slider.setAccessibleName(f"weight of {name}")
        self.value_label = QLabel()
        self.value_label.setMinimumWidth(28)
        self.slider.valueChanged.connect(self._show)
        lay.addWidget(self.label)
        lay.addWidget(self.slider, 1)
        lay.addWidget(self.value_label)
        self._show()

    def value(self) -> float:
        return self.slider.value() / STEPS

    def _show(self) -> None:
        self.value_label.setText(f"{self.value():g}")


class LeaderboardPage(Page):
    title = "Leaderboard"

    def __init__(self, service: LeaderboardService, parent: QWidget | None = None):
        super().__init__(parent)
        self._svc = service
        self.board: BoardInputs | None = None
        self.result: DynascoreResult | None = None
        lay = self.body()

        top = QHBoxLayout()
        top.addWidget(QLabel("Task"))
        self.task_combo = QComboBox()
        self.task_combo.currentIndexChanged.connect(self.reload)
        top.addWidget(self.task_combo)
        top.addStretch(1)
        self.reset_button = QPushButton("Default weights")
        self.reset_button.clicked.connect(self.reset_weights)
        top.addWidget(self.reset_button)
        self.export_button = QPushButton("Export CSV…")
        self.export_button.clicked.connect(self._export_dialog)
        top.addWidget(self.export_button)
        lay.addLayout(top)

        split = QSplitter(Qt.Orientation.Horizontal)
        weights = QWidget()
        wl = QVBoxLayout(weights)
        wl.setContentsMargins(0, 0, 0, 0)
        mbox = QGroupBox("Metric weights")
        self.metric_layout = QVBoxLayout(mbox)
        self.metric_sliders: dict[str, WeightSlider] = {}
        defaults = default_metrics()
        for name in BOARD_METRICS:
            s = WeightSlider(name, defaults[name].weight)
            s.slider.valueChanged.connect(self.rerank)
            self.metric_sliders[name] = s
            self.metric_layout.addWidget(s)
        wl.addWidget(mbox)
        self.dataset_box = QGroupBox("Dataset weights")
        self.dataset_layout = QVBoxLayout(self.dataset_box)
        self.dataset_sliders: dict[str, WeightSlider] = {}
        scroll = QScrollArea()
        scroll.setWidgetResizable(True)
        scroll.setWidget(self.dataset_box)
        wl.addWidget(scroll, 1)
        split.addWidget(weights)

        right = QWidget()
        rl = QVBoxLayout(right)
        rl.setContentsMargins(0, 0, 0, 0)
        self.table = table(["rank", "model", "Dynascore (pts)"])
        self.table.setSelectionMode(QAbstractItemView.SelectionMode.ExtendedSelection)
        self.table.itemSelectionChanged.connect(self._update_radar)
        rl.addWidget(self.table, 2)
        self.notes = QLabel()
        self.notes.setWordWrap(True)
        rl.addWidget(self.notes)
        tabs = QTabWidget()
        self.radar = RadarChart()
        tabs.addTab(self.radar, "Compare selected")
        self.stability = table(["model", "rank", "best–worst rank"] + [f"{m} weight 0–5" for m in BOARD_METRICS])
        tabs.addTab(self.stability, "Rank stability")
        rl.addWidget(tabs, 2)
        split.addWidget(right)
        split.setSizes([300, 800])
        lay.addWidget(split, 1)
        service.changed.connect(self.refresh)
        self.refresh()

    # --------------------------------------------------------------- state
    def weights(self) -> dict[str, float]:
        return {k: s.value() for k, s in self.metric_sliders.items()}

    def dataset_weights(self) -> dict[str, float]:
        return {k: s.value() for k, s in self.dataset_sliders.items()}

    def ranking(self) -> list[str]:
        return [m.name for m in self.result.models] if self.result else []

    def refresh(self) -> None:
        current = self.task_combo.currentText()
        names = self.guard(self._svc.tasks) or []
        self.task_combo.blockSignals(True)
        self.task_combo.clear()
        self.task_combo.addItems(names)
        if current in names:
            self.task_combo.setCurrentText(current)
        self.task_combo.blockSignals(False)
        self.reload()

    def select_task(self, task: str) -> None:
        self.task_combo.setCurrentText(task)

    def reload(self) -> None:
        task = self.task_combo.currentText()
        if not task:
            return
        self.board = self.guard(self._svc.inputs, task)
        for s in self.dataset_sliders.values():
            s.deleteLater()
        self.dataset_sliders = {}
        for name in (self.board.datasets if self.board else []):
            s = WeightSlider(name, 1.0)
            s.slider.valueChanged.connect(self.rerank)
            self.dataset_sliders[name] = s
            self.dataset_layout.addWidget(s)
        self.dataset_box.setVisible(bool(self.dataset_sliders))
        self.rerank()

    def reset_weights(self) -> None:
        defaults = default_metrics()
        for name, s in self.metric_sliders.items():
            s.slider.blockSignals(True)
            s.slider.setValue(round(defaults[name].weight * STEPS))
            s.slider.blockSignals(False)
            s._show()
        for s in self.dataset_sliders.values():
            s.slider.blockSignals(True)
            s.slider.setValue(STEPS)
            s.slider.blockSignals(False)
            s._show()
        self.rerank()

    def rerank(self) -> None:
        """Recompute the board from the current sliders (no database access)."""
        if self.board is None:
            return
        if not self.board.models:
            self.result = None
            self.table.setRowCount(0)
            self.stability.setRowCount(0)
            self.radar.set_data([], [])
            self.notes.setText(f"No succeeded evaluation runs for task '{self.board.task}' yet: run one on the "
                               "Evaluate page.")
            return
        try:
            self.result = self._svc.compute(self.board, self.weights(), self.dataset_weights())
        except DynaDeskError as exc:
            self.result = None
            self.banner.error(str(exc))
            self.table.setRowCount(0)
            return
        if self.banner.kind == "error":
            self.banner.clear()
        self._fill_table()
        self._fill_stability()
        self._update_radar()

    def _fill_table(self) -> None:
        res, units = self.result, self.board.units
        selected = {self.table.item(i.row(), 1).text() for i in self.table.selectionModel().selectedRows()}
        headers = ["rank", "model", "Dynascore (pts)"] + [f"{m} ({units.get(m, '')})" for m in res.metrics]
        self.table.setColumnCount(len(headers))
        self.table.setHorizontalHeaderLabels(headers)
        fill(self.table, [[m.rank, m.name, round(m.dynascore, 3)] + [round(m.values[k], 3) for k in res.metrics]
                          for m in res.models], numeric=set(range(2, len(headers))) | {0})
        for r in range(self.table.rowCount()):
            if self.table.item(r, 1).text() in selected:
                self.table.selectRow(r)
        notes = list(res.notes)
        notes += [f"{name} left off: {why}" for name, why in res.left_off.items()]
        amrs = ", ".join(f"{k} {v:.3g}" for k, v in res.amrs.items() if v is not None and k != res.perf_metric)
        self.notes.setText("<small>" + "<br>".join(notes + ([f"AMRS: {amrs}"] if amrs else [])) + "</small>")

    def _fill_stability(self) -> None:
        stab = self._svc.stability(self.result)
        rows = []
        for m in self.result.models:
            s = stab.get(m.name, {})
            by = s.get("by_metric", {})
            rows.append([m.name, m.rank, f"{s.get('min_rank', m.rank)}–{s.get('max_rank', m.rank)}"]
                        + [f"{by[k][0]}–{by[k][1]}" if k in by else "" for k in BOARD_METRICS])
        fill(self.stability, rows, numeric={1})

    def _update_radar(self) -> None:
        if not self.result:
            self.radar.set_data([], [])
            return
        names = [self.table.item(i.row(), 1).text() for i in self.table.selectionModel().selectedRows()]
        if not names:
            names = self.ranking()[:3]
        metrics = list(self.result.metrics)
        # each axis scaled over all ranked models: 1 = the best utility on that metric
        cols = {k: [m.utilities[k] for m in self.result.models] for k in metrics}
        series = []
        for name in names:
            m = self.result.model(name)
            vals = []
            for k in metrics:
                lo, hi = min(cols[k]), max(cols[k])
                vals.append(1.0 if hi == lo else (m.utilities[k] - lo) / (hi - lo))
            series.append((name, vals))
        self.radar.set_data(metrics, series)

    # --------------------------------------------------------------- export
    def _export_dialog(self) -> None:
        if not self.result:
            self.banner.error("Nothing to export: the board is empty.")
            return
        path, _ = QFileDialog.getSaveFileName(self, "Export leaderboard", f"leaderboard-{self.board.task}.csv",
                                              "CSV (*.csv)")
        if path:
            self.export_csv(path)

    def export_csv(self, path: str) -> None:
        try:
            self._svc.export_csv(self.result, self.board.units, path)
        except DynaDeskError as exc:
            self.banner.error(str(exc))
            return
        self.banner.show_message(f"Exported {len(self.result.models)} models to {path}", "ok")


def make(services, parent: QWidget | None = None) -> LeaderboardPage:
    svc = services.extra.get("leaderboard")
    if svc is None:
        svc = services.extra["leaderboard"] = LeaderboardService(services.ws)
    return LeaderboardPage(svc, parent=parent)
