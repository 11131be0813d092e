"""Settings: workspace path, server URL, default run limits (stored with QSettings) and signing keys."""

from __future__ import annotations

from PySide6.QtWidgets import (
    QCheckBox,
    QComboBox,
    QDoubleSpinBox,
    QFormLayout,
    QGroupBox,
    QLabel,
    QLineEdit,
    QSpinBox,
    QVBoxLayout,
    QWidget,
)

from dynadesk.errors import DynaDeskError
from dynadesk.gui.pages.base import Page
from dynadesk.gui.pages.scaffold import browse_into, button, path_row, spin
from dynadesk.gui.services.bundles import BundlesService
from dynadesk.gui.services.settings import AppSettings
from dynadesk.gui.services.workspace import WorkspaceService
from dynadesk.orchestration.runner_registry import runner_names


class SettingsPage(Page):
    title = "Settings"

    def __init__(self, settings: AppSettings, ws: WorkspaceService, keys_service: BundlesService,
                 parent: QWidget | None = None):
        super().__init__(parent)
        self._settings = settings
        self._ws = ws
        self._keys_service = keys_service
        lay = self.body()

        wbox = QGroupBox("Workspace")
        wf = QFormLayout(wbox)
        row, self.workspace_edit = path_row("", self._browse)
        self.workspace_edit.setText(str(ws.home))
        self.open_button = button("Open", self.open_workspace,
                                  tooltip="Open this workspace now and remember it for the next start")
        row.addWidget(self.open_button)
        wf.addRow("Folder", row)
        self.db_label = QLabel()
        wf.addRow("Database", self.db_label)
        lay.addWidget(wbox)

        sbox = QGroupBox("Leaderboard server")
        sf = QFormLayout(sbox)
        self.server_edit = QLineEdit(settings.get("server_url"))
        self.server_edit.editingFinished.connect(lambda: self._save("server_url", self.server_edit.text().strip()))
        sf.addRow("Server URL", self.server_edit)
        lay.addWidget(sbox)

        lay.addWidget(self._limits_box())

        self.keys_box = QGroupBox("Signing key (for score bundles)")
        kl = QVBoxLayout(self.keys_box)
        from dynadesk.gui.pages.keys_panel import KeysPanel

        self.keys_panel = KeysPanel(keys_service, self.banner)
        kl.addWidget(self.keys_panel)
        lay.addWidget(self.keys_box)
        self.settings_file = QLabel(f"<small>Settings are stored in {settings.file_name}</small>")
        lay.addWidget(self.settings_file)
        lay.addStretch(1)
        ws.opened.connect(lambda _h: self.refresh())
        self.refresh()

    def _limits_box(self) -> QGroupBox:
        """The defaults the Evaluate page opens with: limits, runner, GPU (saved as they are edited)."""
        settings = self._settings
        lbox = QGroupBox("Default evaluation limits")
        lf = QFormLayout(lbox)
        self.timeout = self._spin(QSpinBox(), 10, 7 * 24 * 3600, "limits/timeout_s", " s")
        lf.addRow("Timeout", self.timeout)
        self.memory = self._spin(QDoubleSpinBox(), 0.25, 1024, "limits/memory_gib", " GiB")
        lf.addRow("Memory limit", self.memory)
        self.cpus = self._spin(QDoubleSpinBox(), 0.5, 256, "limits/cpus", " CPUs")
        lf.addRow("CPU limit", self.cpus)
        self.batch = self._spin(QSpinBox(), 1, 4096, "limits/batch_size", "")
        lf.addRow("Batch size", self.batch)
        self.runner = QComboBox()
        self.runner.addItems(list(runner_names()))
        self.runner.setCurrentText(settings.get("runner"))
        self.runner.currentTextChanged.connect(lambda t: self._save("runner", t))
        lf.addRow("Runner", self.runner)
        self.gpu = QCheckBox("use a GPU when one is present")
        self.gpu.setChecked(settings.get("gpu"))
        self.gpu.toggled.connect(lambda on: self._save("gpu", on))
        lf.addRow("GPU", self.gpu)
        return lbox

    def _spin(self, box, lo, hi, key: str, suffix: str):
        box = spin(box, lo, hi, self._settings.get(key), suffix)
        box.valueChanged.connect(lambda v: self._save(key, v))
        return box

    def _save(self, key: str, value) -> None:
        self._settings.set(key, value)
        self.statusMessage.emit(f"saved {key}")

    def _browse(self) -> None:
        browse_into(self.workspace_edit, "Workspace folder", start=self.workspace_edit.text())

    def open_workspace(self) -> None:
        path = self.required(self.workspace_edit, "Enter a workspace folder.")
        if path is None:
            return
        try:
            self._ws.switch(path)
        except DynaDeskError as exc:
            self.banner.error(str(exc))
            return
        self._settings.set("workspace", str(self._ws.home))
        self.banner.show_message(f"Opened workspace {self._ws.home}", "ok")

    def refresh(self) -> None:
        self.workspace_edit.setText(str(self._ws.home))
        self.db_label.setText(str(self._ws.workspace.db_path))
        self.keys_panel.refresh()
