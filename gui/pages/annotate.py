"""Annotate: the Dynabench "create" screen, built for speed.

Type the inputs, pick the label you claim is right (Ctrl+1–9 anywhere, 1–9 when no
text field has focus) or, for QA, select the answer in the context ("Use selection",
Ctrl+U), then Ctrl+Enter to submit. The round's target model answers; the example you
submitted is shown with the verdict and the model's probabilities. Tab moves through
the form only. A session tally per task (examples, fooled, model error rate) and a timer run at
the top; the round's models are loaded in the background as soon as the page shows it.
"""

from __future__ import annotations

from functools import partial
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from dynadesk.annotation.create import Context
    from dynadesk.gui.services.context import Services

import html

from PySide6.QtCore import QElapsedTimer, Qt, QTimer
from PySide6.QtWidgets import (
    QButtonGroup,
    QFormLayout,
    QGroupBox,
    QHBoxLayout,
    QLabel,
    QLineEdit,
    QPlainTextEdit,
    QPushButton,
    QVBoxLayout,
    QWidget,
)

from dynadesk.annotation.create import check_target
from dynadesk.errors import DynaDeskError
from dynadesk.gui.pages.base import Banner, DataPage
from dynadesk.gui.pages.meta_fields import MetaFieldsBox, missing_text
from dynadesk.gui.pages.scaffold import browser, button, hbox, hint, input_edit, prediction_view, shortcuts
from dynadesk.gui.services.annotation import AnnotationService
from dynadesk.store.annotation import AnnotatedExample
from dynadesk.tasks import Task

SHORTCUTS = ("Keys: Ctrl+1–9 choose the label (1–9 outside a text field) · Ctrl+U use the selected text as the "
             "answer (QA) · Ctrl+Enter submit · Tab / Shift+Tab move through the form")
LABEL_BUTTON_STYLE = ("QPushButton { padding:6px 14px; border:1px solid #9e9e9e; border-radius:4px; }"
                      "QPushButton:checked { background:#1565c0; color:white; font-weight:bold;"
                      " border:2px solid #0d47a1; }")
LABEL_TITLE = "Your label: the correct one (the model should get it wrong)"
SPAN_TITLE = "Your answer: select it in the context (the model should get it wrong)"


class SessionTally:
    """Counts of this sitting (not the database): what the annotator sees while working."""

    def __init__(self) -> None:
        self.examples = 0
        self.fooled = 0

    def add(self, fooled: bool) -> None:
        self.examples += 1
        self.fooled += int(fooled)

    @property
    def mer(self) -> float | None:
        return self.fooled / self.examples if self.examples else None

    def text(self) -> str:
        mer = "—" if self.mer is None else f"{100 * self.mer:.0f}%"
        noun = "example" if self.examples == 1 else "examples"
        return f"{self.examples} {noun} · {self.fooled} fooled · MER {mer}"


