"""Bundles & sync: sign a bundle from a succeeded run, see the queue with states and server
messages, sync to the leaderboard server, and the workspace key's fingerprint."""

from __future__ import annotations

import json
from typing import TYPE_CHECKING, Any

from PySide6.QtWidgets import (
    QComboBox,
    QFormLayout,
    QGroupBox,
    QHBoxLayout,
    QLabel,
    QLineEdit,
    QWidget,
)

from dynadesk.errors import DynaDeskError
from dynadesk.gui.pages.base import Page
from dynadesk.gui.pages.keys_panel import KeysPanel
from dynadesk.gui.pages.scaffold import button, named_table, read_only_text
from dynadesk.gui.pages.tables import fill
from dynadesk.gui.services.bundles import BundlesService
from dynadesk.gui.services.settings import AppSettings

if TYPE_CHECKING:
    from dynadesk.gui.services.context import Services


class BundlesPage(Page):
    title = "Bundles & sync"

    def __init__(self, service: BundlesService, settings: AppSettings, parent: QWidget | None = None):
        super().__init__(parent)
        self._svc = service
        self._settings = settings
        self._rows: dict[str, Any] = {}
        lay = self.body()

        kbox = QGroupBox("Signing key")
        kl = QHBoxLayout(kbox)
        self.keys = KeysPanel(service, self.banner)
        kl.addWidget(self.keys)
        lay.addWidget(kbox)

        cbox = QGroupBox("Create and sign a bundle from a succeeded run")
        cf = QFormLayout(cbox)
        row = QHBoxLayout()
        self.run_combo = QComboBox()
        self.run_combo.setMinimumWidth(320)
        row.addWidget(self.run_combo, 1)
        self.passphrase = QLineEdit()
        self.passphrase.setAccessibleName("Key passphrase")
        self.passphrase.setEchoMode(QLineEdit.EchoMode.Password)
        self.passphrase.setPlaceholderText("key passphrase (if the key has one)")
        row.addWidget(self.passphrase)
        self.create_button = button("Create && sign", self.create)
        row.addWidget(self.create_button)
        cf.addRow("Run", row)
        lay.addWidget(cbox)

        srow = QHBoxLayout()
        srow.addWidget(QLabel("<b>Queue</b>"))
        self.counts = QLabel()
        srow.addWidget(self.counts)
        srow.addStretch(1)
        self.server_edit = QLineEdit(settings.get("server_url"))
        self.server_edit.setAccessibleName("Leaderboard server URL")
        self.server_edit.setMinimumWidth(260)
        self.server_edit.setToolTip("Leaderboard server (saved in Settings)")
        srow.addWidget(QLabel("Server"))
        srow.addWidget(self.server_edit)
        self.sync_button = button("⇅ Sync now", self.sync)
        srow.addWidget(self.sync_button)
        self.requeue_button = button("Re-queue selected", self.requeue, tooltip="Put a rejected bundle back in the "
                                     "queue (e.g. after the server registered your key)")
        srow.addWidget(self.requeue_button)
        lay.addLayout(srow)
        self.table = named_table(["bundle", "task", "model", "run", "state", "attempts", "server", "server message",
                                  "queued", "sent"], "Bundles", self._show)
        lay.addWidget(self.table, 2)
        self.detail = read_only_text("Selected bundle's details")
        self.detail.setMaximumHeight(140)
        lay.addWidget(self.detail)

        self.follow(service, queueChanged=self.refresh, created=self._on_created, createFailed=self._on_create_failed,
                    synced=self._on_synced, syncFailed=self._on_sync_failed)
        settings.changed.connect(lambda k: self.server_edit.setText(settings.get("server_url"))
                                 if k == "server_url" else None)
        self.refresh()

    def refresh(self) -> None:
        runs = self.guard(self._svc.runs_to_bundle) or []
        cur = self.run_combo.currentData()
        self.run_combo.clear()
        for r in runs:
            self.run_combo.addItem(f"run {r.id} · {r.model_name} · {r.task} · {(r.finished_at or '')[:19]}", r.id)
        if not runs:
            self.run_combo.addItem("(no succeeded runs yet: evaluate a model first)", None)
        idx = self.run_combo.findData(cur)
        if idx >= 0:
            self.run_combo.setCurrentIndex(idx)
        rows = self.guard(self._svc.bundles) or []
        self._rows = {b.id: b for b in rows}
        fill(self.table, [[b.id[:16], b.task, b.model_name, b.evaluation_id or "", b.status, b.attempts,
                           b.server or "", (b.last_error or self._message(b.response)).splitlines()[0][:120]
                           if (b.last_error or b.response) else "", b.queued_at[:19], (b.sent_at or "")[:19]]
                          for b in rows], numeric={3, 5})
        counts = {s: sum(1 for b in rows if b.status == s) for s in ("queued", "sent", "rejected")}
        self.counts.setText(" · ".join(f"{n} {s}" for s, n in counts.items()))
        self.keys.refresh()

    @staticmethod
    def _message(response) -> str:
        if not response:
            return ""
        return str(response.get("status") or response.get("error") or json.dumps(response)[:120])

    def selected(self):
        rows = self.table.selectionModel().selectedRows()
        if not rows:
            return None
        prefix = self.table.item(rows[0].row(), 0).text()
        return next((b for bid, b in self._rows.items() if bid.startswith(prefix)), None)

    def _show(self) -> None:
        b = self.selected()
        self.detail.setPlainText("" if b is None else json.dumps(b.to_dict(), indent=2, default=str))

    def create(self) -> None:  # type: ignore[override]
        run_id = self.run_combo.currentData()
        if run_id is None:
            self.banner.error("There is no succeeded run to bundle yet.")
            return
        self.create_button.setEnabled(False)
        self.banner.show_message(f"Signing a bundle of run {run_id} …", "info")
        self._svc.create(run_id, self.passphrase.text())

    def _on_created(self, bundle) -> None:
        self.create_button.setEnabled(True)
        self.passphrase.clear()
        self.banner.show_message(f"Signed bundle {bundle.id[:16]}… ({bundle.model_name}, {bundle.task}) and queued "
                                 "it for sync", "ok")

    def _on_create_failed(self, message: str) -> None:
        self.create_button.setEnabled(True)
        self.banner.error(message)

    def sync(self) -> None:
        server = self.server_edit.text().strip()
        if server:
            self._settings.set("server_url", server)
        self.sync_button.setEnabled(False)
        self.banner.show_message(f"Syncing with {server or 'the last server used'} …", "info")
        self._svc.sync(server or None)

    def _on_synced(self, report) -> None:
        self.sync_button.setEnabled(True)
        parts = [f"{len(report.sent)} sent", f"{len(report.already)} already on the server",
                 f"{len(report.rejected)} rejected"]
        if report.error:
            self.banner.error(f"Sync with {report.server} stopped: {report.error}. "
                              f"{len(report.still_queued)} bundle(s) stay queued. ({', '.join(parts)})")
        elif report.rejected:
            self.banner.show_message("; ".join(parts) + ". Rejections: " + "; ".join(
                f"{k[:12]}: {v}" for k, v in report.rejected.items()), "warn")
        else:
            self.banner.show_message(f"Synced with {report.server}: " + ", ".join(parts), "ok")

    def _on_sync_failed(self, message: str) -> None:
        self.sync_button.setEnabled(True)
        self.banner.error(message)

    def requeue(self) -> None:
        b = self.selected()
        if b is None:
            self.banner.error("Select a bundle.")
            return
        try:
            self._svc.requeue(b.id)
        except DynaDeskError as exc:
            self.banner.error(str(exc))


def make(services: Services, parent: QWidget | None = None) -> BundlesPage:
    return BundlesPage(services.bundles, services.settings, parent=parent)
