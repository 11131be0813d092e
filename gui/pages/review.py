"""Lead's review: every example of a round in one filterable, sortable table (author, state, votes, the model's
answer, fooled / verified), the selected one opened in place below it, adjudication of disputed examples by the
lead (an ``owner`` annotator: the lead's vote decides), and agreement per annotator and per label. The same table
the hub's lead view reads (:mod:`dynadesk.hub.lead`); every read and write runs on a worker."""

from __future__ import annotations

from functools import partial
from typing import TYPE_CHECKING, Any

from PySide6.QtCore import Qt
from PySide6.QtWidgets import (
    QComboBox,
    QGroupBox,
    QHBoxLayout,
    QLabel,
    QLineEdit,
    QPushButton,
    QSplitter,
    QTextBrowser,
    QVBoxLayout,
    QWidget,
)

from dynadesk.gui.pages.base import Page
from dynadesk.gui.pages.scaffold import named_table, pane, shortcuts
from dynadesk.gui.pages.tables import fill, fit
from dynadesk.gui.services.annotation import AnnotationService
from dynadesk.gui.services.data import DataService
from dynadesk.gui.services.lead import LeadService

if TYPE_CHECKING:
    from dynadesk.gui.services.context import Services

COLUMNS = ["author", "text", "label", "model answer", "fooled", "verified fooled", "state", "correct", "incorrect",
           "flagged"]
STATE_COL = COLUMNS.index("state")
ALL_STATES = "every state"


def pct(x: float) -> str:
    return f"{100 * x:.0f}%"


def _text(inputs: dict[str, Any]) -> str:
    return " | ".join(str(v) for v in inputs.values())


