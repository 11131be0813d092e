"""Train: fine-tune the next round's target on chosen datasets (bundled, imported or registered
rounds) with per-dataset sampling weights, early-stopped on a dev set. The training runs on a
pool worker with progress and cancel (which saves a checkpoint); Resume continues it. The new
model is registered with its lineage and can be a target of the next round."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from PySide6.QtCore import Qt
from PySide6.QtWidgets import (
    QComboBox,
    QDoubleSpinBox,
    QFormLayout,
    QGroupBox,
    QHBoxLayout,
    QLabel,
    QLineEdit,
    QProgressBar,
    QSpinBox,
    QTableWidget,
    QTableWidgetItem,
    QVBoxLayout,
    QWidget,
)

from dynadesk.gui.pages.base import DataPage
from dynadesk.gui.pages.scaffold import button, hbox, spin
from dynadesk.gui.services.training import TrainingService
from dynadesk.progress import ProgressEvent

if TYPE_CHECKING:
    from dynadesk.gui.services.context import Services

MINILM = "minilm"


class TrainPage(DataPage):
    title = "Train"
    _svc: TrainingService

    def build(self, lay: QVBoxLayout) -> None:
        self.last_request: Any = None

        form_box = QGroupBox("What to train")
        form = QFormLayout(form_box)
        self.use_tasks(QComboBox(), self._data, show=self._fill)
        form.addRow("Task", self.task_combo)
        self.base_combo = QComboBox()
        form.addRow("Base model", self.base_combo)
        self.name_edit = QLineEdit()
        self.name_edit.setPlaceholderText("name of the new model, e.g. sentiment-round2")
        form.addRow("New model", self.name_edit)
        self.data_table = QTableWidget(0, 2)
        self.data_table.setAccessibleName("Training datasets")
        self.data_table.setTabKeyNavigation(False)  # Tab leaves the table: no keyboard trap
        self.data_table.setHorizontalHeaderLabels(["training dataset (tick to use)", "sampling weight"])
        self.data_table.horizontalHeader().setStretchLastSection(True)
        self.data_table.horizontalHeader().setMinimumSectionSize(110)
        self.data_table.setMinimumHeight(140)
        form.addRow("Data", self.data_table)
        self.dev_combo = QComboBox()
        self.dev_combo.setSizeAdjustPolicy(QComboBox.SizeAdjustPolicy.AdjustToContents)
        form.addRow("Dev set (early stopping)", self.dev_combo)
        lay.addWidget(form_box)

        lay.addWidget(self._settings_box())
        self.start_button = button("Train", self.start)
        self.cancel_button = button("Cancel (keeps a checkpoint)", self._svc.cancel, enabled=False)
        self.resume_button = button("Resume", self.resume, enabled=False)
        lay.addLayout(hbox(self.start_button, self.cancel_button, self.resume_button, None))
        self.progress = QProgressBar()
        lay.addWidget(self.progress)
        self.status = QLabel("Choose the data and press Train. Training runs in the background.")
        self.status.setWordWrap(True)
        lay.addWidget(self.status)
        lay.addStretch(1)

        self.follow(self._svc, started=lambda: self._running(True), progress=self._on_progress,
                    finished=self._on_finished, failed=self._on_failed, cancelled=self._on_cancelled,
                    left=self._on_left)

    def _settings_box(self) -> QGroupBox:
        """The training settings on one line: epochs, batch, learning rate, seed, max length."""
        hp = QGroupBox("Settings")
        hl = QHBoxLayout(hp)
        self.epochs = spin(QSpinBox(), 1, 100, 3)
        self.batch = spin(QSpinBox(), 1, 512, 16)
        self.lr = QDoubleSpinBox()
        self.lr.setDecimals(6)  # before the range and value: they are rounded to the decimals
        self.lr.setSingleStep(1e-5)
        spin(self.lr, 1e-6, 0.1, 5e-5)
        self.seed = spin(QSpinBox(), 0, 2 ** 31 - 1, 13)
        self.max_length = spin(QSpinBox(), 8, 4096, 128)
        for label, w in (("epochs", self.epochs), ("batch", self.batch), ("learning rate", self.lr),
                         ("seed", self.seed), ("max length", self.max_length)):
            hl.addWidget(QLabel(label))
            hl.addWidget(w)
        return hp

    def _fill(self) -> None:
        task = self.task_combo.currentText()
        if not task:
            return
        self.base_combo.clear()
        self.base_combo.addItem("MiniLM (bundled)", MINILM)
        for name in self.guard(self._svc.base_models, task) or []:
            self.base_combo.addItem(name, name)
        names = self.guard(self._svc.datasets, task) or []
        self.data_table.setRowCount(len(names))
        for r, name in enumerate(names):
            item = QTableWidgetItem(name)
            item.setFlags(Qt.ItemFlag.ItemIsUserCheckable | Qt.ItemFlag.ItemIsEnabled)
            item.setCheckState(Qt.CheckState.Unchecked)
            self.data_table.setItem(r, 0, item)
            weight = QDoubleSpinBox()
            weight.setRange(0.01, 100)
            weight.setValue(1.0)
            self.data_table.setCellWidget(r, 1, weight)
        self.data_table.resizeColumnToContents(0)  # the names in full; the weight column takes what is left
        self.dev_combo.clear()
        self.dev_combo.addItems(self.guard(self._svc.datasets, task, first="dev") or [])

    def use_dataset(self, name: str, weight: float = 1.0) -> None:
        """Tick ``name`` with ``weight`` (what a click and a spin would do)."""
        for r in range(self.data_table.rowCount()):
            if self.data_table.item(r, 0).text() == name:
                self.data_table.item(r, 0).setCheckState(Qt.CheckState.Checked)
                spin = self.data_table.cellWidget(r, 1)
                assert isinstance(spin, QDoubleSpinBox)
                spin.setValue(weight)

    def request(self) -> Any:
        from dynadesk.models.train import TrainConfig, TrainRequest, TrainSource

        sources = []
        for r in range(self.data_table.rowCount()):
            item = self.data_table.item(r, 0)
            spin = self.data_table.cellWidget(r, 1)
            if item.checkState() == Qt.CheckState.Checked and isinstance(spin, QDoubleSpinBox):
                sources.append(TrainSource(item.text(), float(spin.value())))
        return TrainRequest(task=self.task_combo.currentText(), name=self.name_edit.text().strip(),
                            base=str(self.base_combo.currentData()), train=tuple(sources),
                            dev=self.dev_combo.currentText(),
                            config=TrainConfig(epochs=self.epochs.value(), batch_size=self.batch.value(),
                                               lr=float(self.lr.value()), seed=self.seed.value(),
                                               max_length=self.max_length.value()))

    def start(self) -> None:
        if self._svc.running:
            return
        req = self.request()
        if not req.name:
            self.banner.show_message("Name the new model first.", "info")
            self.name_edit.setFocus()
            return
        if not req.train:
            self.banner.show_message("Tick at least one training dataset.", "info")
            return
        self.banner.clear()
        self.last_request = req
        self._svc.start(req)

    def resume(self) -> None:
        if self.last_request is not None and not self._svc.running:
            self.banner.clear()
            self._svc.start(self.last_request, resume=True)

    def _running(self, on: bool) -> None:
        self.start_button.setEnabled(not on)
        self.cancel_button.setEnabled(on)
        self.resume_button.setEnabled(False)
        if on:
            self.status.setText(f"Training {self.last_request.name if self.last_request else ''}…")

    def _on_progress(self, event: ProgressEvent) -> None:
        step, total = event.done or 0, event.total or 0
        self.progress.setRange(0, max(1, total))
        self.progress.setValue(step)
        self.status.setText(f"step {step}/{total} · {event.message}")

    def _on_left(self, line: str) -> None:
        self._running(False)
        self.job_left(line)

    def _on_finished(self, result: Any) -> None:
        self._running(False)
        self.banner.show_message(f"Registered {result.record.name}: dev {result.best_dev:.2f} at step "
                                 f"{result.best_step} of {result.steps}"
                                 + (" (stopped early)" if result.stopped_early else ""), "ok")

    def _on_failed(self, message: str) -> None:
        self._running(False)
        self.banner.error(message)

    def _on_cancelled(self) -> None:
        self._running(False)
        self.resume_button.setEnabled(True)
        self.status.setText(self.status.text() + " · cancelled: the checkpoint is kept, Resume continues")


def make(services: Services, parent: QWidget | None = None) -> TrainPage:
    return TrainPage(services.training, services.data, parent=parent)
