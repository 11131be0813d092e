"""The signing-key panel (fingerprint, create/replace with an optional passphrase), shared by
the Settings and Bundles & sync pages."""

from __future__ import annotations

from PySide6.QtCore import Qt
from PySide6.QtWidgets import QCheckBox, QFormLayout, QHBoxLayout, QLabel, QLineEdit, QPushButton, QWidget

from dynadesk.errors import DynaDeskError
from dynadesk.gui.pages.base import Banner
from dynadesk.gui.services.bundles import BundlesService


class KeysPanel(QWidget):
    def __init__(self, service: BundlesService, banner: Banner, parent: QWidget | None = None):
        super().__init__(parent)
        self._svc = service
        self._banner = banner
        form = QFormLayout(self)
        form.setContentsMargins(0, 0, 0, 0)
        self.fingerprint = QLabel()
        self.fingerprint.setTextInteractionFlags(Qt.TextInteractionFlag.TextSelectableByMouse)
        self.fingerprint.setObjectName("keyFingerprint")
        form.addRow("Fingerprint", self.fingerprint)
        self.paths = QLabel()
        self.paths.setWordWrap(True)
        form.addRow("Files", self.paths)
        row = QHBoxLayout()
        self.passphrase = QLineEdit()
        self.passphrase.setAccessibleName("Passphrase for a new key")
        self.passphrase.setEchoMode(QLineEdit.EchoMode.Password)
        self.passphrase.setPlaceholderText("optional passphrase for a new key")
        row.addWidget(self.passphrase, 1)
        self.replace = QCheckBox("replace the existing key")
        row.addWidget(self.replace)
        self.create_button = QPushButton("Create key")
        self.create_button.clicked.connect(self.create_key)
        row.addWidget(self.create_button)
        form.addRow("New key", row)
        service.keyChanged.connect(self.refresh)
        self.refresh()

    def refresh(self) -> None:
        try:
            info = self._svc.key_info()
        except DynaDeskError as exc:
            self.fingerprint.setText("<span style='color:#b71c1c'>unreadable key</span>")
            self._banner.error(str(exc))
            return
        if info is None:
            self.fingerprint.setText("<i>no signing key yet: create one to sign bundles</i>")
            self.paths.clear()
            self.create_button.setText("Create key")
            return
        self.fingerprint.setText(f"<code>{info.fingerprint}</code>" + (" (passphrase protected)" if info.encrypted
                                                                        else ""))
        self.paths.setText(f"<small>{info.private_path}<br>{info.public_path}</small>")
        self.create_button.setText("Replace key")

    def create_key(self) -> None:
        try:
            info = self._svc.generate_key(self.passphrase.text(), force=self.replace.isChecked())
        except DynaDeskError as exc:
            self._banner.error(str(exc))
            return
        self.passphrase.clear()
        self.replace.setChecked(False)
        self._banner.show_message(f"Created signing key {info.fingerprint}", "ok")
