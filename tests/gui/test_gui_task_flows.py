"""Every annotation flow through the app, for every task: open a round, create examples
(QA: the answer selected in the context), validate them as another annotator (QA: a
corrected span), and read the round's statistics — all through the widgets."""

from __future__ import annotations

from pathlib import Path

import pytest
from PySide6.QtCore import Qt
from support.gui import (
    majority_model,
    make_window,
    open_round,
    round_row,
    select_text,
    submit_example,
    switch_annotator,
)

pytestmark = pytest.mark.qt

LABEL_TASKS = {
    # task: (labels, inputs, majority counts, [(inputs, label key index, expect fooled)])
    "sentiment": (("negative", "neutral", "positive"), ("statement",), {"negative": 1, "neutral": 0, "positive": 4},
                  [({"statement": "an utterly wonderful film, I hated it"}, 0, True),
                   ({"statement": "a lovely day"}, 2, False)]),
    "hate_speech": (("not-hateful", "hateful"), ("statement",), {"not-hateful": 5, "hateful": 1},
                    [({"statement": "people like them should be thrown out"}, 1, True),
                     ({"statement": "I like my neighbours"}, 0, False)]),
    "nli": (("entailment", "neutral", "contradiction"), ("context", "hypothesis"),
            {"entailment": 0, "neutral": 1, "contradiction": 4},
            [({"context": "A man plays a guitar on stage.", "hypothesis": "Someone makes music."}, 0, True),
             ({"context": "Two dogs run in the snow.", "hypothesis": "The dogs are asleep."}, 2, False)]),
}


def _app(qtbot, tmp_path: Path, task: str, folder: Path):
    from dynadesk.models import register_model
    from dynadesk.workspace import Workspace

    home = tmp_path / "ws"
    st = Workspace(home).open_store()
    register_model(st, folder, task, name=f"{task}-model")
    st.close()
    services, window = make_window(qtbot, tmp_path, home)
    ann = services.annotation
    ann.add_annotator("alice")
    ann.add_annotator("olga", role="owner")  # an owner's vote decides at once
    return services, window


@pytest.mark.parametrize("task", sorted(LABEL_TASKS))
def test_label_task_create_validate_stats(require_qt, qtbot, tmp_path, task):
    labels, inputs, counts, examples = LABEL_TASKS[task]
    folder = majority_model(tmp_path / "model", task=task, counts=counts, labels=labels, inputs=inputs)
    services, window = _app(qtbot, tmp_path, task, folder)
    try:
        open_round(qtbot, window, task)
        page = window.show_page("annotate")
        page.select_task(task)
        assert list(page.inputs) == list(inputs)
        assert "Ctrl+Enter" in page.shortcuts_label.text()
        for values, key, fooled in examples:
            first = page.inputs[inputs[0]]
            qtbot.waitUntil(first.hasFocus, timeout=2000)
            for name in inputs:
                page.inputs[name].setFocus()
                qtbot.keyClicks(page.inputs[name], values[name])
            qtbot.keyClick(page.focusWidget(), Qt.Key(Qt.Key.Key_1 + key), Qt.KeyboardModifier.ControlModifier)
            chosen = page.target_group.checkedButton()
            assert chosen is not None and chosen.property("label") == labels[key]
            assert "background:#1565c0" in page.target_box.styleSheet()  # a checked label is unmistakable
            ex = submit_example(qtbot, page)
            assert (ex.inputs, ex.target, ex.fooled) == (values, labels[key], fooled)
            # the submitted example stays visible with its verdict while the form is empty again
            assert page.last_box.isVisible()
            assert values[inputs[-1]] in page.last_view.text()
            assert page.verdict.text() == ("You fooled the model!" if fooled else "The model got it right.")
            assert all(e.toPlainText() == "" for e in page.inputs.values())

        switch_annotator(window, "olga")
        val = window.show_page("validate")
        val.select_task(task)
        assert val.progress_label.text() == "0 done · 2 left"
        assert val.current.fooled  # fooled examples first
        val.setFocus()
        qtbot.keyClick(val, Qt.Key.Key_C)
        assert val.banner.kind == "ok", val.banner.text()
        assert "verified" in val.banner.text()
        qtbot.keyClick(val, Qt.Key.Key_F)  # flagging needs a reason: asked for as an instruction
        assert val.banner.kind == "info" and val.reason_edit.hasFocus()
        qtbot.keyClicks(val.reason_edit, "not a real example")
        qtbot.keyClick(val.reason_edit, Qt.Key.Key_Return)
        assert val.progress_label.text() == "2 done · 0 left"

        row = round_row(window, task)
        assert row[3:8] == ["2", "1", "1", "50.0%", "50.0%"]
    finally:
        window.close()
        services.close()


