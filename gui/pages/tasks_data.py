"""Tasks & data: the tasks with labels and metrics, datasets with sizes and label
distribution, and import with a per-line error report (nothing stored if any line is bad)."""

from __future__ import annotations

import re
from typing import TYPE_CHECKING

from PySide6.QtCore import Qt
from PySide6.QtWidgets import (
    QCheckBox,
    QComboBox,
    QFormLayout,
    QGroupBox,
    QHBoxLayout,
    QLabel,
    QLineEdit,
    QListWidget,
    QPushButton,
    QSplitter,
    QWidget,
)

from dynadesk.errors import DynaDeskError
from dynadesk.formats import FORMATS, Mapping
from dynadesk.formats.base import parse_pairs
from dynadesk.gui.charts import BarChart
from dynadesk.gui.pages.base import Page
from dynadesk.gui.pages.scaffold import browse_into, button, hbox, named_table, pane
from dynadesk.gui.pages.tables import fill
from dynadesk.gui.services.data import DataService, ImportOutcome

if TYPE_CHECKING:
    from dynadesk.gui.services.context import Services


def pairs(text: str, what: str) -> dict[str, str]:
    """``"a=b, c=d"`` -> ``{"a": "b", "c": "d"}``; a malformed pair is named with the entry it came from."""
    return parse_pairs([p.strip() for p in text.split(",") if p.strip()], what)


def in_box_words(message: str) -> str:
    """The library's advice names the command line's options ("pass --map a=b --map c=d"); here they are the
    import box's entries ("fill in the field mapping with a=b, c=d")."""
    for option, entry in (("--label-map", "label mapping"), ("--map", "field mapping")):
        pair = re.compile(rf"{option} ([^\s;,]+)")
        for run in re.findall(rf"(?:pass )?{option} [^\s;,]+(?: {option} [^\s;,]+)*", message):
            message = message.replace(run, f"fill in the {entry} with " + ", ".join(pair.findall(run)), 1)
    for option, entry in (("--keep-extra", "'keep extra fields'"), ("--quoting none", "'quotes are text'")):
        message = message.replace(option, entry)
    return message


