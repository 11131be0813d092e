"""The task file's create/validate metadata fields on the app's Annotate and Validate pages (issue 49 item 4):
shown as widgets (a line edit, radio buttons with nothing checked), a missing required one named by the page
before anything is stored, the values stored with the example or vote. A real workspace task and model, the
keyboard through the widgets."""

from __future__ import annotations

import pytest
from PySide6.QtCore import Qt
from support.gui import majority_model, make_window, switch_annotator
from support.meta_task import notes_round

from dynadesk.store import annotation_meta

pytestmark = pytest.mark.qt


def test_the_pages_show_enforce_and_store_the_fields(require_qt, qtbot, tmp_path):
    home = tmp_path / "ws"
    notes_round(home, tmp_path, ("alice", "bob"), model=majority_model(tmp_path / "maj", task="sentiment_notes"))
    services, window = make_window(qtbot, tmp_path, home)
    try:
        store = services.ws.store
        switch_annotator(window, "alice")
        page = window.show_page("annotate")
        page.select_task("sentiment_notes")
        box = page.meta_box
        assert box.isVisible() and list(box.edits) == ["rationale"] and list(box.groups) == ["topic"]
        assert [b.text() for b in box.groups["topic"].buttons()] == ["food", "film", "other"]
        assert box.groups["topic"].checkedButton() is None  # nothing chosen for her
        edit = page.inputs["statement"]
        qtbot.waitUntil(edit.hasFocus, timeout=2000)
        qtbot.keyClicks(edit, "an utterly wonderful film, I hated it")
        qtbot.keyClick(edit, Qt.Key.Key_1, Qt.KeyboardModifier.ControlModifier)
        qtbot.keyClick(edit, Qt.Key.Key_Return, Qt.KeyboardModifier.ControlModifier)
        assert page.banner.kind == "error" and "'rationale'" in page.banner.text()
        assert box.edits["rationale"].hasFocus() and store.annotation.examples("sentiment_notes") == []

        qtbot.keyClicks(box.edits["rationale"], "sarcasm")
        qtbot.keyClick(box.edits["rationale"], Qt.Key.Key_Tab)  # Tab reaches the topic choices next
        first = box.groups["topic"].buttons()[0]
        assert first.hasFocus()
        qtbot.keyClick(first, Qt.Key.Key_Space)
        with qtbot.waitSignal(services.annotation.submitted, timeout=60_000) as done:
            qtbot.keyClick(first, Qt.Key.Key_Return, Qt.KeyboardModifier.ControlModifier)
        ex = done.args[0]
        assert annotation_meta.of(store, [ex.uid]) == {ex.uid: {"rationale": "sarcasm", "topic": "food"}}
        assert box.value("rationale") == "" and box.groups["topic"].checkedButton() is None  # ready for the next

        switch_annotator(window, "bob")
        val = window.show_page("validate")
        val.select_task("sentiment_notes")
        assert val.current.uid == ex.uid and val.meta_box.isVisible()
        flag = val.meta_box.groups["flag_reason"]
        assert flag.checkedButton() is None and "corrected_why" in val.meta_box.edits
        val.setFocus()
        qtbot.keyClick(val, Qt.Key.Key_F)  # the declared flag reason is required: named, the cursor put there
        assert "'flag_reason'" in val.banner.text() and flag.buttons()[0].hasFocus()
        assert store.annotation.get_example(ex.uid).validations == []
        flag.buttons()[1].setChecked(True)  # unclear
        val.meta_box.edits["corrected_why"].setText("not asked with a flag")  # another verdict's: not sent
        qtbot.keyClick(flag.buttons()[1], Qt.Key.Key_F)
        (v,) = store.annotation.get_example(ex.uid).validations
        assert (v.annotator, v.verdict, v.reason) == ("bob", "flagged", "flag_reason: unclear")
        assert annotation_meta.of(store, [v.uid]) == {v.uid: {"flag_reason": "unclear"}}
    finally:
        window.close()
        services.close()
