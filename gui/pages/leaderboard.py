"""Leaderboard: the Dynascore table per task, 0–5 weight sliders per metric and dataset and a memory budget
(re-ranked on every move), units on every column, a column chooser, a radar of the selected models (log-scaled
across orders of magnitude), a Dynascore breakdown per model, a rank-stability chart and CSV export."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from PySide6.QtCore import QEvent, QObject, Qt, Signal
from PySide6.QtGui import QAction
from PySide6.QtWidgets import (
    QAbstractItemView,
    QComboBox,
    QDoubleSpinBox,
    QFileDialog,
    QGroupBox,
    QHBoxLayout,
    QHeaderView,
    QLabel,
    QMenu,
    QScrollArea,
    QSlider,
    QSplitter,
    QStyle,
    QTabWidget,
    QToolButton,
    QVBoxLayout,
    QWidget,
)

from dynadesk.errors import DynaDeskError
from dynadesk.gui.charts import BreakdownChart, IntervalChart, RadarChart, RankRangeChart, axis_fractions
from dynadesk.gui.pages.base import ServicePage
from dynadesk.gui.pages.leaderboard_rates import RatesBar
from dynadesk.gui.pages.scaffold import button, named_table, pane
from dynadesk.gui.pages.tables import fill
from dynadesk.gui.services.leaderboard import BOARD_METRICS, LeaderboardService
from dynadesk.models.served import SERVED_NOTE
from dynadesk.scoring.answerability import beside
from dynadesk.scoring.baselines import breakdown_reference
from dynadesk.scoring.dynascore import DEFAULT_MEMORY_BUDGET_GIB, default_metrics
from dynadesk.scoring.leaderboard import ALL_CLASSES, COVERAGE_LEGEND, Leaderboard
from dynadesk.task_extras import default_weights

if TYPE_CHECKING:
    from dynadesk.gui.services.context import Services

STEPS = 2  # slider ticks per weight unit: 0, 0.5, …, 5
FIXED_COLUMNS = 3  # rank, model, Dynascore: always shown


def _shown(row: Any, metric: str) -> object:
    """A metric cell: the value, and beside robustness/fairness their coverage ("80.0 (n=466)", as the CLI); a
    constant predictor's robustness and fairness say "trivial" (scoring.baselines)."""
    if metric not in row.values:
        return ""
    value = round(row.values[metric], 3)
    text = row.with_coverage(metric, f"{value:g}")
    if metric == "perf":  # SQuAD 2.0: HasAns / NoAns beside the overall figure, as every board
        text = beside(text, row.values)
    if metric in ((row.baseline or {}).get("trivial") or ()):
        return f"{text} trivial"
    return value if text == f"{value:g}" else text


MODEL_SHARE = 0.35  # the model column takes at most this share of the table's width (full names in tooltips)
BREAKDOWN_MODELS = 20  # the breakdown chart shows the best models (and any selected one)


def header(metric: str, unit: str) -> str:
    """A column header: the unit on a second line keeps columns narrow."""
    return f"{metric}\n({unit})"


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


