"""Hub: the lead's live view of the LAN hub (``dynadesk hub serve``): who is connected, examples and
votes per person, MER and vMER per round and target model; invite people (a one-time code) and revoke them.
The page polls the store on a timer while it is shown; each read runs on a worker."""

from __future__ import annotations

from typing import TYPE_CHECKING

from PySide6.QtCore import Qt, QTimer
from PySide6.QtWidgets import (
    QComboBox,
    QHBoxLayout,
    QLabel,
    QLineEdit,
    QSplitter,
    QWidget,
)

from dynadesk.gui.pages.base import Page
from dynadesk.gui.pages.hub_server import HubServerBox
from dynadesk.gui.pages.scaffold import boxed, button
from dynadesk.gui.pages.tables import fill, table
from dynadesk.gui.services.hub import HubService
from dynadesk.gui.services.hub_process import HubProcess
from dynadesk.store.hub import HUB_ROLES

if TYPE_CHECKING:
    from dynadesk.gui.services.context import Services

POLL_MS = 2000


def pct(x: float | None) -> str:
    return "—" if x is None else f"{100 * x:.1f}%"


class HubPage(Page):
    title = "Hub"

    def __init__(self, service: HubService, process: HubProcess, parent: QWidget | None = None,
                 poll_ms: int = POLL_MS):
        super().__init__(parent)
        self._svc = service
        self.process = process
        self.overview = None
        lay = self.body()
        hint = QLabel("Annotators join from a browser (or a phone: scan the code) while the hub runs on this"
                      " workspace — started here or with <code>dynadesk hub serve --lan</code>. This view follows"
                      " the workspace database as they work.")
        hint.setWordWrap(True)
        lay.addWidget(hint)
        self.server = HubServerBox(process)
        self.server.message.connect(self.banner.show_message)
        lay.addWidget(self.server)
        self.summary = QLabel("reading…")
        lay.addWidget(self.summary)
        split = QSplitter(Qt.Orientation.Vertical)
        self.people_table = table(["person", "role", "connected", "last seen", "sessions", "examples", "votes"])
        split.addWidget(boxed("People", self.people_table))
        self.targets_table = table(["task", "round", "status", "target", "examples", "fooled", "verified fooled",
                                    "MER", "vMER"])
        split.addWidget(boxed("Rounds and target models", self.targets_table))
        lay.addWidget(split, 1)
        lay.addLayout(self._invite_row())

        self.follow(service, overviewReady=self._show, failed=self.banner.error, invited=self._on_invited,
                    revoked=self._on_revoked)
        self.timer = QTimer(self)
        self.timer.setInterval(poll_ms)
        self.timer.timeout.connect(self._svc.refresh)
        self.refresh()

    def _invite_row(self) -> QHBoxLayout:
        """Invite a person with a role (a one-time code shows up beside it), or revoke the selected one."""
        row = QHBoxLayout()
        row.addWidget(QLabel("Invite"))
        self.invite_name = QLineEdit()
        self.invite_name.setPlaceholderText("name")
        self.invite_name.setAccessibleName("Name to invite")
        row.addWidget(self.invite_name)
        self.invite_role = QComboBox()
        self.invite_role.addItems(list(HUB_ROLES))
        self.invite_role.setAccessibleName("Hub role")
        row.addWidget(self.invite_role)
        self.invite_button = button("Invite", self.invite)
        row.addWidget(self.invite_button)
        self.code = QLineEdit()
        self.code.setReadOnly(True)
        self.code.setPlaceholderText("one-time code appears here")
        self.code.setAccessibleName("One-time invite code")
        row.addWidget(self.code, 1)
        self.revoke_button = button("Revoke selected", self.revoke_selected)
        row.addWidget(self.revoke_button)
        return row

    def refresh(self) -> None:
        self._svc.refresh()

    def showEvent(self, event) -> None:
        super().showEvent(event)
        self.timer.start()

    def hideEvent(self, event) -> None:
        self.timer.stop()
        super().hideEvent(event)

    def shutdown(self) -> None:
        self.timer.stop()
        self.process.close()

    def _show(self, ov) -> None:
        self.overview = ov
        self.summary.setText(f"{ov.connected} connected · {len(ov.people)} invited · updated {ov.at[11:19]} UTC")
        fill(self.people_table, [[p.name, p.role + (" (revoked)" if p.revoked else ""),
                                  "yes" if p.connected else "no", (p.last_seen or "—")[:19].replace("T", " "),
                                  p.sessions, p.examples, p.votes] for p in ov.people], numeric={4, 5, 6})
        fill(self.targets_table, [[t.task, t.round, t.status, t.model, t.collected, t.fooled, t.verified_fooled,
                                   pct(t.mer), pct(t.vmer)] for t in ov.targets], numeric={1, 4, 5, 6, 7, 8})

    def invite(self) -> None:
        name = self.invite_name.text().strip()
        if not name:
            self.banner.error("type the name of the person to invite")
            return
        self.banner.clear()
        self._svc.invite(name, self.invite_role.currentText())

    def _on_invited(self, inv) -> None:
        self.code.setText(inv.code)
        self.server.add_code(inv.name, inv.role, inv.code)
        self.banner.show_message(f"Give {inv.name} ({inv.role}) this one-time code: {inv.code}"
                                 f" (valid until {inv.expires_at[:16].replace('T', ' ')} UTC).", "ok")
        self._svc.refresh()

    def selected_person(self) -> str | None:
        rows = self.people_table.selectionModel().selectedRows()
        return self.people_table.item(rows[0].row(), 0).text() if rows else None

    def revoke_selected(self) -> None:
        name = self.selected_person()
        if name is None:
            self.banner.error("select a person to revoke")
            return
        self._svc.revoke(name)

    def _on_revoked(self, name: str, n: int) -> None:
        self.banner.show_message(f"Revoked {name}: {n} live session(s) ended.", "ok")
        self._svc.refresh()


def make(services: Services, parent: QWidget | None = None) -> HubPage:
    return HubPage(services.hub, HubProcess(services.ws), parent=parent)
