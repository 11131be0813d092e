"""The app's Annotate page offers the generative assistant when the round's target can draft: the draft fills the
field, the annotator edits it, and the example is stored with the assistant's use (round statistics count it)."""

from __future__ import annotations

import pytest
from PySide6.QtCore import Qt
from support.gui import majority_model, make_window
from support.tiny_models import make_tiny_generative

pytestmark = pytest.mark.qt
LABELS = ["negative", "neutral", "positive"]


@pytest.fixture
def gui(require_qt, qtbot, tmp_path):
    from dynadesk import annotation as ann
    from dynadesk.models import register_model
    from dynadesk.workspace import Workspace

    home = tmp_path / "ws"
    st = Workspace(home).open_store()
    register_model(st, make_tiny_generative(tmp_path / "lm", "causal", "sentiment", labels=LABELS), "sentiment",
                   name="tiny-lm")
    maj = majority_model(tmp_path / "maj", task="hate_speech", labels=("not-hateful", "hateful"),
                         counts={"hateful": 1, "not-hateful": 2})
    register_model(st, maj, "hate_speech", name="maj")
    ann.new_round(st, "sentiment", ["tiny-lm"])
    ann.new_round(st, "hate_speech", ["maj"])
    st.close()
    services, window = make_window(qtbot, tmp_path, home)
    services.annotation.add_annotator("alice")
    yield services, window
    window.close()
    services.close()


def test_the_annotate_page_drafts_with_the_assistant_and_records_its_use(gui, qtbot):
    from dynadesk import annotation as ann

    services, window = gui
    page = window.show_page("annotate")
    page.select_task("hate_speech")
    assert page.suggest_button.isHidden()  # no generative target: not offered
    page.select_task("sentiment")
    assert not page.suggest_button.isHidden()
    page.choose(2)  # positive
    with qtbot.waitSignal(services.annotation.draftReady, timeout=30_000) as got:
        qtbot.mouseClick(page.suggest_button, Qt.MouseButton.LeftButton)
    draft = got.args[0]
    assert draft.model == "tiny-lm" and draft.label == "positive"
    assert page.inputs["statement"].toPlainText() == draft.text and "Draft by tiny-lm" in page.banner.text()
    page.inputs["statement"].setPlainText((draft.text + " and i loved it").strip())
    with qtbot.waitSignal(services.annotation.submitted, timeout=30_000) as done:
        qtbot.mouseClick(page.submit_button, Qt.MouseButton.LeftButton)
    ex = done.args[0]
    store = services.ws.store
    assert store.assists.of([ex.uid])[ex.uid].draft == draft.text and page.draft is None
    stats = ann.round_stats(store, "sentiment").assistant
    assert (stats["assisted"], stats["edited"]) == (1, 1)