class AnnotatePage(DataPage):
    title = "Annotate"
    _svc: AnnotationService

    def build(self, lay: QVBoxLayout) -> None:
        self.task: Task | None = None
        self.context: Context | None = None
        self.tallies: dict[str, SessionTally] = {}  # per task: a QA tally never shows sentiment's MER
        self.tally = SessionTally()
        self.inputs: dict[str, QPlainTextEdit] = {}

        top = self.task_bar(self._on_task, self._data, rounds=True)
        self.round_label = QLabel()
        top.addWidget(self.round_label, 1)
        self.tally_label = QLabel(self.tally.text())
        self.tally_label.setStyleSheet("font-weight:bold")
        top.addWidget(self.tally_label)
        self.timer_label = QLabel("0:00")
        self.timer_label.setToolTip("Time on this example")
        self.timer_label.setMinimumWidth(48)
        top.addWidget(self.timer_label)

        lay.addWidget(self._context_box())

        self.form_box = QGroupBox("Your example")
        self.form = QFormLayout(self.form_box)
        lay.addWidget(self.form_box)

        lay.addWidget(self._target_box())
        self.meta_box = MetaFieldsBox("What the task asks with each example (* required)")
        lay.addWidget(self.meta_box)

        lay.addLayout(self._submit_row())

        self.shortcuts_label = hint(SHORTCUTS)
        lay.addWidget(self.shortcuts_label)

        lay.addWidget(self._last_example_box())
        lay.addStretch(1)
        shortcuts(self, [("Ctrl+Return", self.submit), ("Ctrl+Enter", self.submit), ("Ctrl+U", self.use_selection)]
                  + [(key, partial(self.choose, i)) for i in range(9) for key in (str(i + 1), f"Ctrl+{i + 1}")])

        self.clock = QElapsedTimer()
        self._tick = QTimer(self)
        self._tick.setInterval(1000)
        self._tick.timeout.connect(self._show_time)

        # bound methods, not lambdas, for the model's state: Qt drops these connections when the page is destroyed,
        # so a model that finishes loading after its window closed never reaches a deleted widget
        self.follow(self._svc, submitted=self._on_submitted, submitFailed=self._on_failed, draftReady=self._on_draft,
                    draftFailed=self._on_failed, modelLoading=self._on_model_loading, modelReady=self._on_model_ready,
                    modelFailed=self._on_model_failed, activeChanged=lambda _n: self.refresh(),
                    roundsChanged=lambda t: self._on_task() if self.task and t == self.task.name else None)
        self.model_states: dict[str, str] = {}

    # ----------------------------------------------------------- building
    def _context_box(self) -> QGroupBox:
        """The pooled context the example is written about (context tasks), and "Another context"."""
        self.context_box = QGroupBox("Context")
        cl = QVBoxLayout(self.context_box)
        self.context_view = browser("Context")
        self.context_view.setMaximumHeight(140)
        cl.addWidget(self.context_view)
        self.new_context_button = button("Another context", self.load_context)
        cl.addWidget(self.new_context_button, 0, Qt.AlignmentFlag.AlignRight)
        return self.context_box

    def _target_box(self) -> QGroupBox:
        """The label buttons (filled per task) or, for a span task, the answer field and "Use selection"."""
        self.target_box = QGroupBox(LABEL_TITLE)
        self.target_box.setStyleSheet(LABEL_BUTTON_STYLE)
        self.target_layout = QHBoxLayout(self.target_box)
        self.target_group = QButtonGroup(self)
        self.target_group.setExclusive(True)
        self.answer_edit = QLineEdit()
        self.answer_edit.setPlaceholderText("the answer: select it in the context, then “Use selection” (Ctrl+U)")
        self.use_selection_button = button("Use selection  (Ctrl+U)", self.use_selection,
                                           tooltip="Take the text selected in the context as the answer span")
        return self.target_box

    def _submit_row(self) -> QHBoxLayout:
        """The optional explanation, the assistant's draft (shown when a target can draft) and Submit."""
        self.explanation = QLineEdit()
        self.explanation.setPlaceholderText("Optional: why is the model likely to get this wrong?")
        self.draft: object | None = None  # the generative assistant's draft this example is written from
        self.suggest_button = button("Suggest a draft", self.suggest_draft,  # opt-in: shown when a target can draft
                                     tooltip="The round's generative target drafts the example; edit it (its use is "
                                     "recorded)")
        self.submit_button = button("Submit  (Ctrl+Enter)", self.submit)
        self.submit_button.setDefault(True)
        row = hbox(self.explanation, self.suggest_button, self.submit_button)
        row.setStretch(0, 1)
        return row

    def _last_example_box(self) -> QGroupBox:
        """The verdict on the example just submitted, what the model said, its probabilities (hidden until then)."""
        self.last_box = QGroupBox("Your last example")
        last = QVBoxLayout(self.last_box)
        self.verdict = Banner(self, closable=False)
        self.verdict.label.setStyleSheet("font-size:16pt; font-weight:bold")
        last.addWidget(self.verdict)
        self.last_view = QLabel()
        self.last_view.setWordWrap(True)
        self.last_view.setTextFormat(Qt.TextFormat.RichText)
        last.addWidget(self.last_view)
        self.prediction_label, self.probs = prediction_view(last)
        self.last_box.hide()
        return self.last_box

    def _on_task(self) -> None:
        name = self.task_combo.currentText()
        if not name:
            return
        self.task = self._data.task(name)
        self.tally = self.tallies.setdefault(name, SessionTally())
        self.tally_label.setText(self.tally.text())
        rnd = self.guard(self._svc.current_round, name)
        who = self._svc.active
        ready = bool(rnd and rnd.is_open and who)
        if rnd is None:
            self.round_label.setText("No round yet: open one on the Rounds page.")
        elif not rnd.is_open:
            self.round_label.setText(f"Round {rnd.number} is closed: open a new one on the Rounds page.")
        else:
            self.round_label.setText(f"Round {rnd.number} · target {', '.join(m.name for m in rnd.models)}"
                                     + ("" if who else " · choose an annotator in the toolbar (or add one with "
                                                       "“New annotator…”)"))
        self._build_form(self.task, bool(rnd and rnd.n_contexts))
        for w in (self.form_box, self.target_box, self.meta_box, self.submit_button, self.explanation):
            w.setEnabled(ready)
        self.last_box.hide()
        self.round_models = [m.name for m in rnd.models] if rnd is not None and rnd.is_open else []
        self.suggest_button.setVisible(bool(ready and self.guard(self._svc.assistant_models, name)))
        self.draft = None
        if ready:
            if rnd.n_contexts and self.task.context_field:
                self.load_context()
            self._svc.warm(rnd)
            self.start_example()

    def _on_model_loading(self, name: str) -> None:
        self._model_state(name, "loading")

    def _on_model_ready(self, name: str) -> None:
        self._model_state(name, "ready")

    def _on_model_failed(self, name: str, message: str) -> None:
        self._model_state(name, f"failed: {message}")

    def _model_state(self, name: str, state: str) -> None:
        """Show whether the round's target models are loaded (the first prediction is quick once ready)."""
        self.model_states[name] = state
        shown = [(m, self.model_states[m]) for m in self.round_models if m in self.model_states]
        if not shown:
            return
        text = " · ".join(f"{m}: {'loading the model…' if st == 'loading' else st}" for m, st in shown)
        self.submit_button.setToolTip(text)
        if any(st == "loading" for _m, st in shown):
            self.banner.show_message(text, "info")
            self._loading_note = text
        elif self.banner.text() == getattr(self, "_loading_note", None):  # never another note (a late model
            self.banner.clear()  # ready must not wipe the assistant's "Draft by ..." line)

    def _build_form(self, task: Task, pooled: bool) -> None:
        while self.form.rowCount():
            self.form.removeRow(0)
        self.inputs = {}
        self.context = None
        self.context_box.setVisible(pooled and task.context_field is not None)
        for f in task.inputs:
            if pooled and f.is_context:
                continue
            edit = input_edit(f)
            self.form.addRow(f.name, edit)
            self.inputs[f.name] = edit
        for b in self.target_group.buttons():
            self.target_group.removeButton(b)
            b.deleteLater()
        self.answer_edit.setParent(None)
        self.use_selection_button.setParent(None)
        if task.kind.chooses_labels:
            self.target_box.setTitle(LABEL_TITLE)
            for i, label in enumerate(task.labels):
                b = QPushButton(f"{i + 1}  {label}")
                b.setCheckable(True)
                b.setProperty("label", label)
                b.setToolTip(f"Ctrl+{i + 1}")
                b.setFocusPolicy(Qt.FocusPolicy.NoFocus)
                self.target_group.addButton(b, i)
                self.target_layout.addWidget(b)
        else:
            self.target_box.setTitle(SPAN_TITLE)
            self.target_layout.addWidget(self.answer_edit, 1)
            self.target_layout.addWidget(self.use_selection_button)
            self.answer_edit.show()  # setParent(None) above hid them
            self.use_selection_button.show()
        self.meta_box.set_fields(task.create_metadata)  # the task file's metadata.create

    def focus_chain(self) -> list[QWidget]:
        """The form's widgets in Tab order: Tab cycles through these and never leaves for the sidebar."""
        chain: list[QWidget] = list(self.inputs.values())
        if self.task is not None and not self.task.kind.chooses_labels:
            chain.append(self.answer_edit)
        chain += [*self.meta_box.focus_chain(), self.explanation, self.submit_button]
        return [w for w in chain if w.isEnabled() and w.isVisible()]

    def focusNextPrevChild(self, next: bool) -> bool:
        chain = self.focus_chain()
        current = self.focusWidget()
        if current not in chain:
            return super().focusNextPrevChild(next)
        step = 1 if next else -1
        chain[(chain.index(current) + step) % len(chain)].setFocus(
            Qt.FocusReason.TabFocusReason if next else Qt.FocusReason.BacktabFocusReason)
        return True

    def use_selection(self) -> None:
        """Copy the text selected in the context (pool view or typed field) into the answer box."""
        if self.task is None or self.task.kind.chooses_labels:
            return
        source = self.context_view if self.context is not None else self.inputs.get(self.task.span_of or "")
        selected = source.textCursor().selectedText().replace("\u2029", "\n") if source is not None else ""
        if selected.strip():
            self.answer_edit.setText(selected.strip())
        else:
            self.banner.show_message(f"Select the answer in the {self.task.span_of} first, then Ctrl+U.", "info")

    def load_context(self) -> None:
        if not self.task:
            return
        ctx = self.guard(self._svc.next_context, self.task.name)
        self.context = ctx
        self.context_view.setPlainText(ctx.text if ctx else "")
        self.submit_button.setEnabled(ctx is not None)

    # ----------------------------------------------------------- actions
    def choose(self, index: int) -> None:
        b = self.target_group.button(index)
        if b is not None and b.isEnabled():
            b.setChecked(True)

    def target(self):
        if self.task is None:
            return None
        if self.task.kind.chooses_labels:
            b = self.target_group.checkedButton()
            return b.property("label") if b else None
        text = self.answer_edit.text().strip()
        return text or None

    def start_example(self) -> None:
        self.clock.restart()
        self._tick.start()
        self._show_time()
        self.focus_first_input()
        QTimer.singleShot(0, self.focus_first_input)  # new input widgets become visible on the next loop turn

    def focus_first_input(self) -> None:
        edits = list(self.inputs.values())
        first = next((e for e in edits if not e.toPlainText()), edits[0] if edits else None)  # a kept context: on
        if first is not None and first.isEnabled():
            first.setFocus()

    def showEvent(self, event) -> None:
        super().showEvent(event)
        QTimer.singleShot(0, self.focus_first_input)

    def _show_time(self) -> None:
        s = self.clock.elapsed() // 1000 if self.clock.isValid() else 0
        self.timer_label.setText(f"{s // 60}:{s % 60:02d}")

    def submit(self) -> None:
        if not self.submit_button.isEnabled() or self._svc.busy or self.task is None:
            return
        inputs = {name: edit.toPlainText().strip() for name, edit in self.inputs.items()}
        missing = [n for n, v in inputs.items() if not v]
        target = self.target()
        if missing:
            self.banner.error(f"Fill in {', '.join(missing)} first.")
            self.inputs[missing[0]].setFocus()
            return
        if self.task.kind.chooses_labels and target is None:
            self.banner.show_message("Choose the correct label first (Ctrl+1–9 or click it).", "info")
            return
        if self.context is not None:
            inputs[self.context.field] = self.context.text
        if not self.task.kind.chooses_labels:
            if not target:
                self.banner.show_message(f"Select the answer in the {self.task.span_of} (or type it), then submit.",
                                         "info")
                self.answer_edit.setFocus()
                return
            try:
                check_target(self.task, target, inputs)  # the core's span rule, before asking the model
            except DynaDeskError as exc:
                self.banner.error(str(exc))
                self.answer_edit.setFocus()
                return
        field = self.meta_box.missing()
        if field is not None:
            self.banner.error(missing_text(field))
            return
        self.banner.clear()
        self.submit_button.setEnabled(False)
        self.submit_button.setText("Asking the model…")
        self._svc.submit(self.task.name, inputs, target, explanation=self.explanation.text(),
                         time_ms=int(self.clock.elapsed()) if self.clock.isValid() else 0,
                         context_id=self.context.id if self.context else None, draft=self.draft,
                         metadata=self.meta_box.values())

    def suggest_draft(self) -> None:
        """Ask the assistant for a draft of the example (with the chosen label, and the context when pooled)."""
        given = {name: edit.toPlainText().strip() for name, edit in self.inputs.items()}
        if self.context is not None:
            given[self.context.field] = self.context.text
        self.banner.show_message("Drafting…", "info")
        self._svc.propose_draft(self.task.name, self.target() if self.task.kind.chooses_labels else None, given)

    def _on_draft(self, draft) -> None:
        if self.task is None or draft.task != self.task.name or draft.field not in self.inputs:
            return
        self.draft = draft
        self.inputs[draft.field].setPlainText(draft.text)
        self.banner.show_message(f"Draft by {draft.model}: edit it before submitting (its use is recorded).", "info")

    def _on_submitted(self, ex: AnnotatedExample) -> None:
        self._reset_button()
        self.draft = None
        if self.task is None or ex.task != self.task.name:
            return  # a late answer for a task no longer on screen: the database has it, this view does not
        self.tally.add(ex.fooled)
        self.tally_label.setText(self.tally.text())
        if ex.fooled:
            self.verdict.show_message("You fooled the model!", "ok")
        else:
            self.verdict.show_message("The model got it right.", "warn")
        self.last_view.setText("".join(f"<b>{html.escape(k)}</b>: {html.escape(v)}<br>"
                                       for k, v in ex.inputs.items()))
        self.last_box.show()
        out = ex.model_output
        if "label" in out:
            self.prediction_label.setText(f"{html.escape(ex.model_name)} predicted <b>{html.escape(out['label'])}</b>;"
                                          f" you said <b>{html.escape(str(ex.target))}</b>.")
            self.probs.show_output(out)
        else:
            self.prediction_label.setText(f"{html.escape(ex.model_name)} answered "
                                          f"<b>{html.escape(str(out.get('answer', '')))}</b> "
                                          f"(score {out.get('score', 0):.2f}); you said "
                                          f"<b>{html.escape(str(ex.target))}</b>.")
            self.probs.set_data([])
        for name, edit in self.inputs.items():
            if name != self.task.span_of:  # QA: the next question is asked about the same context (issue 47)
                edit.clear()
        self.explanation.clear()
        self.meta_box.clear()
        self.answer_edit.clear()
        checked = self.target_group.checkedButton()
        if checked:
            self.target_group.setExclusive(False)
            checked.setChecked(False)
            self.target_group.setExclusive(True)
        if self.context is not None:
            self.load_context()
        self.start_example()

    def _on_failed(self, message: str) -> None:
        self._reset_button()
        self.banner.error(message)

    def _reset_button(self) -> None:
        self.submit_button.setText("Submit  (Ctrl+Enter)")
        self.submit_button.setEnabled(True)

    def shutdown(self) -> None:
        self._tick.stop()


def make(services: Services, parent: QWidget | None = None) -> AnnotatePage:
    return AnnotatePage(services.annotation, services.data, parent=parent)