class LeaderboardPage(ServicePage):
    title = "Leaderboard"
    _svc: LeaderboardService
    loaded = Signal()  # the board of the task on screen was read and ranked

    def build(self, lay: QVBoxLayout) -> None:
        self.task: str | None = None
        self.result: Leaderboard | None = None
        self.loading = False  # a read of the board is under way on a pool thread
        self._svc.loaded.connect(self._on_loaded)
        self._svc.loadFailed.connect(self._on_load_failed)

        top = self.task_bar(self.reload, self._svc)
        self._board_controls(top)
        self.rates_bar = RatesBar(self._svc, self)  # a board's rate edition (dynadesk leaderboard --rates)
        lay.addWidget(self.rates_bar)
        split = QSplitter(Qt.Orientation.Horizontal)
        split.addWidget(self._weights_pane())

        right, rl = pane()
        self.table = named_table(["rank", "model", header("Dynascore", "pts")], "Leaderboard", self._selection_changed)
        self.table.setSelectionMode(QAbstractItemView.SelectionMode.ExtendedSelection)
        self.table.setHorizontalScrollBarPolicy(Qt.ScrollBarPolicy.ScrollBarAlwaysOff)
        self.table.setWordWrap(False)
        self.table.viewport().installEventFilter(self)  # re-share the width whenever the pane resizes
        rl.addWidget(self.table, 2)
        self.notes = QLabel()
        self.notes.setWordWrap(True)
        rl.addWidget(self.notes)
        self.tabs = self._chart_tabs()
        rl.addWidget(self.tabs, 2)
        split.addWidget(right)
        split.setSizes([300, 800])
        lay.addWidget(split, 1)
        self._svc.changed.connect(self.refresh)

    def _board_controls(self, top: QHBoxLayout) -> None:
        """After the task: the memory budget, the hardware class, the column chooser, default weights, export."""
        top.addWidget(QLabel("Memory budget"))
        self.budget = QDoubleSpinBox()
        self.budget.setRange(0.5, 1024.0)
        self.budget.setDecimals(1)
        self.budget.setSuffix(" GiB")
        self.budget.setValue(DEFAULT_MEMORY_BUDGET_GIB)
        self.budget.setAccessibleName("memory budget in GiB")
        self.budget.setToolTip("Memory counts as memory saved below this budget (dynadesk leaderboard --memory-budget)")
        self.budget.valueChanged.connect(self.rerank)
        top.addWidget(self.budget)
        top.addWidget(QLabel("Hardware class"))
        self.hardware_combo = QComboBox()
        self.hardware_combo.setAccessibleName("hardware class")
        self.hardware_combo.setToolTip("Measured metrics (throughput, latency, memory) compare only within one "
                                       "hardware class")
        self.hardware_combo.activated.connect(self._on_hardware_class)
        top.addWidget(self.hardware_combo)
        top.addStretch(1)
        self.columns_button = QToolButton()
        self.columns_button.setText("Columns")
        self.columns_button.setPopupMode(QToolButton.ToolButtonPopupMode.InstantPopup)
        self.columns_menu = QMenu(self.columns_button)
        self.columns_button.setMenu(self.columns_menu)
        self.column_actions: dict[str, QAction] = {}
        top.addWidget(self.columns_button)
        self.reset_button = button("Default weights", self.reset_weights)
        top.addWidget(self.reset_button)
        self.export_button = button("Export CSV…", self._export_dialog)
        top.addWidget(self.export_button)

    def _weights_pane(self) -> QWidget:
        """The metric sliders (Dynaboard's weights) and, below them, one slider per scored dataset."""
        weights, wl = pane()
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
        scroll.setAccessibleName("Dataset weights")
        scroll.setWidgetResizable(True)
        scroll.setWidget(self.dataset_box)
        wl.addWidget(scroll, 1)
        return weights

    def _chart_tabs(self) -> QTabWidget:
        """The views of the selected rows: radar, Dynascore breakdown, rank stability, bootstrap intervals."""
        self.tabs = QTabWidget()
        self.radar = RadarChart()
        self.tabs.addTab(self.radar, "Compare selected")
        self.breakdown = BreakdownChart()
        self.breakdown.setToolTip("Each metric's contribution (normalised weight × converted value, in points) "
                                  "against the row named above the bars (the baseline, else the lowest-ranked row), "
                                  "so what every row shares does not fill the bar; the table keeps the absolute "
                                  "Dynascore")
        self.tabs.addTab(_scrolled(self.breakdown), "Dynascore breakdown")
        self.stability_chart = RankRangeChart()
        self.stability_chart.setToolTip("Ranks each model takes as each metric weight in turn varies over 0–5 "
                                        "(dot: its rank now)")
        self.tabs.addTab(_scrolled(self.stability_chart), "Rank stability")
        self.interval_chart = IntervalChart()
        self.interval_chart.setToolTip("Each model's task metric per test set with its 95% bootstrap interval "
                                       "(error bar); ≈: tied with the next row (paired bootstrap)")
        self.tabs.addTab(_scrolled(self.interval_chart), "Intervals")
        return self.tabs

    # --------------------------------------------------------------- state
    def weights(self) -> dict[str, float]:
        return {k: s.value() for k, s in self.metric_sliders.items()}

    def dataset_weights(self) -> dict[str, float]:
        return {k: s.value() for k, s in self.dataset_sliders.items()}

    def ranking(self) -> list[str]:
        """The ranked models, best first (baselines are listed after them, unranked)."""
        return [r.model for r in self.result.rows] if self.result else []

    def visible_metrics(self) -> list[str]:
        """The metric columns shown now (the column chooser's checked entries)."""
        return [m for m, a in self.column_actions.items() if a.isChecked()]

    def _on_hardware_class(self, _index: int) -> None:
        self.reload(self.hardware_combo.currentData())

    def _fill_hardware_combo(self) -> None:
        """The classes present (models with a run in each) and "all classes"; the ranked one selected."""
        self.hardware_combo.blockSignals(True)
        self.hardware_combo.clear()
        for cls, n in self._svc.hardware_classes.items():
            self.hardware_combo.addItem(f"{cls} ({n} model{'s' if n != 1 else ''})", cls)
        self.hardware_combo.addItem("all classes (measured metrics not comparable)", ALL_CLASSES)
        self.hardware_combo.setCurrentIndex(max(0, self.hardware_combo.findData(self._svc.hardware_class)))
        self.hardware_combo.blockSignals(False)

    def reload(self, hardware_class: str | None = None) -> None:
        """Read the task's board off the GUI thread; :meth:`_on_loaded` shows it (the newest read only)."""
        task = self.task_combo.currentText()
        if not task:
            return
        if task != self.task:
            hardware_class = None  # a new task starts on its own default class and its own default weights
            self.task = task
            self.reset_weights()
        self.loading = True
        self._svc.load(task, hardware_class if isinstance(hardware_class, str) else None)

    def _on_loaded(self, task: str) -> None:
        if task != self.task:
            return  # read for a task no longer on screen
        self.loading = False
        self._fill_hardware_combo()
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
        self.loaded.emit()

    def _on_load_failed(self, message: str) -> None:
        self.loading = False
        self.banner.error(message)
        self.loaded.emit()

    def reset_weights(self) -> None:
        defaults = default_weights(self.task)  # the task file's, else the registry's
        for name, s in self.metric_sliders.items():
            s.slider.blockSignals(True)
            s.slider.setValue(round(defaults[name] * STEPS))
            s.slider.blockSignals(False)
            s._show()
        for s in self.dataset_sliders.values():
            s.slider.blockSignals(True)
            s.slider.setValue(STEPS)
            s.slider.blockSignals(False)
            s._show()
        self.budget.blockSignals(True)
        self.budget.setValue(DEFAULT_MEMORY_BUDGET_GIB)
        self.budget.blockSignals(False)
        self.rerank()

    def rerank(self) -> None:
        """Rebuild the board with the current slider weights."""
        if self.task is None or self._svc.current(self.task) is None:
            return  # not read yet: the read re-ranks when it lands
        try:
            res = self._svc.board(self.task, self.weights(), self.dataset_weights(), self.budget.value())
        except DynaDeskError as exc:
            self.result = None
            self.banner.error(str(exc))
            self.table.setRowCount(0)
            self.stability_chart.set_data([], 0)
            self.breakdown.set_data([], [])
            self.interval_chart.set_data([])
            self.radar.set_data([], [])
            return
        if self.banner.kind == "error":
            self.banner.clear()
        self.result = res
        self._fill_table(res)
        self._fill_stability(res)
        self._fill_breakdown(res)
        self._fill_intervals(res)
        self._update_radar()

    def _fill_table(self, res: Leaderboard) -> None:
        selected = {self.table.item(i.row(), 1).text() for i in self.table.selectionModel().selectedRows()}
        shown = res.shown_metrics
        headers = ["rank", "model", header("Dynascore", "pts")] + [header(m, res.units.get(m, "—")) for m in shown]
        layout_key = (tuple(headers), tuple(sorted(r.model for r in [*res.rows, *res.baselines])))
        resize = layout_key != getattr(self, "_layout_key", None)  # same columns and models: keep the widths
        self._layout_key = layout_key
        self.table.setColumnCount(len(headers))
        self.table.setHorizontalHeaderLabels(headers)
        fill(self.table, [[r.rank if r.baseline is None else "baseline", r.model, round(r.dynascore, 3)]
                          + [_shown(r, m) for m in shown] for r in [*res.rows, *res.baselines]],
             numeric=set(range(2, len(headers))) | {0}, resize=False)
        warn = self.style().standardIcon(QStyle.StandardPixmap.SP_MessageBoxWarning)
        noisy = {r.model: r.noisy for r in res.rows if r.noisy}
        for row in range(self.table.rowCount()):
            cell = self.table.item(row, 1)
            cell.setToolTip(cell.text())
            if cell.text() in self._svc.served_models:  # answers from an endpoint: icon, tooltip, a note below
                cell.setIcon(self.style().standardIcon(QStyle.StandardPixmap.SP_DriveNetIcon))
                cell.setToolTip(f"{cell.text()}: {SERVED_NOTE}")
            if cell.text() in noisy:  # measured on a busy machine: never ranked silently (dynadesk leaderboard: '*')
                cell.setIcon(warn)
                cell.setToolTip(f"{cell.text()}: measured figures flagged noisy ({'; '.join(noisy[cell.text()])}); "
                                "its throughput and latency rest on a busy machine")
        if resize:
            self._sync_column_chooser(shown, res)
        self._show_columns()
        for r in range(self.table.rowCount()):
            if self.table.item(r, 1).text() in selected:
                self.table.selectRow(r)
        notes = list(res.notes)
        notes += [f"{name} left off: {why}" for name, why in res.left_off.items()]
        notes += [f"{r.model}: {SERVED_NOTE}" for r in res.rows if r.model in self._svc.served_models]
        if any(r.coverage() for r in res.rows):
            notes.append(COVERAGE_LEGEND)
        if not res.rows and not res.left_off:
            notes.insert(0, f"No succeeded evaluation runs for task '{res.task}' yet: run one on the Evaluate page.")
        amrs = ", ".join(f"{k} {v:.3g}" for k, v in res.amrs.items() if v is not None and k != "perf")
        weights = ", ".join(f"{k} {v:.0%}" for k, v in res.weights.items())
        self.notes.setText("<small>" + "<br>".join(notes + [f"Normalised weights: {weights}"]
                                                   + ([f"AMRS: {amrs}"] if amrs else [])
                                                   + [f"Exchange rates: {res.rates}"]) + "</small>")

    def _sync_column_chooser(self, shown: list[str], res: Leaderboard) -> None:
        """One checkable entry per metric column; the Dynascore metrics start checked, a choice is kept."""
        chosen = {m: a.isChecked() for m, a in self.column_actions.items()}
        self.columns_menu.clear()
        self.column_actions = {}
        for m in shown:
            action = QAction(m, self.columns_menu)
            action.setCheckable(True)
            action.setChecked(chosen.get(m, m in res.metrics))
            action.toggled.connect(self._show_columns)
            self.columns_menu.addAction(action)
            self.column_actions[m] = action

    def _show_columns(self) -> None:
        """Hide unchosen metric columns and share the pane's width out, so the table never scrolls sideways."""
        for i, action in enumerate(self.column_actions.values()):
            self.table.setColumnHidden(FIXED_COLUMNS + i, not action.isChecked())
        head = self.table.horizontalHeader()
        head.setStretchLastSection(False)
        head.setSectionResizeMode(0, QHeaderView.ResizeMode.ResizeToContents)
        head.setSectionResizeMode(1, QHeaderView.ResizeMode.Interactive)
        for c in range(2, self.table.columnCount()):
            head.setSectionResizeMode(c, QHeaderView.ResizeMode.Stretch)
        self._fit_model_column()

    def _fit_model_column(self) -> None:
        """Model names get their width up to ``MODEL_SHARE`` of the pane; the numeric columns share the rest."""
        if self.table.columnCount() < 2:
            return
        head = self.table.horizontalHeader()
        width = self.table.viewport().width()
        stretched = sum(1 for c in range(2, self.table.columnCount()) if not self.table.isColumnHidden(c))
        room = width - self.table.columnWidth(0) - stretched * head.minimumSectionSize()
        wanted = max(self.table.sizeHintForColumn(1), head.sectionSizeHint(1)) + 12
        self.table.setColumnWidth(1, max(head.minimumSectionSize(), min(wanted, int(width * MODEL_SHARE), room)))

    def eventFilter(self, watched: QObject, event: QEvent) -> bool:
        if watched is self.table.viewport() and event.type() == QEvent.Type.Resize:
            self._fit_model_column()
        return bool(super().eventFilter(watched, event))

    def _fill_stability(self, res: Leaderboard) -> None:
        rows = []
        for r in res.rows:
            s = r.stability or {}
            rows.append((r.model, r.rank, s.get("min_rank", r.rank), s.get("max_rank", r.rank)))
        self.stability_chart.set_data(rows, len(res.rows))

    def _fill_intervals(self, res: Leaderboard) -> None:
        """Error bars from each run's stored intervals (issue 36); the value is the run's own per-dataset perf."""
        rows = []
        for r in res.rows[:BREAKDOWN_MODELS]:
            perf = r.per_dataset.get("perf", {})
            for name, iv in sorted(r.intervals.items()):
                value = perf.get(name, (iv["low"] + iv["high"]) / 2)
                rows.append((r.model, name, value, iv["low"], iv["high"], r.tied_with is not None))
        self.interval_chart.set_data(rows)

    def _fill_breakdown(self, res: Leaderboard) -> None:
        """Each metric's share of the Dynascore: normalised weight × converted value (they sum to the score)."""
        selected = set(self._selected_models())
        rows = [r for i, r in enumerate(res.rows) if i < BREAKDOWN_MODELS or r.model in selected]
        metrics = list(res.metrics)
        ref = breakdown_reference(res)
        base = ref[2] if ref else {}
        self.breakdown.set_data(metrics, [(r.model, [res.weights[k] * r.converted[k] - base.get(k, 0.0)
                                                     for k in metrics]) for r in rows],
                                f"{ref[0]} ({ref[1]})" if ref else None)

    def _selection_changed(self) -> None:
        if self.result is not None:
            self._fill_breakdown(self.result)
        self._update_radar()

    def _selected_models(self) -> list[str]:
        return [self.table.item(i.row(), 1).text() for i in self.table.selectionModel().selectedRows()]

    def _update_radar(self) -> None:
        res = self.result
        if res is None or not res.rows:
            self.radar.set_data([], [])
            return
        names = self._selected_models() or self.ranking()[:3]
        every = [*res.rows, *res.baselines]
        index = {r.model: i for i, r in enumerate(every)}
        metrics = list(res.metrics)
        ref = breakdown_reference(res)
        base = {k: v / res.weights[k] if res.weights[k] else 0.0 for k, v in (ref[2] if ref else {}).items()}
        # each axis: the converted (higher is better) value over every model on the board against the reference
        # (the baseline, else the lowest-ranked row: issue 44), from the lowest (not min-max, which would blow
        # tiny differences up to the full axis), or log-scaled where the values span orders of magnitude
        axes = {k: axis_fractions([r.converted.get(k, 0.0) - base.get(k, 0.0) for r in every]) for k in metrics}
        fractions, scales = {k: a[0] for k, a in axes.items()}, {k: a[1] for k, a in axes.items()}
        self.radar.set_data(metrics, [(n, [fractions[k][index[n]] for k in metrics]) for n in names], scales,
                            f"{ref[0]} ({ref[1]})" if ref else None)

    # --------------------------------------------------------------- export
    def _export_dialog(self) -> None:
        if not self.result:
            self.banner.error("Nothing to export: the board is empty.")
            return
        path, _ = QFileDialog.getSaveFileName(self, "Export leaderboard", f"leaderboard-{self.task}.csv", "CSV (*.csv)")
        if path:
            self.export_csv(path)

    def export_csv(self, path: str) -> None:
        if self.result is None:
            self.banner.error("Nothing to export: the board is empty.")
            return
        try:
            self._svc.export_csv(self.result, path)
        except DynaDeskError as exc:
            self.banner.error(str(exc))
            return
        self.banner.show_message(f"Exported {len(self.result.rows)} models to {path}", "ok")


def _scrolled(chart: QWidget) -> QScrollArea:
    area = QScrollArea()
    area.setWidgetResizable(True)
    area.setWidget(chart)
    return area


def make(services: Services, parent: QWidget | None = None) -> LeaderboardPage:
    return LeaderboardPage(services.leaderboard, parent=parent)
