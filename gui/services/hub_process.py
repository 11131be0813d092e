"""Start and stop the LAN hub from the app: ``dynadesk hub serve`` over the open workspace as a child process
(:class:`QProcess`: its lines arrive as signals, the GUI thread never waits on it), with the addresses it prints.

The hub is the same program the command line runs; the app only starts it, reads the addresses from its
output ("on this machine: URL", "on the network: URL", the certificate's fingerprint) and stops it."""

from __future__ import annotations

import re
import sys

from PySide6.QtCore import QObject, QProcess, Signal

from dynadesk.gui.services.workspace import WorkspaceService

ADDRESS = re.compile(r"on (this machine|the network):\s+(\S+)")
FINGERPRINT = re.compile(r"fingerprint[^:]*:\s+(\S+)")
CLI = "from dynadesk.cli import main; main()"


class HubProcess(QObject):
    started = Signal()
    addressesChanged = Signal(list)  # every URL the hub printed, the network ones first
    stopped = Signal(int, str)  # exit code, the hub's last lines (why it stopped, when it failed)
    line = Signal(str)

    def __init__(self, ws: WorkspaceService, parent: QObject | None = None):
        super().__init__(parent)
        self._ws = ws
        self._proc: QProcess | None = None
        self.local: list[str] = []
        self.network: list[str] = []
        self.fingerprint = ""
        self.lines: list[str] = []
        self.asked_to_stop = False  # the end that follows was asked for (Stop), not a failure

    @property
    def running(self) -> bool:
        return self._proc is not None

    @property
    def addresses(self) -> list[str]:
        return self.network + self.local

    def start(self, port: int, lan: bool) -> None:
        """Serve this workspace on ``port`` (every interface over HTTPS with ``lan``, else loopback)."""
        if self._proc is not None:
            return
        if getattr(sys, "frozen", False):  # the one-folder build leaves the web stack out (packaging/dynadesk.spec)
            self.stopped.emit(-1, "this desktop build does not include the hub's web server: run"
                                  " 'dynadesk hub serve --lan' from a DynaDesk install on this workspace")
            return
        self.local, self.network, self.fingerprint, self.lines = [], [], "", []
        self.asked_to_stop = False
        proc = QProcess(self)
        proc.setProcessChannelMode(QProcess.ProcessChannelMode.MergedChannels)
        proc.readyReadStandardOutput.connect(self._read)
        proc.finished.connect(self._finished)
        proc.errorOccurred.connect(self._error)
        args = ["-c", CLI, "--home", str(self._ws.home), "hub", "serve", "--port", str(port)]
        self._proc = proc
        proc.start(sys.executable, [*args, "--lan"] if lan else args)
        self.started.emit()

    def _read(self) -> None:
        if self._proc is None:
            return
        text = bytes(self._proc.readAllStandardOutput().data()).decode("utf-8", "replace")
        changed = False
        for raw in text.splitlines():
            line = raw.rstrip()
            if not line:
                continue
            self.lines = [*self.lines[-40:], line]
            self.line.emit(line)
            m = ADDRESS.search(line)
            if m:
                (self.network if m.group(1) == "the network" else self.local).append(m.group(2))
                changed = True
            f = FINGERPRINT.search(line)
            if f:
                self.fingerprint = f.group(1)
        if changed:
            self.addressesChanged.emit(self.addresses)

    def _finished(self, code: int, _status: object) -> None:
        self._read()
        self._proc = None
        self.stopped.emit(int(code), "\n".join(self.lines[-6:]))

    def _error(self, error: QProcess.ProcessError) -> None:
        if error == QProcess.ProcessError.FailedToStart and self._proc is not None:
            self._proc = None
            self.stopped.emit(-1, f"could not start {sys.executable}: {error.name}")

    def stop(self) -> None:
        """Ask the hub to stop (SIGTERM: it finishes its requests); ``stopped`` follows."""
        if self._proc is not None:
            self.asked_to_stop = True
            self._proc.terminate()

    def close(self) -> None:
        """On quitting the app: the hub goes with it (a hub left running would hold the port)."""
        proc = self._proc
        if proc is None:
            return
        proc.terminate()
        if not proc.waitForFinished(5000):
            proc.kill()
            proc.waitForFinished(2000)
