"""Audit: open a bundle file, verify its signature and key binding, then check the inputs it
names or re-run it and compare field by field (identical / within tolerance / differs / not
comparable), through :class:`~dynadesk.gui.services.audit.AuditService` on a pool worker."""

from __future__ import annotations

import json
from typing import TYPE_CHECKING

from PySide6.QtGui import QBrush, QColor
from PySide6.QtWidgets import (
    QComboBox,
    QHBoxLayout,
    QLabel,
    QLineEdit,
    QProgressBar,
    QTabWidget,
    QWidget,
)

from dynadesk.errors import DynaDeskError
from dynadesk.gui.pages.base import Banner, Page
from dynadesk.gui.pages.scaffold import browse_into, button, named_table, path_row, read_only_text
from dynadesk.gui.pages.tables import fill
from dynadesk.gui.services.bundles import BundlesService
from dynadesk.gui.workers import progress_line
from dynadesk.orchestration.runner_registry import RUNNERS
from dynadesk.progress import ProgressEvent

if TYPE_CHECKING:
    from dynadesk.gui.services.context import Services

# Verdict -> cell colour (background, text); the names are those of dynadesk.audit.report.
VERDICT_COLOURS = {
    "identical": ("#e8f5e9", "#1b5e20"),
    "within tolerance": ("#fff8e1", "#6d4c00"),
    "differs": ("#fdecea", "#b71c1c"),
    "not comparable": ("#eceff1", "#37474f"),
}
CHECK_COLUMNS = ["field", "kind", "verdict", "expected", "actual", "tolerance", "note"]
def runner_choices() -> list[tuple[str, str | None]]:
    """The re-run box: the recorded runner, or any registered one (read when the page is made)."""
    return [("as recorded", None), *((s.plain_label, s.name) for s in RUNNERS.values())]


def cell(value) -> str:
    if value is None:
        return ""
    return value if isinstance(value, str) else json.dumps(value, ensure_ascii=False)


def flatten(obj, prefix: str = "") -> list[tuple[str, str]]:
    """``payload.a.b`` -> value rows for the field table (lists of scalars stay on one row)."""
    if isinstance(obj, dict):
        out = []
        for k, v in obj.items():
            out += flatten(v, f"{prefix}.{k}" if prefix else str(k))
        return out
    if isinstance(obj, list) and obj and all(isinstance(x, dict) for x in obj):
        out = []
        for i, v in enumerate(obj):
            out += flatten(v, f"{prefix}[{i}]")
        return out
    return [(prefix, json.dumps(obj, ensure_ascii=False) if not isinstance(obj, str) else obj)]


