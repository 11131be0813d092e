"""Evaluate: choose models, datasets, runner (Docker sandbox or local), limits and GPU; the run
goes to a pool worker with progress, cancel and a live log, so the window stays responsive.
Past runs are listed with status and failure verdicts; a failed or cancelled run can be resumed."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from PySide6.QtCore import Qt, Signal
from PySide6.QtWidgets import (
    QCheckBox,
    QComboBox,
    QDoubleSpinBox,
    QFormLayout,
    QGroupBox,
    QLabel,
    QLineEdit,
    QListWidget,
    QListWidgetItem,
    QProgressBar,
    QSpinBox,
    QSplitter,
    QVBoxLayout,
    QWidget,
)

from dynadesk.errors import DynaDeskError
from dynadesk.evaluator.schema import BACKENDS
from dynadesk.gui.pages.base import Page
from dynadesk.gui.pages.scaffold import button, hbox, hint, named_table, pane, read_only_text, spin, task_selector
from dynadesk.gui.pages.tables import fill
from dynadesk.gui.services.data import DataService
from dynadesk.gui.services.evaluation import EvaluationService
from dynadesk.gui.services.models import ModelsService
from dynadesk.gui.services.settings import AppSettings
from dynadesk.gui.workers import progress_line
from dynadesk.models.served import runner_text
from dynadesk.orchestration.evaluate import failure_line
from dynadesk.orchestration.request import RunRequest, RunSettings, default_limits
from dynadesk.orchestration.runner_registry import RUNNERS
from dynadesk.progress import ProgressEvent
from dynadesk.store.evaluations import EvaluationRecord

if TYPE_CHECKING:
    from dynadesk.gui.services.context import Services

GIB = 1 << 30
BACKEND_LABELS = {"torch": "torch (eager)", "onnxruntime": "ONNX Runtime (a graph exported from the model)"}

STATUS_COLORS = {"succeeded": "#1b5e20", "failed": "#b71c1c", "cancelled": "#8d6e00", "interrupted": "#8d6e00",
                 "running": "#0d47a1"}


def checked(w: QListWidget) -> list[str]:
    return [w.item(i).text() for i in range(w.count())
            if w.item(i).flags() & Qt.ItemFlag.ItemIsUserCheckable and w.item(i).checkState() == Qt.CheckState.Checked]


class EvaluatePage(Page):
    title = "Evaluate"
    runsLoaded = Signal()  # the run table shows the newest read of the run list

    def __init__(self, service: EvaluationService, models: ModelsService, data: DataService, settings: AppSettings,
                 parent: QWidget | None = None):
        super().__init__(parent)
        self._svc = service
        self._models = models
        self._data = data
        self._settings = settings
        self._runs: dict[int, Any] = {}
        self.runs_loading = False  # a read of the run list is under way on a pool thread
        lay = self.body()

        split = QSplitter(Qt.Orientation.Horizontal)
        setup, sl = pane()
        trow, combo = task_selector()
        trow.setStretch(1, 1)
        self.use_tasks(combo, data)
        combo.currentIndexChanged.connect(self._fill_choices)
        sl.addLayout(trow)
        sl.addWidget(QLabel("Models"))
        self.model_list = QListWidget()
        self.model_list.setAccessibleName("Models to evaluate")
        sl.addWidget(self.model_list, 1)
        sl.addWidget(QLabel("Test sets (their perturbation sets are included)"))
        self.dataset_list = QListWidget()
        self.dataset_list.setAccessibleName("Test sets to evaluate on")
        sl.addWidget(self.dataset_list, 1)
        sl.addWidget(self._runner_box(settings))
        self.start_button = button("▶ Start evaluation", self.start)
        self.cancel_button = button("■ Cancel", self._svc.cancel, enabled=False)
        sl.addLayout(hbox(self.start_button, self.cancel_button))
        split.addWidget(setup)

        split.addWidget(self._runs_side())
        split.setSizes([380, 720])
        lay.addWidget(split, 1)

        self.follow(service, started=self._on_started, progress=self._on_progress, log=self._on_log,
                    finished=self._on_finished, failed=self._on_failed, cancelled=self._on_cancelled, done=self._idle,
                    left=self._on_left, runsChanged=self.refresh_runs, runsLoaded=self._on_runs_loaded,
                    runCreated=self._on_run_created, gpuChecked=self._on_gpu_checked)
        settings.changed.connect(self._apply_setting)
        models.changed.connect(self._fill_choices)
        data.changed.connect(self._fill_choices)
        self.refresh()

    def _runs_side(self) -> QSplitter:
        """The running evaluation (status, progress, live log) over the past runs (table, resume, details)."""
        right = QSplitter(Qt.Orientation.Vertical)
        live, ll = pane()
        self.progress = QProgressBar()
        self.progress.setFormat("%v / %m")
        self.status_label = QLabel("Idle")
        ll.addWidget(self.status_label)
        ll.addWidget(self.progress)
        self.log_view = read_only_text("Run log", "Live log of the running evaluation", max_lines=5000)
        ll.addWidget(self.log_view, 1)
        right.addWidget(live)
        past, pl = pane()
        self.resume_button = button("Resume selected", self.resume_selected,
                                    tooltip="Finish a failed, cancelled or interrupted run; finished datasets are kept")
        pl.addLayout(hbox(QLabel("<b>Past runs</b>"), None, self.resume_button))
        self.runs_table = named_table(["run", "model", "task", "runner", "status", "verdict", "datasets", "started",
                                       "finished", "error"], "Runs", self._show_run)
        pl.addWidget(self.runs_table, 2)
        self.run_detail = read_only_text("Selected run's details")
        pl.addWidget(self.run_detail, 1)
        right.addWidget(past)
        return right

    # ------------------------------------------------------------ setup
    def _runner_box(self, settings: AppSettings) -> QGroupBox:
        """The runner, its limits, the GPU option and the queue, with the Settings page's defaults."""
        box = QGroupBox("Runner and limits")
        f = QFormLayout(box)
        self.runner = QComboBox()
        for spec in RUNNERS.values():
            self.runner.addItem(spec.label, spec.name)
        self.runner.setCurrentIndex(max(0, self.runner.findData(settings.get("runner"))))
        f.addRow("Runner", self.runner)
        self.cpus = spin(QDoubleSpinBox(), 0.5, 256, settings.get("limits/cpus"), " CPUs")
        f.addRow("CPU", self.cpus)
        self.memory = spin(QDoubleSpinBox(), 0.25, 1024, settings.get("limits/memory_gib"), " GiB")
        f.addRow("Memory", self.memory)
        self.timeout = spin(QSpinBox(), 10, 7 * 24 * 3600, settings.get("limits/timeout_s"), " s")
        f.addRow("Timeout", self.timeout)
        self.batch = spin(QSpinBox(), 1, 4096, settings.get("limits/batch_size"))
        f.addRow("Batch size", self.batch)
        self.backend = QComboBox()  # issue 50 item 3: the CLI's --backend, recorded in the run and its bundle
        self.backend.setAccessibleName("Backend")
        for name in BACKENDS:
            self.backend.addItem(BACKEND_LABELS.get(name, name), name)
        self.backend.setToolTip("What runs the forward passes. ONNX Runtime runs a graph the worker exports from "
                                "the loaded model: the run and its bundle say so, the board ranks it in its own "
                                "class and an audit re-runs it with the same backend.")
        f.addRow("Backend", self.backend)
        self.gpu = QCheckBox("use the GPU(s)")
        self.gpu.setEnabled(False)  # until a GPU answers for the chosen runner
        self.gpu_reason = hint("checking for a GPU…")
        grow = QVBoxLayout()
        grow.addWidget(self.gpu)
        grow.addWidget(self.gpu_reason)
        f.addRow("GPU", grow)
        self.queue = QLineEdit()
        self.queue.setAccessibleName("Queue broker URL")
        self.queue.setPlaceholderText("empty: run here; or redis://:PASSWORD@host:6379/0 for worker machines")
        self.queue.setToolTip("Queue the runs on this Redis broker; 'dynadesk worker' machines run them "
                              "(docs/queue.md). The URL is not saved.")
        f.addRow("Queue", self.queue)
        self.runner.currentIndexChanged.connect(lambda _i: self._check_gpu())
        return box

    def _apply_setting(self, key: str) -> None:
        """Defaults edited on the Settings page show up here at once."""
        widgets: dict[str, Any] = {"limits/cpus": self.cpus, "limits/memory_gib": self.memory,
                                   "limits/timeout_s": self.timeout, "limits/batch_size": self.batch}
        if key in widgets:
            widgets[key].setValue(self._settings.get(key))
        elif key == "runner":
            self.runner.setCurrentIndex(max(0, self.runner.findData(self._settings.get("runner"))))
        elif key == "gpu":
            self.gpu.setChecked(self._settings.get("gpu") and self.gpu.isEnabled())

    def _check_gpu(self) -> None:
        self.gpu.setEnabled(False)
        self.gpu_reason.setText("checking for a GPU…")
        self._svc.check_gpu(str(self.runner.currentData()))

    def _on_gpu_checked(self, runner: str, ok: bool, detail: str) -> None:
        """Enable the GPU option only when a GPU answers for the runner on screen (a late answer for another
        runner is dropped)."""
        if runner != self.runner.currentData():
            return
        self.gpu.setEnabled(ok)
        self.gpu.setChecked(ok and bool(self._settings.get("gpu")))
        self.gpu_reason.setText(detail)
        self.gpu.setToolTip(detail)

    def refresh(self) -> None:
        self.fill_tasks()
        self._fill_choices()
        self.refresh_runs()
        self._check_gpu()

    def _fill_choices(self) -> None:
        task = self.task_combo.currentText()
        if not task:
            return
        models = [m.name for m in self.guard(self._models.list, task) or []]
        tests = [d.name for d in self.guard(self._data.datasets, task, False) or [] if d.split == "test"]
        for widget, items, on, empty in ((self.model_list, models, False, "no registered models for this task"),
                                         (self.dataset_list, tests, True, "no test-split datasets for this task")):
            widget.clear()
            for name in items:
                it = QListWidgetItem(name)
                it.setFlags(it.flags() | Qt.ItemFlag.ItemIsUserCheckable)
                it.setCheckState(Qt.CheckState.Checked if on or len(items) == 1 else Qt.CheckState.Unchecked)
                widget.addItem(it)
            if not items:
                widget.addItem(f"({empty})")
                widget.item(0).setFlags(Qt.ItemFlag.NoItemFlags)

    def set_checked(self, widget: QListWidget, names: list[str]) -> None:
        for i in range(widget.count()):
            it = widget.item(i)
            if it.flags() & Qt.ItemFlag.ItemIsUserCheckable:
                it.setCheckState(Qt.CheckState.Checked if it.text() in names else Qt.CheckState.Unchecked)

    # -------------------------------------------------------------- run
    def start(self) -> None:
        models = checked(self.model_list)
        datasets = checked(self.dataset_list)
        if not models:
            self.banner.error("Tick at least one model to evaluate.")
            return
        if not datasets:
            self.banner.error("Tick at least one test set.")
            return
        self.log_view.clear()
        try:
            requests = [self.request_for(model, datasets) for model in models]
        except DynaDeskError as exc:
            self.banner.error(str(exc))
            return
        broker = self.queue.text().strip()
        try:
            if broker:
                self._svc.start_queued(requests, broker)
            else:
                self._svc.start(requests)
        except DynaDeskError as exc:
            self.banner.error(str(exc))

    def request_for(self, model: str, datasets: list[str]) -> RunRequest:
        """The run the form describes for one model."""
        limits = default_limits(cpus=float(self.cpus.value()), memory_bytes=int(self.memory.value() * GIB),
                                timeout_s=float(self.timeout.value()), gpus="all" if self.gpu.isChecked() else None)
        return RunRequest(model=model, datasets=tuple(datasets), runner=str(self.runner.currentData()),
                          limits=limits, settings=RunSettings(batch_size=int(self.batch.value()),
                                                              backend=str(self.backend.currentData())))

    def resume_selected(self) -> None:
        run_id = self.selected_run()
        if run_id is None:
            self.banner.error("Select a run to resume.")
            return
        rec = self._runs.get(run_id)
        if rec is not None and rec.status == "succeeded":
            self.banner.error(f"Run {run_id} already succeeded.")
            return
        self.log_view.clear()
        self._svc.resume(run_id)

    def _on_started(self) -> None:
        self.banner.clear()
        self.start_button.setEnabled(False)
        self.resume_button.setEnabled(False)
        self.cancel_button.setEnabled(True)
        self.progress.setRange(0, 0)  # busy until the worker reports a total
        self.status_label.setText("Starting…")

    def _on_run_created(self, run_id: int) -> None:
        self.status_label.setText(f"Run {run_id} running")
        self.refresh_runs()

    def _on_progress(self, event: ProgressEvent) -> None:
        if event.total:
            self.progress.setRange(0, event.total)
            self.progress.setValue(min(event.done or 0, event.total))
        self.status_label.setText(progress_line(event))

    def _on_left(self, line: str) -> None:
        """A run started in a workspace since closed ended: said in one line, its outcome kept off this view."""
        self.banner.show_message(line, "info")
        self.status_label.setText("Idle")

    def _on_log(self, line: str) -> None:
        self.log_view.appendPlainText(line)

    def _idle(self) -> None:
        self.start_button.setEnabled(True)
        self.resume_button.setEnabled(True)
        self.cancel_button.setEnabled(False)
        if self.progress.maximum() == 0:
            self.progress.setRange(0, 1)
            self.progress.setValue(0)

    def _on_finished(self, records: list[EvaluationRecord]) -> None:
        self._idle()
        self.refresh_runs()  # the table and the detail pane show the final state as soon as the outcome is known
        bad = [r for r in records if r.status != "succeeded"]
        if bad:
            self.banner.error("; ".join(failure_line(r) for r in bad))  # the line the CLI prints
        else:
            self.banner.show_message(f"{len(records)} run(s) succeeded: "
                                     + ", ".join(f"{r.model_name} (run {r.id})" for r in records), "ok")
        self.status_label.setText("Finished")

    def _on_failed(self, message: str) -> None:
        self._idle()
        self.refresh_runs()
        self.banner.error(message)
        self.status_label.setText("Failed")

    def _on_cancelled(self) -> None:
        self._idle()
        self.refresh_runs()
        self.banner.show_message("Evaluation cancelled; the run is stored as 'cancelled' and can be resumed.", "warn")
        self.status_label.setText("Cancelled")

    # ------------------------------------------------------------- runs
    def refresh_runs(self) -> None:
        """Read the run list off the GUI thread; :meth:`_on_runs_loaded` fills the table (the newest read only)."""
        self.runs_loading = True
        self._svc.load_runs()

    def _on_runs_loaded(self, runs: list[EvaluationRecord]) -> None:
        self.runs_loading = False
        selected = self.selected_run()
        self._runs = {r.id: r for r in runs}
        served = self._svc.served_models
        fill(self.runs_table, [[r.id, r.model_name, r.task, runner_text(r.runner, r.sandboxed, r.model_name in served),
                                r.status, r.verdict or "", ", ".join(r.datasets), (r.started_at or "")[:19],
                                (r.finished_at or "")[:19], (r.error or "").splitlines()[0][:120] if r.error else ""]
                               for r in runs], numeric={0})
        from PySide6.QtGui import QColor

        for row in range(self.runs_table.rowCount()):
            item = self.runs_table.item(row, 4)
            item.setForeground(QColor(STATUS_COLORS.get(item.text(), "#000000")))
        if selected is not None:
            self.select_run(selected)
        self._show_run()  # the same run stays selected while its state changed (e.g. resumed): show it anew
        self.runsLoaded.emit()

    def selected_run(self) -> int | None:
        rows = self.runs_table.selectionModel().selectedRows()
        return int(self.runs_table.item(rows[0].row(), 0).text()) if rows else None

    def select_run(self, run_id: int) -> None:
        for r in range(self.runs_table.rowCount()):
            if self.runs_table.item(r, 0).text() == str(run_id):
                self.runs_table.selectRow(r)
                return

    def run_status(self, run_id: int) -> str | None:
        for r in range(self.runs_table.rowCount()):
            if self.runs_table.item(r, 0).text() == str(run_id):
                return self.runs_table.item(r, 4).text()
        return None

    def _show_run(self) -> None:
        rec = self._runs.get(self.selected_run())  # type: ignore[arg-type]
        if rec is None:
            self.run_detail.clear()
            return
        lines = [f"run {rec.id}: {rec.model_name} on {', '.join(rec.datasets)} — {rec.status}"
                 + (f" ({rec.verdict})" if rec.verdict else "")]
        if rec.error:
            lines.append(f"error: {rec.error}")
        for m in rec.metrics:
            lines.append(f"  {m.dataset or '(whole run)':<28} {m.metric:<20} {m.value:10.4g} {m.unit}")
        log = self.guard(self._svc.run_log, rec.id) or ""
        if log:
            lines += ["", "log (tail):", *log.rstrip().splitlines()[-40:]]
        self.run_detail.setPlainText("\n".join(lines))

    def shutdown(self) -> None:
        self._svc.cancel()


def make(services: Services, parent: QWidget | None = None) -> EvaluatePage:
    return EvaluatePage(services.evaluation, services.models, services.data, services.settings, parent=parent)
