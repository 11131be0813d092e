"""Validate: other people's examples one at a time. Keys: C correct, I incorrect (with the
corrected label; for QA the corrected answer selected in the example's context, Ctrl+U),
F flag (with a reason), S skip. Progress through the queue is shown."""

from __future__ import annotations

import html
from typing import TYPE_CHECKING

from PySide6.QtWidgets import (
    QComboBox,
    QFormLayout,
    QGroupBox,
    QLabel,
    QLineEdit,
    QProgressBar,
    QVBoxLayout,
    QWidget,
)

from dynadesk.errors import DynaDeskError
from dynadesk.gui.pages.base import DataPage
from dynadesk.gui.pages.meta_fields import MetaFieldsBox, missing_text
from dynadesk.gui.pages.scaffold import browser, button, hbox, hint, shortcuts
from dynadesk.gui.services.annotation import AnnotationService
from dynadesk.store.annotation import AnnotatedExample

if TYPE_CHECKING:
    from dynadesk.gui.services.context import Services


class ValidatePage(DataPage):
    title = "Validate"
    _svc: AnnotationService

    def build(self, lay: QVBoxLayout) -> None:
        self.queue: list[AnnotatedExample] = []
        self.skipped: set[str] = set()
        self.done = 0

        top = self.task_bar(self.reload, self._data, rounds=True)
        self.round_combo = QComboBox()
        self.round_combo.setAccessibleName("Round")
        self.round_combo.currentIndexChanged.connect(self._reload_queue)
        top.addWidget(self.round_combo)
        top.addStretch(1)
        self.progress_label = QLabel()
        top.addWidget(self.progress_label)
        self.progress = QProgressBar()
        self.progress.setMaximumWidth(220)
        top.addWidget(self.progress)

        self.view = browser("Example to validate")
        lay.addWidget(self.view, 1)

        box = QGroupBox("Your verdict")
        form = QFormLayout(box)
        self.label_combo = QComboBox()
        self.label_combo.setToolTip("The label this example should have had (for 'incorrect')")
        self.answer_edit = QLineEdit()
        self.answer_edit.setPlaceholderText("corrected answer: select it in the context above, then Ctrl+U")
        self.use_selection_button = button("Use selection  (Ctrl+U)", self.use_selection)
        row = hbox(self.label_combo, self.answer_edit, self.use_selection_button)
        row.setStretch(1, 1)
        form.addRow("Corrected label", row)
        self.reason_edit = QLineEdit()
        self.reason_edit.setPlaceholderText("why it is flagged (required for 'flag'), e.g. offensive, ambiguous")
        self.reason_edit.returnPressed.connect(lambda: self.vote("flagged"))
        form.addRow("Flag reason", self.reason_edit)
        self.correct_button = button("✔ Correct  (C)", lambda: self.vote("correct"))
        self.incorrect_button = button("✘ Incorrect  (I)", lambda: self.vote("incorrect"))
        self.flag_button = button("⚑ Flag  (F)", lambda: self.vote("flagged"))
        self.skip_button = button("Skip  (S)", self.skip)
        form.addRow(hbox(self.correct_button, self.incorrect_button, self.flag_button, self.skip_button))
        self.verdict_box = box
        self.meta_box = MetaFieldsBox("What the task asks with a verdict (* required)")
        lay.addWidget(self.meta_box)
        lay.addWidget(box)

        self.shortcuts_label = hint("Keys: C correct · I incorrect (with the corrected label) · F flag (type the "
                                    "reason, then Enter) · S skip · Ctrl+U use the selected text as the answer (QA)")
        lay.addWidget(self.shortcuts_label)

        shortcuts(self, [("C", lambda: self.vote("correct")), ("I", lambda: self.vote("incorrect")),
                         ("F", lambda: self.vote("flagged")), ("S", self.skip), ("Ctrl+U", self.use_selection)])
        self._svc.activeChanged.connect(lambda _n: self._reload_queue())
        self._svc.examplesChanged.connect(
            lambda t: self._reload_queue() if t == self.task_combo.currentText() else None)

    @property
    def current(self) -> AnnotatedExample | None:
        for ex in self.queue:
            if ex.uid not in self.skipped:
                return ex
        return None

    def reload(self) -> None:
        task = self.task_combo.currentText()
        if not task:
            return
        rounds = self.guard(self._svc.rounds, task) or []
        self.round_combo.blockSignals(True)
        self.round_combo.clear()
        for r in reversed(rounds):
            self.round_combo.addItem(f"round {r.number} ({r.status})", r.number)
        self.round_combo.blockSignals(False)
        t = self._data.task(task)
        self.meta_box.set_fields(t.validate_metadata)  # the task file's metadata.validate
        self.label_combo.clear()
        self.label_combo.addItems(list(t.labels))
        self.label_combo.setVisible(t.kind.chooses_labels)
        self.answer_edit.setVisible(not t.kind.chooses_labels)
        self.use_selection_button.setVisible(not t.kind.chooses_labels)
        self.done = 0
        self.skipped.clear()
        self._reload_queue()

    def _reload_queue(self) -> None:
        task = self.task_combo.currentText()
        number = self.round_combo.currentData()
        if not task or number is None:
            self.queue = []
            self._show()
            return
        if not self._svc.active:
            self.queue = []
            self._show("Choose an annotator in the toolbar to validate.")
            return
        self.queue = self.guard(self._svc.queue, task, number) or []
        self._show()

    def _show(self, empty: str | None = None) -> None:
        ex = self.current
        left = sum(1 for e in self.queue if e.uid not in self.skipped)
        total = self.done + left
        self.progress.setRange(0, max(1, total))
        self.progress.setValue(self.done)
        self.progress_label.setText(f"{self.done} done · {left} left" + (f" · {len(self.skipped)} skipped"
                                                                         if self.skipped else ""))
        self.verdict_box.setEnabled(ex is not None)
        self.meta_box.setEnabled(ex is not None)
        if ex is None:
            self.view.setHtml(f"<p><i>{html.escape(empty or 'Nothing left to validate here.')}</i></p>")
            return
        t = self._data.task(ex.task)
        rows = "".join(f"<p><b>{html.escape(k)}</b><br>{html.escape(v)}</p>" for k, v in ex.inputs.items())
        out = ex.model_output
        pred = out.get("label", out.get("answer", ""))
        verdict = ("<span style='color:#1b5e20'>fooled the model</span>" if ex.fooled
                   else "<span style='color:#8d6e00'>did not fool the model</span>")
        self.view.setHtml(
            f"{rows}<p><b>Claimed {t.kind.output_key}:</b> "
            f"{html.escape(str(ex.target))}</p>"
            f"<p><b>{html.escape(ex.model_name)}</b> said <b>{html.escape(str(pred))}</b> — {verdict}</p>"
            + (f"<p><b>Explanation:</b> {html.escape(ex.explanation)}</p>" if ex.explanation else "")
            + f"<p><small>by {html.escape(ex.annotator)} · round {ex.round} · "
              f"{len(ex.validations)} vote(s) so far</small></p>")
        if t.kind.chooses_labels:
            others = [lab for lab in t.labels if lab != ex.target]
            if others and self.label_combo.currentText() == ex.target:
                self.label_combo.setCurrentText(others[0])
        self.reason_edit.clear()
        self.answer_edit.clear()
        self.meta_box.clear()

    def vote(self, verdict: str) -> None:
        ex = self.current
        if ex is None or not self.verdict_box.isEnabled():
            return
        label, reason = None, ""
        if verdict == "incorrect":
            t = self._data.task(ex.task)
            if t.kind.chooses_labels:
                label = self.label_combo.currentText()
            else:
                text = self.answer_edit.text().strip()
                if not text:
                    self.banner.show_message(f"Select the corrected answer in the {t.span_of} above (Ctrl+U), "
                                             "then press I again.", "info")
                    self.answer_edit.setFocus()
                    return
                label = text  # the core checks it is a span of the context
        field = self.meta_box.missing(verdict)
        if field is not None:
            self.banner.show_message(missing_text(field) + f" Then press {verdict[0].upper()} again.", "info")
            return
        fields = self.meta_box.values(verdict)
        if verdict == "flagged":
            reason = self.reason_edit.text().strip()
            if not reason and not fields:
                self.banner.show_message("Type why you flag this example in “Flag reason”, then press Enter.",
                                         "info")
                self.reason_edit.setFocus()
                return
        try:
            _v, status = self._svc.validate(ex.uid, verdict, label, reason, fields)
        except DynaDeskError as exc:
            self.banner.error(str(exc))
            return
        self.done += 1
        self.banner.show_message(f"Recorded '{verdict}'. Example is now {status.status} "
                                 f"({status.correct} correct, {status.incorrect} incorrect, {status.flagged} flagged).",
                                 "ok")
        self.setFocus()
        self._reload_queue()

    def use_selection(self) -> None:
        """The text selected in the example view becomes the corrected answer (QA)."""
        ex = self.current
        if ex is None or self._data.task(ex.task).kind.chooses_labels:
            return
        selected = self.view.textCursor().selectedText().strip()
        if selected:
            self.answer_edit.setText(selected)
        else:
            self.banner.show_message("Select the corrected answer in the context above first, then Ctrl+U.", "info")

    def skip(self) -> None:
        ex = self.current
        if ex is not None:
            self.skipped.add(ex.uid)
            self._show()


def make(services: Services, parent: QWidget | None = None) -> ValidatePage:
    return ValidatePage(services.annotation, services.data, parent=parent)