class AuditPage(Page):
    title = "Audit"

    def __init__(self, service: BundlesService, audit_service=None, parent: QWidget | None = None):
        super().__init__(parent)
        self._svc = service
        self._audit = audit_service
        self.bundle = None
        self.report = None
        lay = self.body()
        row, self.path_edit = path_row("a bundle file (.json)", self._browse, "Open…", name="Bundle file")
        self.path_edit.textChanged.connect(lambda _t: self._sync_buttons())
        self.verify_button = button("Verify", self.verify)
        row.addWidget(self.verify_button)
        lay.addLayout(row)

        lay.addLayout(self._audit_row())
        self.rerun_available = audit_service is not None

        self.scope = Banner(self, closable=False)
        if not self.rerun_available:
            self.scope.show_message("Verification only: the audit library (dynadesk.audit) is not installed in "
                                    "this build, so inputs cannot be checked nor the bundle re-run.", "warn")
        lay.addWidget(self.scope)
        self.progress = QProgressBar()
        self.progress.setTextVisible(True)
        self.progress.hide()
        lay.addWidget(self.progress)
        self.verdict = QLabel()
        self.verdict.setStyleSheet("font-size:14pt; font-weight:bold")
        self.verdict.setWordWrap(True)
        lay.addWidget(self.verdict)
        self.summary = QLabel()
        self.summary.setWordWrap(True)
        lay.addWidget(self.summary)
        self.tabs = QTabWidget()
        self.checks = named_table(CHECK_COLUMNS, "Audit checks")
        self.tabs.addTab(self.checks, "Verdicts")
        self.fields = named_table(["field", "value"], "Bundle contents")
        self.tabs.addTab(self.fields, "Bundle contents")
        self.log_view = read_only_text("Audit log")
        self.tabs.addTab(self.log_view, "Log")
        lay.addWidget(self.tabs, 1)
        if audit_service is not None:
            self.follow(audit_service, progress=self._on_progress, log=self.log_view.appendPlainText,
                        finished=self._on_report, failed=self._on_failed, cancelled=self._on_cancelled,
                        done=self._on_done)
        self._sync_buttons()

    def _audit_row(self) -> QHBoxLayout:
        """What an audit needs beyond the bundle (a model folder, a runner), and its buttons: check, re-run, cancel."""
        row = QHBoxLayout()
        row.addWidget(QLabel("Model folder:"))
        self.model_edit = QLineEdit()
        self.model_edit.setAccessibleName("Model folder")
        self.model_edit.setPlaceholderText("optional: where the bundle's model is (else the registered one)")
        row.addWidget(self.model_edit, 1)
        row.addWidget(QLabel("Runner:"))
        self.runner_combo = QComboBox()
        for label, value in runner_choices():
            self.runner_combo.addItem(label, value)
        row.addWidget(self.runner_combo)
        self.check_button = button("Check inputs", lambda: self.start_audit(rerun=False),
                                   tooltip="Signature, model folder, datasets, evaluator image and code: no re-run")
        self.rerun_button = button("Re-run and compare", lambda: self.start_audit(rerun=True),
                                   tooltip="Evaluate the bundle again with its recorded settings and compare every "
                                   "field")
        self.cancel_button = button("■ Cancel", self.cancel, enabled=False)
        for b in (self.check_button, self.rerun_button, self.cancel_button):
            row.addWidget(b)
        return row

    # ------------------------------------------------------------ helpers
    def _sync_buttons(self) -> None:
        running = self._audit is not None and self._audit.running
        can = self.rerun_available and bool(self.path_edit.text().strip()) and not running
        self.check_button.setEnabled(can)
        self.rerun_button.setEnabled(can)
        self.runner_combo.setEnabled(self.rerun_available and not running)
        self.verify_button.setEnabled(not running)
        self.cancel_button.setEnabled(running)

    def _browse(self) -> None:
        if browse_into(self.path_edit, "Open bundle", "Bundles (*.json);;All (*)"):
            self.verify()

    # ------------------------------------------------------------- verify
    def verify(self) -> bool:
        path = self.required(self.path_edit, "Choose a bundle file.")
        if path is None:
            return False
        self.fields.setRowCount(0)
        try:
            bundle = self._svc.verify_file(path)
        except DynaDeskError as exc:
            self.bundle = None
            self.verdict.setText("<span style='color:#b71c1c'>✘ does not verify</span>")
            self.banner.error(str(exc))
            return False
        self.bundle = bundle
        self.banner.clear()
        self.verdict.setText(f"<span style='color:#1b5e20'>✔ signature valid</span> — key "
                             f"<code>{bundle.key_fingerprint}</code>, bundle <code>{bundle.id[:16]}…</code>")
        rows = [("bundle id", bundle.id), ("signature", "valid (ed25519)"),
                ("key fingerprint", bundle.key_fingerprint)] + flatten(bundle.payload.to_json(), "payload")
        fill(self.fields, [list(r) for r in rows])
        return True

    # -------------------------------------------------------------- audit
    def start_audit(self, rerun: bool) -> None:
        if self._audit is None or self._audit.running:
            return
        path = self.required(self.path_edit, "Choose a bundle file.")
        if path is None:
            return
        self.verify()  # shows the contents; a bad signature is also a verdict row, a bad format fails the job
        self.report = None
        self.checks.setRowCount(0)
        self.summary.clear()
        self.log_view.clear()
        self.progress.setRange(0, 0)
        self.progress.setFormat("starting…")
        self.progress.show()
        try:
            self._audit.audit(path, rerun=rerun, runner=self.runner_combo.currentData() if rerun else None,
                              model_path=self.model_edit.text().strip() or None)
        except RuntimeError as exc:
            self.banner.error(str(exc))
        self.tabs.setCurrentWidget(self.log_view if rerun else self.checks)
        self._sync_buttons()

    def cancel(self) -> None:
        if self._audit is not None:
            self._audit.cancel()
            self.progress.setFormat("cancelling…")

    def _on_progress(self, event: ProgressEvent) -> None:
        if event.total:
            self.progress.setRange(0, event.total)
            self.progress.setValue(min(event.done or 0, event.total))
        else:
            self.progress.setRange(0, 0)
        self.progress.setFormat(progress_line(event).replace("%", "%%") or "working…")

    def _on_report(self, report) -> None:
        self.report = report
        self.show_report(report)
        self.tabs.setCurrentWidget(self.checks)

    def show_report(self, report) -> None:
        rows = [[c.field, c.kind, c.verdict, cell(c.expected), cell(c.actual),
                 "" if c.tolerance is None else f"±{c.tolerance * 100:g}%", c.note] for c in report.checks]
        fill(self.checks, rows)
        col = CHECK_COLUMNS.index("verdict")
        for r, c in enumerate(report.checks):
            bg, fg = VERDICT_COLOURS[c.verdict]
            item = self.checks.item(r, col)
            item.setBackground(QBrush(QColor(bg)))
            item.setForeground(QBrush(QColor(fg)))
            if c.fails:
                item.setText(f"{c.verdict} ✘")
        counts = report.counts()
        parts = ", ".join(f"{n} {v}" for v, n in counts.items() if n)
        head, colour = verdict_headline(report)
        self.verdict.setText(f"<span style='color:{colour}'>{head}</span>")
        failing = report.failures + report.measured_failures
        failures = "" if not failing else " — failing: " + ", ".join(c.field for c in failing)
        rerun = f" — compared with run {report.rerun_id}" if report.rerun_id is not None else ""
        self.summary.setText(f"{report.task} / {report.model}: {len(report.checks)} checks ({parts}){rerun}"
                             f"{failures}." + "".join(f"\n• {n}" for n in report.notes))

    def _on_failed(self, message: str) -> None:
        self.verdict.setText("<span style='color:#b71c1c'>✘ audit could not be made</span>")
        self.banner.error(message)

    def _on_cancelled(self) -> None:
        self.verdict.setText("<span style='color:#6d4c00'>■ audit cancelled</span>")
        self.summary.setText("The re-run was cancelled; nothing was compared.")
        self.banner.show_message("Audit cancelled.", "warn")

    def _on_done(self) -> None:
        self.progress.hide()
        self._sync_buttons()


