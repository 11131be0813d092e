"""Status-bar facts that need I/O: the Docker daemon and the sync queue, checked off the UI thread."""

from __future__ import annotations

import threading

from PySide6.QtCore import QObject, QTimer, Signal

from dynadesk.gui.services.workspace import WorkspaceService


def probe_docker(timeout: float = 3.0) -> tuple[bool, str]:
    """``(answers, detail)`` from the one daemon check (CLI, GUI and demo); runs on a probe thread."""
    from dynadesk.orchestration.daemon import daemon_status

    status = daemon_status(timeout)
    return status.ok, status.detail


class StatusService(QObject):
    """The Docker probe runs on a daemon thread (not the pool): a hanging daemon socket must
    neither block the UI nor keep the application from quitting."""

    dockerChecked = Signal(bool, str)
    queueLength = Signal(int)  # -1 = the sync area is not available

    def __init__(self, ws: WorkspaceService, interval_ms: int = 30_000, parent: QObject | None = None):
        super().__init__(parent)
        self._ws = ws
        self._probe: threading.Thread | None = None
        self._closed = False
        self.docker_ok: bool | None = None
        self.docker_detail = "checking…"
        self._timer = QTimer(self)
        self._timer.setInterval(interval_ms)
        self._timer.timeout.connect(self.refresh)
        self._probed.connect(self._on_docker)

    def start(self, delay_ms: int = 0) -> None:
        """Begin periodic checks; ``delay_ms`` lets the first paint happen before the docker SDK loads."""
        self.refresh_queue()
        QTimer.singleShot(delay_ms, self.refresh)
        self._timer.start()

    def stop(self) -> None:
        self._closed = True
        self._timer.stop()

    def refresh(self) -> None:
        self.refresh_queue()
        if self._closed or (self._probe is not None and self._probe.is_alive()):
            return
        self._probe = threading.Thread(target=self._run_probe, name="docker-probe", daemon=True)
        self._probe.start()

    def _run_probe(self) -> None:
        result = probe_docker()
        try:
            self._probed.emit(*result)  # queued to the UI thread
        except RuntimeError:  # the application is gone
            pass

    _probed = Signal(bool, str)

    def _on_docker(self, ok: bool, detail: str) -> None:
        self.docker_ok, self.docker_detail = ok, detail
        self.dockerChecked.emit(ok, detail)

    def refresh_queue(self) -> None:
        self.queueLength.emit(self.queue_length())

    def queue_length(self) -> int:
        """Bundles waiting to be sent; -1 while the bundles area is not installed."""
        repo = getattr(self._ws.store, "bundles", None)
        if repo is None:
            return -1
        return int(repo.counts().get("queued", 0))