class TasksDataPage(Page):
    title = "Tasks & data"

    def __init__(self, data: DataService, parent: QWidget | None = None):
        super().__init__(parent)
        self._data = data
        lay = self.body()

        self.tasks_table = named_table(["task", "title", "inputs", "output", "labels", "metric", "votes"], "Tasks")
        self.tasks_table.setMaximumHeight(150)
        self.task_file = QLineEdit()
        self.task_file.setPlaceholderText("a task file (YAML) to add: docs/tasks.md")
        self.task_file.setAccessibleName("Task file to add")
        browse_task = button("Browse…", self._browse_task)
        browse_task.setAccessibleName("Browse for a task file")
        self.add_task_button = button("Add task", self.add_task)
        trow = hbox(QLabel("<b>Tasks</b>"), None, self.task_file, browse_task, self.add_task_button)
        trow.setStretch(2, 2)
        lay.addLayout(trow)
        lay.addWidget(self.tasks_table)

        split = QSplitter(Qt.Orientation.Horizontal)
        left, ll = pane()
        filt = QHBoxLayout()
        filt.addWidget(QLabel("<b>Datasets</b>"))
        filt.addStretch(1)
        self.task_filter = QComboBox()
        self.task_filter.addItem("all tasks", None)
        self.task_filter.currentIndexChanged.connect(self.refresh_datasets)
        filt.addWidget(self.task_filter)
        self.show_derived = QCheckBox("derived")
        self.show_derived.setToolTip("Also list perturbed (robustness/fairness) datasets")
        self.show_derived.toggled.connect(self.refresh_datasets)
        filt.addWidget(self.show_derived)
        ll.addLayout(filt)
        self.datasets_table = named_table(["dataset", "task", "split", "examples", "derived from", "digest"],
                                          "Datasets", self._show_selected, sortable=True)
        ll.addWidget(self.datasets_table)
        split.addWidget(left)

        right, rl = pane()
        self.detail = QLabel("Select a dataset")
        self.detail.setWordWrap(True)
        self.detail.setTextInteractionFlags(Qt.TextInteractionFlag.TextSelectableByMouse)
        rl.addWidget(self.detail)
        rl.addWidget(QLabel("Label distribution"))
        self.chart = BarChart(fmt="{:.0f}")
        rl.addWidget(self.chart)
        self.preview = named_table(["id", "example"], "Examples of the selected dataset")
        rl.addWidget(self.preview, 1)
        split.addWidget(right)
        split.setSizes([520, 380])
        lay.addWidget(split, 1)

        lay.addWidget(self._import_box())
        data.changed.connect(self.refresh)
        self.follow(data, importFinished=self._on_imported, taskAdded=self._on_task_added, left=self._on_import_left)
        self.refresh()

    def _import_box(self) -> QGroupBox:
        box = QGroupBox("Import a dataset (JSONL, CSV/TSV, Dynabench/ANLI, SNLI/MultiNLI, SQuAD, Hugging Face rows)")
        h = QHBoxLayout(box)
        form = QFormLayout()
        pathrow = QHBoxLayout()
        self.import_path = QLineEdit()
        self.import_path.setPlaceholderText("/path/to/examples.jsonl")
        pathrow.addWidget(self.import_path, 1)
        browse = QPushButton("Browse…")
        browse.clicked.connect(self._browse)
        pathrow.addWidget(browse)
        form.addRow("File", pathrow)
        taskrow = QHBoxLayout()
        self.import_task = QComboBox()
        taskrow.addWidget(self.import_task, 1)
        self.import_format = QComboBox()
        self.import_format.addItem("detect format", None)
        for name, fmt in FORMATS.items():
            self.import_format.addItem(f"{name} — {fmt.title}", name)
        taskrow.addWidget(self.import_format, 1)
        form.addRow("Task / format", taskrow)
        row = QHBoxLayout()
        self.import_name = QLineEdit()
        self.import_name.setPlaceholderText("default: file name")
        row.addWidget(self.import_name, 1)
        self.import_split = QComboBox()
        self.import_split.addItems(list(self._data.splits))
        self.import_split.setCurrentText("test")
        row.addWidget(QLabel("split"))
        row.addWidget(self.import_split)
        self.import_replace = QCheckBox("replace existing")
        row.addWidget(self.import_replace)
        self.import_quotes_text = QCheckBox("quotes are text")
        self.import_quotes_text.setToolTip("csv/tsv: read '\"' as an ordinary character (--quoting none), for tweets "
                                           "and SST phrases whose lone quote would otherwise be refused")
        row.addWidget(self.import_quotes_text)
        form.addRow("Name", row)
        maprow = QHBoxLayout()
        self.import_fields = QLineEdit()
        self.import_fields.setPlaceholderText("task_field=file_field, … e.g. statement=tweet, label=sentiment")
        self.import_fields.setAccessibleName("Field mapping")
        maprow.addWidget(self.import_fields, 1)
        self.import_labels = QLineEdit()
        self.import_labels.setPlaceholderText("file_label=task_label, … e.g. 1=positive, -1=negative")
        self.import_labels.setAccessibleName("Label mapping")
        maprow.addWidget(self.import_labels, 1)
        self.import_keep_extra = QCheckBox("keep extra fields")
        self.import_keep_extra.setToolTip("Columns the task has no place for are kept under metadata")
        maprow.addWidget(self.import_keep_extra)
        form.addRow("Field / label mapping", maprow)
        self.import_button = QPushButton("Import")
        self.import_button.clicked.connect(self.start_import)
        form.addRow("", self.import_button)
        h.addLayout(form, 3)
        self.problems = QListWidget()
        self.problems.setToolTip("Every bad line of the last import, with its line number")
        self.problems.setMaximumHeight(120)
        h.addWidget(self.problems, 2)
        return box

    # ------------------------------------------------------------------ data
    def refresh(self) -> None:
        tasks = self.guard(self._data.tasks) or {}
        fill(self.tasks_table, [
            [t.name, t.title, ", ".join(t.input_names), t.kind.name,
             ", ".join(t.labels) if t.labels else f"span of {t.span_of}",
             t.metric + (f" (+{', '.join(t.secondary_metrics)})" if t.secondary_metrics else ""), t.votes_needed]
            for t in tasks.values()], numeric={6})
        for combo, first in ((self.task_filter, "all tasks"), (self.import_task, None)):
            current = combo.currentData()
            combo.blockSignals(True)
            combo.clear()
            if first:
                combo.addItem(first, None)
            for name in tasks:
                combo.addItem(name, name)
            idx = combo.findData(current)
            combo.setCurrentIndex(max(0, idx))
            combo.blockSignals(False)
        self.refresh_datasets()

    def refresh_datasets(self) -> None:
        selected = self.selected_dataset()
        items = self.guard(self._data.datasets, self.task_filter.currentData(), self.show_derived.isChecked()) or []
        self._summaries = {d.name: d for d in items}
        fill(self.datasets_table, [[d.name, d.task, d.split, d.size, d.derived_from or "", d.digest[7:19]]
                                   for d in items], numeric={3})
        self.datasets_table.sortItems(0)
        if selected:
            self.select_dataset(selected)

    def selected_dataset(self) -> str | None:
        rows = self.datasets_table.selectionModel().selectedRows()
        if not rows:
            return None
        return self.datasets_table.item(rows[0].row(), 0).text()

    def select_dataset(self, name: str) -> bool:
        for r in range(self.datasets_table.rowCount()):
            if self.datasets_table.item(r, 0).text() == name:
                self.datasets_table.selectRow(r)
                return True
        return False

    def _show_selected(self) -> None:
        name = self.selected_dataset()
        d = self._summaries.get(name) if name else None
        if d is None:
            self.detail.setText("Select a dataset")
            self.chart.set_data([])
            self.preview.setRowCount(0)
            return
        extra = f"<br>derived from {d.derived_from}: {d.derivation}" if d.derived_from else ""
        self.detail.setText(f"<b>{d.name}</b> — task {d.task}, split {d.split}, {d.size} examples<br>"
                            f"<small>{d.digest}<br>source {d.source or '—'}</small>{extra}")
        self.chart.set_data(list(d.label_counts.items()),
                            empty_text="no labels (span answers)" if not d.label_counts else "no data")
        head = self.guard(self._data.head, d.name, 50) or []
        fill(self.preview, [[ex["id"], " | ".join(str(v) for k, v in ex.items() if k != "id")] for ex in head])

    # ------------------------------------------------------------ add a task
    def _browse_task(self) -> None:
        browse_into(self.task_file, "Add a task", "Task files (*.yaml *.yml);;All (*)")

    def add_task(self) -> None:
        path = self.required(self.task_file,
                             "Choose a task file (YAML) to add: its fields are described in docs/tasks.md.")
        if path is not None:
            self._data.add_task(path)

    def _on_task_added(self, ok: bool, line: str) -> None:
        if ok:
            self.banner.show_message(line, "ok")
            self.task_file.clear()
        else:
            self.banner.error(line)

    # ---------------------------------------------------------------- import
    def _browse(self) -> None:
        browse_into(self.import_path, "Import dataset", "Data (*.jsonl *.json *.csv *.tsv *.txt *.parquet);;All (*)")

    def start_import(self) -> None:
        path = self.import_path.text().strip()
        task = self.import_task.currentData()
        if not path or not task:
            self.banner.error("Choose a file and a task to import.")
            return
        try:
            mapping = Mapping(pairs(self.import_fields.text(), "field mapping"),
                              pairs(self.import_labels.text(), "label mapping"), self.import_keep_extra.isChecked())
        except DynaDeskError as exc:
            self.banner.error(str(exc))
            return
        self.banner.show_message(f"Importing {path} …", "info")
        self.problems.clear()
        self.import_button.setEnabled(False)
        self._data.import_file(task, path, self.import_name.text().strip() or None,
                               self.import_split.currentText(), self.import_replace.isChecked(),
                               fmt=self.import_format.currentData(),
                               quoting="none" if self.import_quotes_text.isChecked() else "auto", mapping=mapping)

    def _on_import_left(self, line: str) -> None:
        self.import_button.setEnabled(True)
        self.job_left(line)

    def _on_imported(self, outcome: ImportOutcome) -> None:
        self.import_button.setEnabled(True)
        self.problems.clear()
        if outcome.ok:
            s = outcome.summary
            how = "detected" if outcome.detected else "as chosen"
            left = "".join(f"; left out {n} {reason}" for reason, n in outcome.dropped.items())
            if outcome.splits_found:
                left += "; splits in the file: " + ", ".join(f"{k} {n}" for k, n in outcome.splits_found.items()) \
                    + f" (the {s.split} rows imported)"
            self.banner.show_message(f"Imported {s.size} examples as '{s.name}' ({s.digest[:19]}…), "
                                     f"format {outcome.format} ({how}){left}", "ok")
            self.select_dataset(s.name)
            return
        self.banner.error(in_box_words(outcome.message))
        self.problems.addItems([in_box_words(p) for p in outcome.problems])


def make(services: Services, parent: QWidget | None = None) -> TasksDataPage:
    return TasksDataPage(services.data, parent=parent)