def test_qa_create_with_selected_span_validate_with_corrected_span_stats(require_qt, qtbot, tmp_path):
    from support.tiny_models import make_tiny_qa

    services, window = _app(qtbot, tmp_path, "qa", make_tiny_qa(tmp_path / "qa-model"))
    try:
        open_round(qtbot, window, "qa")
        page = window.show_page("annotate")
        page.select_task("qa")
        assert "select it in the context" in page.target_box.title()
        assert page.use_selection_button.isVisible()
        context = "The river Nile flows north through Egypt into the Mediterranean Sea near Alexandria."
        ctx, question = page.inputs["context"], page.inputs["question"]
        qtbot.waitUntil(ctx.hasFocus, timeout=2000)
        qtbot.keyClicks(ctx, context)
        qtbot.keyClick(ctx, Qt.Key.Key_Tab)  # Tab moves inside the form
        assert question.hasFocus()
        qtbot.keyClicks(question, "Where does the Nile flow into the sea?")

        # nothing selected: an instruction, nothing stored
        qtbot.keyClick(question, Qt.Key.Key_Return, Qt.KeyboardModifier.ControlModifier)
        assert page.banner.kind == "info" and "Select the answer" in page.banner.text()
        # a typed answer that is no span of the context is refused before the model is asked
        page.answer_edit.setText("the Atlantic")
        qtbot.keyClick(question, Qt.Key.Key_Return, Qt.KeyboardModifier.ControlModifier)
        assert page.banner.kind == "error" and "not a substring" in page.banner.text()
        assert services.ws.store.annotation.examples("qa") == []

        select_text(ctx, "the Mediterranean Sea")
        qtbot.keyClick(ctx, Qt.Key.Key_U, Qt.KeyboardModifier.ControlModifier)
        assert page.answer_edit.text() == "the Mediterranean Sea"
        question.setFocus()
        ex = submit_example(qtbot, page)
        assert ex.target == "the Mediterranean Sea"  # a plain string, as the core stores it
        assert ex.inputs == {"context": context, "question": "Where does the Nile flow into the sea?"}
        stored = services.ws.store.annotation.examples("qa")
        assert [e.target for e in stored] == ["the Mediterranean Sea"]
        assert "answered" in page.prediction_label.text() and page.last_box.isVisible()
        # the next question is about the same context (issue 47): it stays, the question and answer go
        assert (ctx.toPlainText(), question.toPlainText(), page.answer_edit.text()) == (context, "", "")

        # tab order never leaves the form: from Submit, Tab goes back to the first input
        page.submit_button.setFocus()
        qtbot.keyClick(page.submit_button, Qt.Key.Key_Tab)
        assert page.focusWidget() is ctx

        switch_annotator(window, "olga")
        val = window.show_page("validate")
        val.select_task("qa")
        assert val.current.uid == ex.uid and val.use_selection_button.isVisible()
        val.setFocus()
        qtbot.keyClick(val, Qt.Key.Key_I)  # incorrect needs the corrected span: asked for as an instruction
        assert val.banner.kind == "info"
        assert val.view.find("Mediterranean Sea near Alexandria")
        qtbot.keyClick(val, Qt.Key.Key_U, Qt.KeyboardModifier.ControlModifier)
        assert val.answer_edit.text() == "Mediterranean Sea near Alexandria"
        val.setFocus()
        qtbot.keyClick(val, Qt.Key.Key_I)
        assert val.banner.kind == "ok", val.banner.text()
        votes = services.ws.store.annotation.get_example(ex.uid).validations
        assert [(v.annotator, v.verdict, v.label) for v in votes] == [
            ("olga", "incorrect", "Mediterranean Sea near Alexandria")]

        row = round_row(window, "qa")
        assert row[3] == "1" and row[5] == "0"  # collected 1, verified fooled 0 (the owner said incorrect)
    finally:
        window.close()
        services.close()
