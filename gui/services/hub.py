"""The lead's view of the LAN hub: overview reads, invites and revocations, each on a worker thread with
its own store connection (the page polls; the GUI thread never waits on the database)."""

from __future__ import annotations

from PySide6.QtCore import QObject, Signal

from dynadesk.gui.services.workspace import WorkspaceService
from dynadesk.hub import identity
from dynadesk.hub.overview import overview


class HubService(QObject):
    overviewReady = Signal(object)  # dynadesk.hub.overview.Overview
    invited = Signal(object)  # identity.Invite (its one-time code)
    revoked = Signal(str, int)  # name, live sessions ended
    failed = Signal(str)

    def __init__(self, ws: WorkspaceService, parent: QObject | None = None):
        super().__init__(parent)
        self._ws = ws
        self.polling = False  # one overview read at a time: a slow read skips ticks instead of piling up
        self.polls = 0

    def refresh(self) -> bool:
        """Start one overview read unless one is running; True when started."""
        if self.polling:
            return False
        self.polling = True
        self.polls += 1
        self._ws.run_with_store(overview, on_result=self.overviewReady.emit, on_error=self.failed.emit,
                                on_done=self._done)
        return True

    def _done(self) -> None:
        self.polling = False

    def invite(self, name: str, role: str) -> None:
        self._ws.run_with_store(identity.invite, name, role, on_result=self.invited.emit, on_error=self.failed.emit)

    def revoke(self, name: str) -> None:
        self._ws.run_with_store(identity.revoke, name, on_result=lambda n: self.revoked.emit(name, int(n)),
                                on_error=self.failed.emit)