def make(services: Services, parent: QWidget | None = None) -> AuditPage:
    return AuditPage(services.bundles, services.audit, parent=parent)


def verdict_headline(report) -> tuple[str, str]:
    """(headline, colour): "inputs checked" (nothing re-computed) is not "re-run: reproduced"."""
    others = report.other_differences  # every differing field is named in the headline, failing or not
    also = (" — also differs: " + ", ".join(f"{c.field} ({c.note})" if c.note else c.field for c in others)
            ) if others else ""
    if report.failures:
        return f"✘ audit failed: {', '.join(c.field for c in report.failures)} differ{also}", "#b71c1c"
    if report.measured_failures:
        return (f"✘ measured claims not reproduced: {', '.join(c.field for c in report.measured_failures)} outside "
                f"tolerance of the re-measurement{also}"), "#b71c1c"
    if report.incomplete:
        return f"⚠ incomplete: the re-run could not be made{also}", "#6d4c00"
    extra = f" — {report.not_comparable_what} not comparable: {report.not_comparable}" if report.not_comparable else ""
    if report.rerun_id is None:
        return (f"✔ inputs checked — audit passed (not re-run: predictions and metrics not reproduced){also}",
                "#6d4c00" if others else "#1b5e20")
    if others:  # passed, but not as the bundle was made: amber, and said
        return (f"⚠ re-run: reproduced — audit passed, but differs: "
                f"{', '.join(f'{c.field} ({c.note})' if c.note else c.field for c in others)}{extra}"), "#6d4c00"
    return f"✔ re-run: reproduced — audit passed{extra}", "#1b5e20"