class ReviewPage(Page):
    title = "Lead's review"

    def __init__(self, lead: LeadService, annotation: AnnotationService, data: DataService,
                 parent: QWidget | None = None):
        super().__init__(parent)
        self._svc, self._ann, self._data = lead, annotation, data
        self.data: dict[str, Any] | None = None
        self.task = ""
        lay = self.body()
        top = self.task_bar(self._on_task, data, rounds=True)
        top.addWidget(QLabel("Round"))
        self.round_combo = QComboBox()
        self.round_combo.setAccessibleName("Round")
        self.round_combo.activated.connect(lambda _i: self.reload())
        top.addWidget(self.round_combo)
        self.filter_edit = QLineEdit()
        self.filter_edit.setPlaceholderText("filter: author, text, label, answer…")
        self.filter_edit.setAccessibleName("Filter examples")
        self.filter_edit.textChanged.connect(self.apply_filter)
        top.addWidget(self.filter_edit, 1)
        self.state_combo = QComboBox()
        self.state_combo.setAccessibleName("State")
        self.state_combo.addItem(ALL_STATES)
        self.state_combo.currentIndexChanged.connect(self.apply_filter)
        top.addWidget(self.state_combo)
        self.summary = QLabel("")
        lay.addWidget(self.summary)

        split = QSplitter(Qt.Orientation.Vertical)
        self.examples_table = named_table(COLUMNS, "Examples of the round", self._open_selected, sortable=True)
        split.addWidget(self.examples_table)
        lower, ll = pane(horizontal=True)
        ll.addWidget(self._detail_box(), 3)
        agree, al = pane()
        al.addWidget(QLabel("<b>Agreement per annotator</b> (votes matching the decision)"))
        self.people_table = named_table(["annotator", "agreed", "votes", "rate"], "Agreement per annotator")
        al.addWidget(self.people_table)
        al.addWidget(QLabel("<b>Per label</b> (share of 'correct' votes)"))
        self.labels_table = named_table(["label", "correct", "votes", "rate"], "Agreement per label")
        al.addWidget(self.labels_table)
        ll.addWidget(agree, 2)
        split.addWidget(lower)
        split.setSizes([420, 300])
        lay.addWidget(split, 1)

        self.follow(lead, tableReady=self._show, failed=self._on_failed, adjudicated=self._on_adjudicated)
        annotation.examplesChanged.connect(self._on_examples_changed)
        self.refresh()

    def _detail_box(self) -> QGroupBox:
        box = QGroupBox("Example")
        dl = QVBoxLayout(box)
        self.detail = QTextBrowser()
        self.detail.setAccessibleName("The selected example")
        self.detail.setMinimumHeight(120)
        dl.addWidget(self.detail, 1)
        row = QHBoxLayout()
        self.correct_button = QPushButton("Decide: correct (Ctrl+1)")
        self.correct_button.clicked.connect(lambda: self.adjudicate("correct"))
        row.addWidget(self.correct_button)
        self.incorrect_button = QPushButton("Decide: not correct (Ctrl+2)")
        self.incorrect_button.clicked.connect(lambda: self.adjudicate("not correct"))
        row.addWidget(self.incorrect_button)
        self.label_combo = QComboBox()
        self.label_combo.setAccessibleName("Corrected label")
        self.label_combo.setPlaceholderText("corrected label (optional)")
        row.addWidget(self.label_combo)
        self.reason_edit = QLineEdit()
        self.reason_edit.setPlaceholderText("reason (without a corrected label)")
        self.reason_edit.setMinimumWidth(self.reason_edit.fontMetrics().horizontalAdvance(
            self.reason_edit.placeholderText()) + 16)
        self.reason_edit.setAccessibleName("Reason")
        row.addWidget(self.reason_edit, 1)
        dl.addLayout(row)
        shortcuts(self, [(key, partial(self.adjudicate, verdict))
                         for key, verdict in (("Ctrl+1", "correct"), ("Ctrl+2", "not correct"))])
        self._set_decidable(False)
        return box

    # ----------------------------------------------------------------- reading
    def refresh(self) -> None:
        self.fill_tasks()
        self.reload()

    def _on_task(self, _i: int) -> None:
        self.round_combo.clear()
        self.reload()

    @property
    def loading(self) -> bool:
        return self._svc.loading

    def reload(self) -> None:
        task = self.task_combo.currentText()
        if not task:
            return
        if task != self.task or self.round_combo.count() == 0:
            self.task = task
            self.round_combo.clear()
            for rnd in self.guard(self._ann.rounds, task) or []:
                self.round_combo.insertItem(0, f"round {rnd.number} ({rnd.status})", rnd.number)
            self.round_combo.setCurrentIndex(0)
        if self.round_combo.count() == 0:
            self.data = None
            self.summary.setText(f"No round of {task} yet: open one on the Rounds page.")
            fill(self.examples_table, [])
            fill(self.people_table, [])
            fill(self.labels_table, [])
            self._open_selected()
            return
        self._svc.load(task, self.round_combo.currentData())

    def _show(self, data: dict[str, Any]) -> None:
        selected = self.selected_uid()
        self.data = data
        rows = data["examples"]
        by_state: dict[str, int] = {}
        for r in rows:
            by_state[r["state"]] = by_state.get(r["state"], 0) + 1
        self.summary.setText(f"{data['task']} round {data['round']}: {len(rows)} examples · "
                             + " · ".join(f"{n} {s}" for s, n in sorted(by_state.items()))
                             + f" · {data['votes_needed']} votes decide")
        state = self.state_combo.currentText()
        self.state_combo.blockSignals(True)
        self.state_combo.clear()
        self.state_combo.addItems([ALL_STATES, *sorted(by_state)])
        self.state_combo.setCurrentText(state if state in by_state else ALL_STATES)
        self.state_combo.blockSignals(False)
        self.examples_table.setSortingEnabled(False)  # the rows keep their order while their uids are set
        fill(self.examples_table, [
            [r["author"], _text(r["inputs"]), str(r["target"]), str(r["model_answer"]),
             "yes" if r["fooled"] else "no", "yes" if r["verified_fooled"] else "no", r["state"],
             r["votes"]["correct"], r["votes"]["incorrect"], r["votes"]["flagged"]] for r in rows],
            numeric={7, 8, 9})
        for i, r in enumerate(rows):
            self.examples_table.item(i, 0).setData(Qt.ItemDataRole.UserRole, r["uid"])
            self.examples_table.item(i, 1).setToolTip(_text(r["inputs"]))
        self.examples_table.setSortingEnabled(True)
        fit(self.examples_table)
        fill(self.people_table, [[a["annotator"], a["agreed"], a["votes"], pct(a["rate"])]
                                 for a in data["agreement"]], numeric={1, 2, 3})
        fill(self.labels_table, [[lb["label"], lb["correct"], lb["votes"], pct(lb["rate"])]
                                 for lb in data["labels"]], numeric={1, 2, 3})
        task = self._data.task(data["task"])
        self.label_combo.clear()
        self.label_combo.setEditable(not task.labels)  # span answers are typed
        self.label_combo.addItems(list(task.labels))
        self.label_combo.setCurrentIndex(-1)  # nothing preselected: a corrected label is only the one chosen
        self.apply_filter()
        if selected:
            self.select_example(selected)
        self._open_selected()

    def apply_filter(self) -> None:
        """Hide the rows that do not match the text filter (any column) and the state box."""
        words = self.filter_edit.text().strip().lower().split()
        state = self.state_combo.currentText()
        t = self.examples_table
        for r in range(t.rowCount()):
            cells = " ".join(t.item(r, c).text().lower() for c in range(t.columnCount()))
            keep = all(w in cells for w in words) and state in (ALL_STATES, t.item(r, STATE_COL).text())
            t.setRowHidden(r, not keep)

    def visible_rows(self) -> list[list[str]]:
        t = self.examples_table
        return [[t.item(r, c).text() for c in range(t.columnCount())] for r in range(t.rowCount())
                if not t.isRowHidden(r)]

    def selected_uid(self) -> str | None:
        rows = self.examples_table.selectionModel().selectedRows()
        return self.examples_table.item(rows[0].row(), 0).data(Qt.ItemDataRole.UserRole) if rows else None

    def select_example(self, uid: str) -> bool:
        t = self.examples_table
        for r in range(t.rowCount()):
            if t.item(r, 0).data(Qt.ItemDataRole.UserRole) == uid:
                t.selectRow(r)
                return True
        return False

    def _row(self, uid: str | None) -> dict[str, Any] | None:
        rows = self.data["examples"] if self.data else []
        return next((r for r in rows if r["uid"] == uid), None)

    def _open_selected(self) -> None:
        """The selected example in full, in place: inputs, labels, the model's answer and probabilities, votes."""
        r = self._row(self.selected_uid())
        if r is None:
            self.detail.setHtml("<i>Select an example to read it in full.</i>")
            self._set_decidable(False)
            return
        from html import escape

        inputs = "".join(f"<p><b>{escape(k)}</b>: {escape(str(v))}</p>" for k, v in r["inputs"].items())
        probs = ", ".join(f"{k} {100 * float(p):.0f}%" for k, p in (r["probs"] or {}).items())
        votes = "".join(f"<li>{escape(v['annotator'])}{' (lead)' if v['lead'] else ''}: {escape(v['verdict'])}"
                        + (f" → {escape(str(v['label']))}" if v["label"] is not None else "")
                        + (f" — {escape(v['reason'])}" if v["reason"] else "") + "</li>" for v in r["validations"])
        self.detail.setHtml(
            f"{inputs}<p>written by <b>{escape(r['author'])}</b> with the label <b>{escape(str(r['target']))}</b>;"
            f" {escape(r['model'])} answered <b>{escape(str(r['model_answer']))}</b>"
            + (f" ({escape(probs)})" if probs else "") + (" — fooled" if r["fooled"] else "") + "</p>"
            + (f"<p>explanation: {escape(r['explanation'])}</p>" if r["explanation"] else "")
            + f"<p>state: <b>{escape(r['state'])}</b></p>" + (f"<ul>{votes}</ul>" if votes else "<p>no votes yet</p>"))
        self._set_decidable(not r["by_lead"] and r["state"] not in ("confirmed", "rejected"))

    def _set_decidable(self, on: bool) -> None:
        for w in (self.correct_button, self.incorrect_button, self.label_combo, self.reason_edit):
            w.setEnabled(on)

    # ------------------------------------------------------------- deciding
    def adjudicate(self, decision: str) -> None:
        """The lead decides the selected example: ``correct``, or ``not correct`` with the corrected label chosen
        (an ``incorrect`` vote) or, without one, a reason (a ``flagged`` vote)."""
        uid = self.selected_uid()
        if uid is None or not self.correct_button.isEnabled():
            return
        lead = self._ann.active
        if not lead or lead not in (self.guard(self._svc.leads) or []):
            self.banner.error(f"the active annotator ({lead or 'none'}) is not a lead: choose an owner in the"
                              " toolbar, or add one (dynadesk annotator add NAME --role owner)")
            return
        label = self.label_combo.currentText().strip() if self.label_combo.currentIndex() >= 0 or \
            self.label_combo.isEditable() else ""
        reason = self.reason_edit.text().strip()
        if decision == "correct":
            self._svc.adjudicate(lead, uid, "correct")
        elif label:
            self._svc.adjudicate(lead, uid, "incorrect", label=label, reason=reason)
        elif reason:
            self._svc.adjudicate(lead, uid, "flagged", reason=reason)
        else:
            self.banner.error("to decide 'not correct', choose the corrected label or write a reason")
            return
        self.banner.clear()

    def _on_adjudicated(self, uid: str, status: Any) -> None:
        self.banner.show_message(f"Decided by the lead: {status.status.replace('_', ' ')}.", "ok")
        self.reason_edit.clear()
        self._ann.examplesChanged.emit(self.task)

    def _on_examples_changed(self, task: str) -> None:
        if task == self.task:
            self.reload()

    def _on_failed(self, message: str) -> None:
        self.banner.error(message)


def make(services: Services, parent: QWidget | None = None) -> ReviewPage:
    return ReviewPage(LeadService(services.ws), services.annotation, services.data, parent=parent)
