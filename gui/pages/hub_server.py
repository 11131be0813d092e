"""The Hub page's server box: start and stop ``dynadesk hub serve`` from the app, its address in large type, a QR
code of it for phones (the ``qrcode`` package computes the modules; Qt paints them), and the invite codes given
in this session, large enough to read across a room (a code is shown once: the store keeps only its hash)."""

from __future__ import annotations

from PySide6.QtCore import QRectF, Qt, Signal
from PySide6.QtGui import QColor, QPainter
from PySide6.QtWidgets import (
    QCheckBox,
    QGroupBox,
    QHBoxLayout,
    QLabel,
    QListWidget,
    QPushButton,
    QSizePolicy,
    QSpinBox,
    QVBoxLayout,
    QWidget,
)

from dynadesk.gui.services.hub_process import HubProcess

BIG = "font-size:20pt; font-weight:600;"


def qr_matrix(text: str) -> list[list[bool]]:
    """The QR code modules of ``text`` (True = dark), with the standard 4-module quiet zone."""
    import qrcode

    qr = qrcode.QRCode(border=4, error_correction=qrcode.constants.ERROR_CORRECT_M)
    qr.add_data(text)
    qr.make(fit=True)
    return [list(row) for row in qr.get_matrix()]


class QrCode(QWidget):
    """A square QR code of :attr:`text`, scaled to whole pixels per module so a phone camera reads it."""

    def __init__(self, parent: QWidget | None = None):
        super().__init__(parent)
        self.text = ""
        self.matrix: list[list[bool]] = []
        self.setMinimumSize(180, 180)
        self.setSizePolicy(QSizePolicy.Policy.Fixed, QSizePolicy.Policy.Fixed)
        self.setAccessibleName("QR code of the hub's address")

    def set_text(self, text: str) -> None:
        self.text = text
        self.matrix = qr_matrix(text) if text else []
        self.setToolTip(text)
        self.update()

    def module_px(self) -> int:
        return max(1, min(self.width(), self.height()) // len(self.matrix)) if self.matrix else 0

    def paintEvent(self, _event) -> None:
        p = QPainter(self)
        p.fillRect(self.rect(), QColor("white"))
        if not self.matrix:
            p.setPen(QColor("#777"))
            p.drawText(self.rect(), Qt.AlignmentFlag.AlignCenter, "no hub running")
            return
        px = self.module_px()
        for y, row in enumerate(self.matrix):
            for x, dark in enumerate(row):
                if dark:
                    p.fillRect(QRectF(x * px, y * px, px, px), QColor("black"))


class HubServerBox(QGroupBox):
    """Start/stop, address, QR code, invite codes; the page hands invite codes in through :meth:`add_code`."""

    message = Signal(str, str)  # text, banner kind

    def __init__(self, process: HubProcess, parent: QWidget | None = None):
        super().__init__("Serve this workspace to annotators", parent)
        self._proc = process
        row = QHBoxLayout(self)
        left = QVBoxLayout()
        controls = QHBoxLayout()
        self.lan_check = QCheckBox("on the network (HTTPS)")
        self.lan_check.setToolTip("Listen on every interface over HTTPS (--lan); unticked: this machine only")
        self.lan_check.setChecked(True)
        controls.addWidget(self.lan_check)
        controls.addWidget(QLabel("port"))
        self.port = QSpinBox()
        self.port.setRange(1024, 65535)
        self.port.setValue(8765)
        self.port.setAccessibleName("Port")
        controls.addWidget(self.port)
        self.start_button = QPushButton("Start the hub")
        self.start_button.clicked.connect(self.start)
        controls.addWidget(self.start_button)
        self.stop_button = QPushButton("Stop the hub")
        self.stop_button.setEnabled(False)
        self.stop_button.clicked.connect(process.stop)
        controls.addWidget(self.stop_button)
        controls.addStretch(1)
        left.addLayout(controls)
        self.address_label = QLabel("The hub is not running.")
        self.address_label.setStyleSheet(BIG)
        self.address_label.setTextInteractionFlags(Qt.TextInteractionFlag.TextSelectableByMouse)
        self.address_label.setWordWrap(True)
        left.addWidget(self.address_label)
        self.detail_label = QLabel("")
        self.detail_label.setWordWrap(True)
        self.detail_label.setTextInteractionFlags(Qt.TextInteractionFlag.TextSelectableByMouse)
        left.addWidget(self.detail_label)
        left.addWidget(QLabel("Invite codes given in this session (each works once):"))
        self.codes = QListWidget()
        self.codes.setAccessibleName("Invite codes given in this session")
        self.codes.setStyleSheet("QListWidget { font-size:16pt; font-family:monospace; }")
        self.codes.setMaximumHeight(130)
        left.addWidget(self.codes)
        row.addLayout(left, 1)
        self.qr = QrCode()
        row.addWidget(self.qr, 0, Qt.AlignmentFlag.AlignTop)
        process.started.connect(self._on_started)
        process.addressesChanged.connect(self._on_addresses)
        process.stopped.connect(self._on_stopped)
        self._set_running(process.running)
        if process.addresses:
            self._on_addresses(process.addresses)

    def start(self) -> None:
        self._proc.start(self.port.value(), self.lan_check.isChecked())

    def _set_running(self, on: bool) -> None:
        self.start_button.setEnabled(not on)
        self.stop_button.setEnabled(on)
        self.lan_check.setEnabled(not on)
        self.port.setEnabled(not on)

    def _on_started(self) -> None:
        self._set_running(True)
        self.address_label.setText("Starting the hub…")

    def _on_addresses(self, urls: list[str]) -> None:
        first = urls[0]
        self.address_label.setText(first)
        others = urls[1:]
        fp = self._proc.fingerprint
        self.detail_label.setText(
            ("Also: " + "  ".join(others) + "\n" if others else "")
            + (f"Certificate fingerprint (annotators compare it in the browser): {fp}" if fp else
               "This machine only: others on the network cannot reach it (tick 'on the network')."))
        self.qr.set_text(first)

    def _on_stopped(self, code: int, tail: str) -> None:
        self._set_running(False)
        self.qr.set_text("")
        self.address_label.setText("The hub is not running.")
        self.detail_label.setText("")
        if self._proc.asked_to_stop:
            self.message.emit("The hub stopped.", "info")
        else:
            self.message.emit(f"The hub stopped by itself (exit {code}):\n{tail}", "error")

    def add_code(self, name: str, role: str, code: str) -> None:
        self.codes.insertItem(0, f"{code}   {name} ({role})")
