"""Leaderboard: the Dynascore table per task with 0–5 sliders for every metric and dataset
weight (re-ranked on every move), units on every column, a radar comparing the selected
models, the rank-stability view and CSV export."""

from __future__ import annotations

from PySide6.QtCore import Qt
from PySide6.QtWidgets import (
    QAbstractItemView,
    QComboBox,
    QFileDialog,
    QGroupBox,
    QHBoxLayout,
    QLabel,
    QPushButton,
    QScrollArea,
    QSlider,
    QSplitter,
    QTabWidget,
    QVBoxLayout,
    QWidget,
)

from dynadesk.errors import DynaDeskError
from dynadesk.gui.charts import RadarChart
from dynadesk.gui.pages.base import Page, refill_combo
from dynadesk.gui.pages.tables import fill, table
from dynadesk.gui.services.leaderboard import BOARD_METRICS, LeaderboardService
from dynadesk.scoring.dynascore import default_metrics
from dynadesk.scoring.leaderboard import Leaderboard

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
        self.task: str | None = None
        self.result: Leaderboard | None = None
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
        self.dataset_layout.addStretch(1)
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
        return [r.model for r in self.result.rows] if self.result else []

    def refresh(self) -> None:
        refill_combo(self.task_combo, self.guard(self._svc.tasks) or [])
        self.reload()

    def select_task(self, task: str) -> None:
        self.task_combo.setCurrentText(task)

    def reload(self) -> None:
        task = self.task_combo.currentText()
        if not task:
            return
        self.task = task
        self.guard(self._svc.reload, task)
        for s in self.dataset_sliders.values():
            s.deleteLater()
        self.dataset_sliders = {}
        for name in self.guard(self._svc.datasets, task) or []:
            s = WeightSlider(name, 1.0)
            s.slider.valueChanged.connect(self.rerank)
            self.dataset_sliders[name] = s
            self.dataset_layout.insertWidget(self.dataset_layout.count() - 1, s)
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
        """Rebuild the board with the current slider weights."""
        if self.task is None:
            return
        try:
            self.result = self._svc.board(self.task, self.weights(), self.dataset_weights())
        except DynaDeskError as exc:
            self.result = None
            self.banner.error(str(exc))
            self.table.setRowCount(0)
            self.stability.setRowCount(0)
            self.radar.set_data([], [])
            return
        if self.banner.kind == "error":
            self.banner.clear()
        self._fill_table()
        self._fill_stability()
        self._update_radar()

    def _fill_table(self) -> None:
        res = self.result
        selected = {self.table.item(i.row(), 1).text() for i in self.table.selectionModel().selectedRows()}
        shown = res.shown_metrics
        headers = ["rank", "model", "Dynascore (pts)"] + [f"{m} ({res.units.get(m, '—')})" for m in shown]
        layout_key = (tuple(headers), tuple(sorted(r.model for r in res.rows)))
        resize = layout_key != getattr(self, "_layout_key", None)  # same columns and models: keep the widths
        self._layout_key = layout_key
        self.table.setColumnCount(len(headers))
        self.table.setHorizontalHeaderLabels(headers)
        fill(self.table, [[r.rank, r.model, round(r.dynascore, 3)]
                          + [round(r.values[m], 3) if m in r.values else "" for m in shown] for r in res.rows],
             numeric=set(range(2, len(headers))) | {0}, resize=resize)
        for r in range(self.table.rowCount()):
            if self.table.item(r, 1).text() in selected:
                self.table.selectRow(r)
        notes = list(res.notes)
        notes += [f"{name} left off: {why}" for name, why in res.left_off.items()]
        if not res.rows and not res.left_off:
            notes.insert(0, f"No succeeded evaluation runs for task '{res.task}' yet: run one on the Evaluate page.")
        amrs = ", ".join(f"{k} {v:.3g}" for k, v in res.amrs.items() if v is not None and k != "perf")
        weights = ", ".join(f"{k} {v:.0%}" for k, v in res.weights.items())
        self.notes.setText("<small>" + "<br>".join(notes + [f"Normalised weights: {weights}"]
                                                   + ([f"AMRS: {amrs}"] if amrs else [])) + "</small>")

    def _fill_stability(self) -> None:
        rows = []
        for r in self.result.rows:
            s = r.stability or {}
            by = s.get("by_metric", {})
            rows.append([r.model, r.rank, f"{s.get('min_rank', r.rank)}–{s.get('max_rank', r.rank)}"]
                        + [f"{by[k][0]}–{by[k][1]}" if k in by else "" for k in BOARD_METRICS])
        fill(self.stability, rows, numeric={1}, resize=getattr(self, "_stability_rows", -1) != len(rows))
        self._stability_rows = len(rows)

    def _update_radar(self) -> None:
        if not self.result or not self.result.rows:
            self.radar.set_data([], [])
            return
        names = [self.table.item(i.row(), 1).text() for i in self.table.selectionModel().selectedRows()]
        if not names:
            names = self.ranking()[:3]
        rows = {r.model: r for r in self.result.rows}
        metrics = list(self.result.metrics)
        # each axis: the converted (higher is better) value as a fraction of the best model's, from zero
        # (not min-max, which would blow tiny differences up to the full axis)
        cols = {k: [r.converted.get(k, 0.0) for r in self.result.rows] for k in metrics}
        series = []
        for name in names:
            r = rows[name]
            vals = []
            for k in metrics:
                base, hi = min(0.0, min(cols[k])), max(cols[k])
                vals.append(1.0 if hi <= base else (r.converted.get(k, 0.0) - base) / (hi - base))
            series.append((name, vals))
        self.radar.set_data(metrics, series)

    # --------------------------------------------------------------- export
    def _export_dialog(self) -> None:
        if not self.result:
            self.banner.error("Nothing to export: the board is empty.")
            return
        path, _ = QFileDialog.getSaveFileName(self, "Export leaderboard", f"leaderboard-{self.task}.csv",
                                              "CSV (*.csv)")
        if path:
            self.export_csv(path)

    def export_csv(self, path: str) -> None:
        try:
            self._svc.export_csv(self.result, path)  # type: ignore[arg-type]
        except DynaDeskError as exc:
            self.banner.error(str(exc))
            return
        self.banner.show_message(f"Exported {len(self.result.rows)} models to {path}", "ok")


def make(services, parent: QWidget | None = None) -> LeaderboardPage:
    svc = services.extra.get("leaderboard")
    if svc is None:
        svc = services.extra["leaderboard"] = LeaderboardService(services.ws)
    return LeaderboardPage(svc, parent=parent)
