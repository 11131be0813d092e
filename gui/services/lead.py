"""The lead's review of a round in the app: the same table the hub's lead view reads
(:func:`dynadesk.hub.lead.round_table`) and adjudication as the lead's own vote
(:func:`dynadesk.annotation.validate`: an ``owner``'s vote decides an example at once). Both run on a
worker with their own store connection; an answer for a task or round the page has left is dropped."""

from __future__ import annotations

from typing import Any

from PySide6.QtCore import QObject, Signal

import dynadesk.annotation as ann
from dynadesk.errors import AnnotationError
from dynadesk.gui.services.workspace import WorkspaceService
from dynadesk.hub.lead import LEAD_ROLE, round_table


class LeadService(QObject):
    tableReady = Signal(object)  # round_table's dict
    adjudicated = Signal(str, object)  # example uid, ExampleStatus
    failed = Signal(str)

    def __init__(self, ws: WorkspaceService, parent: QObject | None = None):
        super().__init__(parent)
        self._ws = ws
        self.loading = False
        self._asked: tuple[str, int | None] | None = None

    def leads(self) -> list[str]:
        """The workspace's annotators who may adjudicate (role ``owner``)."""
        return [a.name for a in ann.list_annotators(self._ws.store) if a.role == LEAD_ROLE]

    def load(self, task: str, round_number: int | None = None) -> None:
        """Read the round's table off the GUI thread; ``tableReady`` follows (the newest request only)."""
        self._asked = (task, round_number)
        self.loading = True
        self._ws.run_with_store(round_table, task, round_number, on_result=self._on_table,
                                on_error=self._on_failed)

    def _on_table(self, table: dict[str, Any]) -> None:
        task, number = self._asked or ("", None)
        if table["task"] != task or (number is not None and table["round"] != number):
            return  # a late answer for a view the lead has left
        self.loading = False
        self.tableReady.emit(table)

    def _on_failed(self, message: str) -> None:
        self.loading = False
        self.failed.emit(message)

    def adjudicate(self, lead: str, uid: str, verdict: str, label: Any = None, reason: str = "") -> None:
        """Record the lead's decision on one example (a vote that decides it); ``adjudicated`` or ``failed``."""
        def job(store):
            if store.annotation.get_annotator(lead).role != LEAD_ROLE:
                raise AnnotationError(f"'{lead}' is an annotator, not a lead: choose an owner in the toolbar"
                                      " (dynadesk annotator add NAME --role owner) to decide disputed examples")
            _vote, status = ann.validate(store, uid, lead, verdict, label, reason)
            return uid, status

        self._ws.run_with_store(job, on_result=self._on_adjudicated, on_error=self.failed.emit)  # bound

    def _on_adjudicated(self, result: tuple[str, Any]) -> None:
        self.adjudicated.emit(*result)
