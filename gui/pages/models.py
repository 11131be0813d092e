"""Models: registered models with digest, task and kind; register a folder (with the CLI's kind,
labels and allow-pickle options); a "try it" panel that predicts live as you type (debounced) and
draws the class probabilities as bars."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from PySide6.QtCore import Qt, QTimer
from PySide6.QtWidgets import (
    QCheckBox,
    QComboBox,
    QFormLayout,
    QGroupBox,
    QHBoxLayout,
    QLabel,
    QLineEdit,
    QMessageBox,
    QPlainTextEdit,
    QSplitter,
    QVBoxLayout,
    QWidget,
)

from dynadesk.errors import DynaDeskError
from dynadesk.evaluator.adapters import KINDS
from dynadesk.gui.pages.base import DataPage
from dynadesk.gui.pages.scaffold import browse_into, button, input_edit, named_table, pane, path_row, prediction_view
from dynadesk.gui.pages.tables import fill
from dynadesk.gui.services.models import ModelsService, parse_labels

if TYPE_CHECKING:
    from dynadesk.gui.services.context import Services

DEBOUNCE_MS = 250
AUTO_KIND = "auto"


class ModelsPage(DataPage):
    title = "Models"
    _svc: ModelsService

    def build(self, lay: QVBoxLayout) -> None:
        self._records: dict[str, Any] = {}
        self.inputs: dict[str, QPlainTextEdit] = {}

        split = QSplitter(Qt.Orientation.Horizontal)
        left, ll = pane()
        self.table = named_table(["model", "task", "kind", "digest", "safe to load", "folder"], "Registered models",
                                 self._on_select)
        ll.addWidget(self.table, 1)
        self.remove_button = button("Remove from registry", self._remove)
        ll.addWidget(self.remove_button, 0, Qt.AlignmentFlag.AlignLeft)
        ll.addWidget(self._register_box())
        split.addWidget(left)

        right = QGroupBox("Try it")
        rl = QVBoxLayout(right)
        self.try_title = QLabel("Select a model")
        rl.addWidget(self.try_title)
        self.try_form = QFormLayout()
        rl.addLayout(self.try_form)
        self.result_label, self.probs = prediction_view(rl)
        rl.addStretch(1)
        split.addWidget(right)
        split.setSizes([650, 450])
        lay.addWidget(split, 1)

        self._debounce = QTimer(self)
        self._debounce.setSingleShot(True)
        self._debounce.setInterval(DEBOUNCE_MS)
        self._debounce.timeout.connect(self.predict_now)
        # bound methods: dropped when the page is destroyed
        self.follow(self._svc, changed=self.refresh, registered=self._on_registered,
                    registerFailed=self._on_register_failed, predicted=self._on_predicted,
                    predictFailed=self._on_predict_failed, loading=self._on_loading, loaded=self._on_loaded,
                    loadFailed=self._on_load_state)

    def _register_box(self) -> QGroupBox:
        """Register a model folder, with the CLI's options (task, name, kind, labels, allow-pickle)."""
        add = QGroupBox("Register a model folder")
        af = QFormLayout(add)
        prow, self.path_edit = path_row("folder with config.json + safetensors, or a dynadesk-model.json",
                                        self._browse)
        af.addRow("Folder", prow)
        nrow = QHBoxLayout()
        self.use_tasks(QComboBox(), self._data)
        nrow.addWidget(self.task_combo)
        self.name_edit = QLineEdit()
        self.name_edit.setPlaceholderText("name (default: folder name)")
        nrow.addWidget(self.name_edit, 1)
        self.replace_check = QCheckBox("replace")
        nrow.addWidget(self.replace_check)
        af.addRow("Task / name", nrow)
        orow = QHBoxLayout()
        self.kind_combo = QComboBox()
        self.kind_combo.addItems([AUTO_KIND, *KINDS])
        self.kind_combo.setToolTip("Default: inferred from config.json")
        orow.addWidget(self.kind_combo)
        self.labels_edit = QLineEdit()
        self.labels_edit.setPlaceholderText("labels in the model's output order, comma-separated (when "
                                            "config.json says LABEL_0, LABEL_1 …)")
        orow.addWidget(self.labels_edit, 1)
        af.addRow("Kind / labels", orow)
        self.pickle_check = QCheckBox("allow pickle weights (evaluated only inside the sandbox, never loaded here)")
        af.addRow(self.pickle_check)
        self.register_button = button("Register", self.register)
        af.addRow(self.register_button)
        return add

    # ---------------------------------------------------------- listing
    def refresh(self) -> None:
        self.fill_tasks()
        selected = self.selected_model()
        records = self.guard(self._svc.list) or []
        self._records = {r.name: r for r in records}
        fill(self.table, [[r.name, r.task, r.kind, r.digest[7:23] + "…",
                           "no (pickle: sandbox only)" if r.has_pickle else "yes", r.path] for r in records])
        for r in range(self.table.rowCount()):
            self.table.item(r, 3).setToolTip(records[r].digest)
        if selected:
            self.select_model(selected)
        elif not records:
            self._on_select()

    def selected_model(self) -> str | None:
        rows = self.table.selectionModel().selectedRows()
        return self.table.item(rows[0].row(), 0).text() if rows else None

    def select_model(self, name: str) -> None:
        for r in range(self.table.rowCount()):
            if self.table.item(r, 0).text() == name:
                self.table.selectRow(r)
                return

    def _on_select(self) -> None:
        self._svc.forget_requests()  # a late prediction for the previous model never lands under this one
        while self.try_form.rowCount():
            self.try_form.removeRow(0)
        self.inputs = {}
        self.result_label.clear()
        self.probs.set_data([])
        rec = self._records.get(self.selected_model() or "")
        if rec is None:
            self.try_title.setText("Select a model to try it")
            return
        if rec.has_pickle:
            self.try_title.setText(f"<b>{rec.name}</b> has pickle weights only: it runs only inside the "
                                   "evaluation sandbox, never on this machine.")
            return
        self.try_title.setText(f"<b>{rec.name}</b> · {rec.task} · {rec.kind} — loading the model…")
        self._svc.warm(rec.name)
        task = self._data.task(rec.task)
        for f in task.inputs:
            edit = input_edit(f)
            edit.textChanged.connect(self._debounce.start)
            self.try_form.addRow(f.name, edit)
            self.inputs[f.name] = edit

    def _on_loading(self, name: str) -> None:
        self._on_load_state(name, "loading")

    def _on_loaded(self, name: str) -> None:
        self._on_load_state(name, "ready")

    def _on_load_state(self, name: str, state: str) -> None:
        """Loading progress of the selected model in the panel's title (other models' news is ignored)."""
        rec = self._records.get(self.selected_model() or "")
        if rec is None or rec.name != name:
            return
        head = f"<b>{rec.name}</b> · {rec.task} · {rec.kind} — "
        if state == "loading":
            self.try_title.setText(head + "loading the model…")
        elif state == "ready":
            self.try_title.setText(head + "ready: type to predict")
        else:
            self.try_title.setText(head + "could not be loaded")
            self.banner.error(state)

    # ---------------------------------------------------------- try it
    def predict_now(self) -> None:
        model = self.selected_model()
        values = {k: e.toPlainText() for k, e in self.inputs.items()}
        if not model or not values or not all(v.strip() for v in values.values()):
            return
        self.result_label.setText("<i>predicting…</i>")
        self._svc.predict(model, values)

    def _on_predicted(self, rid: int, out: dict) -> None:
        if rid != self._svc.latest_request:
            return  # a newer request is on its way
        if "label" in out:
            self.result_label.setText(f"Prediction: <b>{out['label']}</b>")
            self.probs.show_output(out)
        else:
            self.result_label.setText(f"Answer: <b>{out.get('answer', '')}</b> (score {out.get('score', 0):.2f}, "
                                      f"characters {out.get('start')}–{out.get('end')})")
            self.probs.set_data([])

    def _on_predict_failed(self, rid: int, message: str) -> None:
        if rid == self._svc.latest_request:
            self.result_label.clear()
            self.banner.error(message)

    # ---------------------------------------------------------- registry
    def _browse(self) -> None:
        browse_into(self.path_edit, "Model folder")

    def register(self) -> None:
        path = self.required(self.path_edit, "Choose a model folder.")
        if path is None:
            return
        self.register_button.setEnabled(False)
        self.banner.show_message(f"Hashing and checking {path} …", "info")
        kind = self.kind_combo.currentText()
        self._svc.register(path, self.task_combo.currentText(), self.name_edit.text().strip() or None,
                           self.replace_check.isChecked(), kind=None if kind == AUTO_KIND else kind,
                           labels=parse_labels(self.labels_edit.text()), allow_pickle=self.pickle_check.isChecked())

    def _on_registered(self, rec) -> None:
        self.register_button.setEnabled(True)
        self.banner.show_message(f"Registered '{rec.name}' ({rec.kind}, {rec.digest[:19]}…)", "ok")
        self.select_model(rec.name)

    def _on_register_failed(self, message: str) -> None:
        self.register_button.setEnabled(True)
        self.banner.error(message)

    def _remove(self) -> None:
        name = self.selected_model()
        if not name:
            return
        if QMessageBox.question(self, "Remove model", f"Remove '{name}' from the registry? Its folder stays.") \
                != QMessageBox.StandardButton.Yes:
            return
        self.remove(name)

    def remove(self, name: str) -> None:
        try:
            self._svc.remove(name)
        except DynaDeskError as exc:
            self.banner.error(str(exc))
            return
        self.banner.show_message(f"Removed '{name}' from the registry", "ok")


def make(services: Services, parent: QWidget | None = None) -> ModelsPage:
    return ModelsPage(services.models, services.data, parent=parent)
