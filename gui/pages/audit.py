"""Audit: open a bundle file and verify its signature and key binding, with its contents
field by field. Re-running a bundle and the match / within-tolerance / differs verdict come
with the audit library (issue 9); until then this page verifies only, and says so."""

from __future__ import annotations

import importlib.util
import json

from PySide6.QtWidgets import QFileDialog, QHBoxLayout, QLabel, QLineEdit, QPushButton, QWidget

from dynadesk.errors import DynaDeskError
from dynadesk.gui.pages.base import Banner, Page
from dynadesk.gui.pages.tables import fill, table
from dynadesk.gui.services.bundles import BundlesService


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

    def __init__(self, service: BundlesService, parent: QWidget | None = None):
        super().__init__(parent)
        self._svc = service
        self.bundle = None
        lay = self.body()
        row = QHBoxLayout()
        self.path_edit = QLineEdit()
        self.path_edit.setPlaceholderText("a bundle file (.json)")
        row.addWidget(self.path_edit, 1)
        browse = QPushButton("Open…")
        browse.clicked.connect(self._browse)
        row.addWidget(browse)
        self.verify_button = QPushButton("Verify")
        self.verify_button.clicked.connect(self.verify)
        row.addWidget(self.verify_button)
        self.rerun_button = QPushButton("Re-run and compare")
        self.rerun_available = importlib.util.find_spec("dynadesk.audit") is not None
        self.rerun_button.setEnabled(False)
        self.rerun_button.setToolTip("Needs the audit library (issue 9), not installed in this build")
        row.addWidget(self.rerun_button)
        lay.addLayout(row)
        self.scope = Banner(self, closable=False)
        self.scope.show_message("Verification only: this build checks the bundle's format, its signature and the "
                                "key fingerprint. Re-running the evaluation and the field-by-field match / "
                                "within tolerance / differs verdict arrive with the audit library (issue 9).", "info")
        lay.addWidget(self.scope)
        self.verdict = QLabel()
        self.verdict.setStyleSheet("font-size:14pt; font-weight:bold")
        lay.addWidget(self.verdict)
        self.fields = table(["field", "value"])
        lay.addWidget(self.fields, 1)

    def _browse(self) -> None:
        path, _ = QFileDialog.getOpenFileName(self, "Open bundle", "", "Bundles (*.json);;All (*)")
        if path:
            self.path_edit.setText(path)
            self.verify()

    def verify(self) -> None:
        path = self.path_edit.text().strip()
        if not path:
            self.banner.error("Choose a bundle file.")
            return
        self.fields.setRowCount(0)
        try:
            bundle = self._svc.verify_file(path)
        except DynaDeskError as exc:
            self.bundle = None
            self.verdict.setText("<span style='color:#b71c1c'>✘ does not verify</span>")
            self.banner.error(str(exc))
            return
        self.bundle = bundle
        self.banner.clear()
        self.verdict.setText(f"<span style='color:#1b5e20'>✔ signature valid</span> — key "
                             f"<code>{bundle.key_fingerprint}</code>, bundle <code>{bundle.id[:16]}…</code>")
        rows = [("bundle id", bundle.id), ("signature", "valid (ed25519)"),
                ("key fingerprint", bundle.key_fingerprint)] + flatten(bundle.payload, "payload")
        fill(self.fields, [list(r) for r in rows])


def make(services, parent: QWidget | None = None) -> AuditPage:
    return AuditPage(services.extra["bundles"], parent=parent)
