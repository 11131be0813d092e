"""Rounds: per-round and per-annotator MER, vMER and agreement with a chart; open a new
round against target models; export a round's data or register it as a dataset."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from PySide6.QtCore import Qt
from PySide6.QtWidgets import (
    QComboBox,
    QFileDialog,
    QFormLayout,
    QGroupBox,
    QHBoxLayout,
    QLineEdit,
    QListWidget,
    QListWidgetItem,
    QSplitter,
    QVBoxLayout,
    QWidget,
)

from dynadesk.errors import DynaDeskError
from dynadesk.gui.charts import BarChart
from dynadesk.gui.pages.base import DataPage
from dynadesk.gui.pages.scaffold import browse_into, button, hbox, named_table, pane, path_row
from dynadesk.gui.pages.tables import fill
from dynadesk.gui.services.annotation import AnnotationService

if TYPE_CHECKING:
    from dynadesk.gui.services.context import Services


def pct(x: float | None) -> str:
    return "—" if x is None else f"{100 * x:.1f}%"


class RoundsPage(DataPage):
    title = "Rounds"
    _svc: AnnotationService

    def build(self, lay: QVBoxLayout) -> None:
        self.stats: list[Any] = []
        self.task_bar(self.reload, self._data, rounds=True).addStretch(1)

        split = QSplitter(Qt.Orientation.Vertical)
        self.rounds_table = named_table(["round", "status", "target models", "examples", "fooled", "verified fooled",
                                         "MER", "vMER", "median time (s)", "validations", "agreement α"], "Rounds",
                                        self._show_round)
        split.addWidget(self.rounds_table)
        lower, ll = pane(horizontal=True)
        self.people_table = named_table(["annotator", "examples", "fooled", "verified fooled", "MER raw",
                                         "MER Dynabench board", "vMER", "median time (s)", "validations given"],
                                        "Annotators")
        ll.addWidget(self.people_table, 3)
        chart_box = QGroupBox("Model error rate")
        cl = QVBoxLayout(chart_box)
        self.chart_mode = QComboBox()
        self.chart_mode.addItems(["MER per round", "MER per annotator (selected round)",
                                  "each model on each round's verified-fooled examples (report)"])
        self.chart_mode.currentIndexChanged.connect(self._draw_chart)
        cl.addWidget(self.chart_mode)
        self.chart = BarChart(fmt="{:.1%}", max_value=1.0)
        cl.addWidget(self.chart, 1)
        ll.addWidget(chart_box, 2)
        split.addWidget(lower)
        lay.addWidget(split, 1)

        actions = QHBoxLayout()
        actions.addWidget(self._new_round_box(), 1)
        actions.addWidget(self._round_data_box(), 1)
        lay.addLayout(actions)

        self._svc.roundsChanged.connect(lambda _t: self.reload())
        self._svc.examplesChanged.connect(lambda _t: self.reload())
        self._svc.reportReady.connect(self._on_report)
        self._svc.reportFailed.connect(self._on_report_failed)  # bound: dropped when the page is destroyed
        self.report = None

    def _new_round_box(self) -> QGroupBox:
        nbox = QGroupBox("New round")
        nf = QFormLayout(nbox)
        self.model_list = QListWidget()
        self.model_list.setMaximumHeight(90)
        nf.addRow("Target models", self.model_list)
        crow, self.contexts_edit = path_row("optional contexts file (JSONL/TXT) for context tasks",
                                            self._browse_contexts, "…")
        nf.addRow("Contexts", crow)
        self.new_round_button = button("Open new round", self.open_new_round)
        nf.addRow(self.new_round_button)
        return nbox

    def _round_data_box(self) -> QGroupBox:
        ebox = QGroupBox("Selected round's data")
        ef = QFormLayout(ebox)
        self.export_status = QComboBox()
        self.export_status.addItems(["all", "verified-fooled"])
        ef.addRow("Examples", self.export_status)
        self.export_button = button("Export JSONL/CSV…", self._export_dialog)
        ef.addRow(self.export_button)
        self.register_name = QLineEdit()
        self.register_name.setPlaceholderText("dataset name")
        self.register_split = QComboBox()
        self.register_split.addItems(list(self._data.splits))
        self.register_split.setCurrentText("test")
        self.register_button = button("Register as dataset", self.register)
        rrow = hbox(self.register_name, self.register_split, self.register_button)
        rrow.setStretch(0, 1)
        ef.addRow(rrow)
        return ebox

    def reload(self) -> None:
        task = self.task_combo.currentText()
        if not task:
            return
        self.report = None  # examples or votes changed: the report is computed again when shown
        selected = self.selected_round()
        self.stats = self.guard(self._svc.stats, task) or []
        fill(self.rounds_table, [
            [s.round, s.status, ", ".join(s.models), s.collected, s.fooled, s.verified_fooled, pct(s.mer),
             pct(s.vmer), "—" if s.median_time_ms is None else round(s.median_time_ms / 1000, 1), s.validations,
             "—" if s.alpha is None else round(s.alpha, 3)] for s in reversed(self.stats)],
            numeric={0, 3, 4, 5, 6, 7, 8, 9, 10})
        self.model_list.clear()
        for name in self.guard(self._svc.models_for, task) or []:
            item = QListWidgetItem(name)
            item.setFlags(item.flags() | Qt.ItemFlag.ItemIsUserCheckable)
            item.setCheckState(Qt.CheckState.Unchecked)
            self.model_list.addItem(item)
        if self.model_list.count() == 0:
            self.model_list.addItem("(no registered models for this task: add one on the Models page)")
            self.model_list.item(0).setFlags(Qt.ItemFlag.NoItemFlags)
        self.select_round(selected if selected is not None else (self.stats[-1].round if self.stats else None))
        self._show_round()  # the selection may not change while the numbers did

    def selected_round(self) -> int | None:
        rows = self.rounds_table.selectionModel().selectedRows()
        return int(self.rounds_table.item(rows[0].row(), 0).text()) if rows else None

    def select_round(self, number: int | None) -> None:
        if number is None:
            self.people_table.setRowCount(0)
            return
        for r in range(self.rounds_table.rowCount()):
            if self.rounds_table.item(r, 0).text() == str(number):
                self.rounds_table.selectRow(r)
                return

    def _round_stats(self):
        n = self.selected_round()
        return next((s for s in self.stats if s.round == n), None)

    def _show_round(self) -> None:
        s = self._round_stats()
        if s is None:
            self.people_table.setRowCount(0)
            return
        fill(self.people_table, [
            [a.annotator, a.collected, a.fooled, a.verified_fooled, pct(a.mer), pct(a.board_mer), pct(a.vmer),
             "—" if a.median_time_ms is None else round(a.median_time_ms / 1000, 1), a.validations_given]
            for a in s.annotators], numeric=set(range(1, 9)))
        if not self.register_name.text():
            self.register_name.setPlaceholderText(f"{s.task}-round{s.round}")
        self._draw_chart()

    def _on_report_failed(self, task: str, message: str) -> None:
        if task == self.task_combo.currentText():
            self.banner.error(message)

    def _on_report(self, task: str, report) -> None:
        if task != self.task_combo.currentText():
            return  # a report for a task no longer on screen
        self.report = report
        self._draw_chart()

    def _draw_chart(self) -> None:
        if self.chart_mode.currentIndex() == 2:
            task = self.task_combo.currentText()
            if self.report is None or self.report.task != task:
                self.chart.set_data([], "computing the report (every model over every round)…")
                self._svc.report(task)
                return
            self.chart.set_data([(f"{row.model} · {col.name} (n={col.n})", row.errors[col.name] / 100)
                                 for col in self.report.columns for row in self.report.rows
                                 if row.errors.get(col.name) is not None], "no verified-fooled examples yet")
            return
        if self.chart_mode.currentIndex() == 0:
            self.chart.set_data([(f"round {s.round}", s.mer or 0.0) for s in self.stats], "no rounds yet")
        else:
            s = self._round_stats()
            self.chart.set_data([(a.annotator, a.mer or 0.0) for a in (s.annotators if s else []) if a.collected],
                                "no examples in this round")

    def checked_models(self) -> list[str]:
        out = []
        for i in range(self.model_list.count()):
            item = self.model_list.item(i)
            if item.flags() & Qt.ItemFlag.ItemIsUserCheckable and item.checkState() == Qt.CheckState.Checked:
                out.append(item.text())
        return out

    def _browse_contexts(self) -> None:
        browse_into(self.contexts_edit, "Contexts file", "Contexts (*.jsonl *.txt);;All (*)")

    def open_new_round(self) -> None:
        task = self.task_combo.currentText()
        try:
            rnd = self._svc.new_round(task, self.checked_models(), self.contexts_edit.text().strip() or None)
        except DynaDeskError as exc:
            self.banner.error(str(exc))
            return
        self.banner.show_message(f"Opened round {rnd.number} of '{task}' against "
                                 f"{', '.join(m.name for m in rnd.models)}"
                                 + (f" with {rnd.n_contexts} contexts" if rnd.n_contexts else ""), "ok")

    def _export_dialog(self) -> None:
        s = self._round_stats()
        if s is None:
            self.banner.error("Select a round first.")
            return
        path, _ = QFileDialog.getSaveFileName(self, "Export round", f"{s.task}-round{s.round}.jsonl",
                                              "JSONL (*.jsonl);;CSV (*.csv)")
        if path:
            self.export(path)

    def export(self, path: str) -> None:
        s = self._round_stats()
        if s is None:
            self.banner.error("Select a round first.")
            return
        try:
            n = self._svc.export_round(s.task, path, s.round, self.export_status.currentText())
        except DynaDeskError as exc:
            self.banner.error(str(exc))
            return
        self.banner.show_message(f"Wrote {n} examples of round {s.round} to {path}", "ok")

    def register(self) -> None:
        s = self._round_stats()
        if s is None:
            self.banner.error("Select a round first.")
            return
        name = self.register_name.text().strip() or self.register_name.placeholderText()
        try:
            summary = self._svc.register_round(s.task, name, s.round, self.export_status.currentText(),
                                               self.register_split.currentText())
        except DynaDeskError as exc:
            self.banner.error(str(exc))
            return
        self._data.changed.emit()
        self.banner.show_message(f"Registered {summary.size} examples as dataset '{summary.name}'", "ok")


def make(services: Services, parent: QWidget | None = None) -> RoundsPage:
    return RoundsPage(services.annotation, services.data, parent=parent)
