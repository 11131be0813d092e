"""Status-bar facts that need I/O: the Docker daemon and the sync queue, checked off the UI thread."""

from __future__ import annotations

from PySide6.QtCore import QObject, QTimer, Signal

from dynadesk.gui.services.workspace import WorkspaceService
from dynadesk.gui.workers import Worker, start


def probe_docker(timeout: float = 3.0) -> tuple[bool, str]:
    """``(answers, detail)``; runs on a pool thread (``import docker`` is slow and ping may block)."""
    try:
        import docker

        client = docker.from_env(timeout=timeout)
        client.ping()
        version = client.version().get("Version", "?")
        client.close()
        return True, f"Docker {version}"
    except Exception as exc:  # noqa: BLE001 - any failure means "no usable daemon"; the detail is shown
        return False, str(exc).splitlines()[0][:200] if str(exc) else type(exc).__name__


class StatusService(QObject):
    dockerChecked = Signal(bool, str)
    queueLength = Signal(int)  # -1 = the sync area is not available

    def __init__(self, ws: WorkspaceService, interval_ms: int = 30_000, parent: QObject | None = None):
        super().__init__(parent)
        self._ws = ws
        self._worker: Worker | None = None
        self.docker_ok: bool | None = None
        self.docker_detail = "checking…"
        self._timer = QTimer(self)
        self._timer.setInterval(interval_ms)
        self._timer.timeout.connect(self.refresh)

    def start(self) -> None:
        self.refresh()
        self._timer.start()

    def stop(self) -> None:
        self._timer.stop()

    def refresh(self) -> None:
        self.refresh_queue()
        if self._worker is not None:
            return
        worker = Worker(lambda ctx: probe_docker())
        worker.signals.finished.connect(self._on_docker)
        worker.signals.done.connect(self._clear)
        self._worker = worker
        start(worker)

    def _clear(self) -> None:
        self._worker = None

    def _on_docker(self, result: tuple[bool, str]) -> None:
        self.docker_ok, self.docker_detail = result
        self.dockerChecked.emit(*result)

    def refresh_queue(self) -> None:
        self.queueLength.emit(self.queue_length())

    def queue_length(self) -> int:
        """Bundles waiting to be sent; -1 while the bundles area is not installed."""
        repo = getattr(self._ws.store, "bundles", None)
        if repo is None:
            return -1
        for name in ("queue_length", "pending_count"):
            fn = getattr(repo, name, None)
            if callable(fn):
                return int(fn())
        lister = getattr(repo, "queue", None) or getattr(repo, "list", None)
        if callable(lister):
            try:
                items = lister()
            except TypeError:
                return -1
            return sum(1 for b in items if getattr(b, "state", getattr(b, "status", "")) in ("queued", "pending",
                                                                                              "failed"))
        return -1
