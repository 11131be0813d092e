"""Annotate, Validate and Rounds pages driven with the keyboard against a real workspace:
the tally, the banner and the database all change."""

from __future__ import annotations

import pytest
from PySide6.QtCore import Qt
from support.gui import majority_model, make_window

pytestmark = pytest.mark.qt


@pytest.fixture
def gui(require_qt, qtbot, tmp_path):
    from dynadesk.models import register_model
    from dynadesk.workspace import Workspace

    home = tmp_path / "ws"
    st = Workspace(home).open_store()
    register_model(st, majority_model(tmp_path / "maj"), "sentiment", name="maj")
    st.close()
    services, window = make_window(qtbot, tmp_path, home)
    ann = services.annotation
    ann.add_annotator("alice")
    ann.add_annotator("bob")
    yield services, window
    window.close()
    services.close()


def _open_round(qtbot, window):
    page = window.show_page("rounds")
    page.select_task("sentiment")
    item = page.model_list.item(0)
    assert item.text() == "maj"
    item.setCheckState(Qt.CheckState.Checked)
    qtbot.mouseClick(page.new_round_button, Qt.MouseButton.LeftButton)
    assert page.banner.kind == "ok", page.banner.text()
    return page


def _write_example(qtbot, page, text: str, label_key: Qt.Key):
    edit = page.inputs["statement"]
    qtbot.waitUntil(edit.hasFocus, timeout=2000)  # the page puts the cursor in the first field
    qtbot.keyClicks(edit, text)
    qtbot.keyClick(edit, label_key, Qt.KeyboardModifier.ControlModifier)
    with qtbot.waitSignal(page._svc.submitted, timeout=20_000):
        qtbot.keyClick(edit, Qt.Key.Key_Return, Qt.KeyboardModifier.ControlModifier)


def test_annotate_three_with_keyboard_then_validate_and_see_stats(gui, qtbot):
    services, window = gui
    ann = services.annotation
    assert window.annotator_label.text() == "Annotator: alice"
    rounds = _open_round(qtbot, window)
    assert rounds.rounds_table.rowCount() == 1

    page = window.show_page("annotate")
    page.select_task("sentiment")
    assert "Round 1" in page.round_label.text() and "maj" in page.round_label.text()
    assert page.submit_button.isEnabled()
    _write_example(qtbot, page, "an utterly wonderful film, I hated it", Qt.Key.Key_1)  # negative: fools
    assert page.verdict.text() == "You fooled the model!"
    assert "predicted <b>positive</b>" in page.prediction_label.text()
    assert dict(page.probs.rows()) == pytest.approx({"positive": 5 / 8, "negative": 2 / 8, "neutral": 1 / 8})
    assert page.inputs["statement"].toPlainText() == ""  # ready for the next one
    _write_example(qtbot, page, "a lovely day", Qt.Key.Key_3)  # positive: the model is right
    assert page.verdict.text() == "The model got it right."
    _write_example(qtbot, page, "it is a table", Qt.Key.Key_2)  # neutral: fools
    assert page.tally_label.text() == "3 examples · 2 fooled · MER 67%"
    page.select_task("nli")  # another task's tally starts at zero, and sentiment's is kept
    assert page.tally_label.text().startswith("0 examples")
    page.select_task("sentiment")
    assert page.tally_label.text() == "3 examples · 2 fooled · MER 67%"

    stored = services.ws.store.annotation.examples("sentiment")
    assert sorted((e.inputs["statement"], e.target, e.fooled, e.annotator) for e in stored) == [
        ("a lovely day", "positive", False, "alice"),
        ("an utterly wonderful film, I hated it", "negative", True, "alice"),
        ("it is a table", "neutral", True, "alice")]
    assert all(e.model_output["label"] == "positive" for e in stored)

    # nothing typed: the page says what is missing and stores nothing
    qtbot.keyClick(page.inputs["statement"], Qt.Key.Key_Return, Qt.KeyboardModifier.ControlModifier)
    assert page.banner.kind == "error" and "statement" in page.banner.text()
    assert len(services.ws.store.annotation.examples("sentiment")) == 3

    # switch annotator from the toolbar, then validate with the keyboard
    combo = window.annotator_combo
    combo.setCurrentIndex(combo.findData("bob"))
    combo.activated.emit(combo.currentIndex())
    assert ann.active == "bob"
    assert window.annotator_label.text() == "Annotator: bob"
    val = window.show_page("validate")
    val.select_task("sentiment")
    assert val.progress_label.text() == "0 done · 3 left"
    first = val.current
    assert first.fooled  # fooled examples come first
    val.setFocus()
    qtbot.keyClick(val, Qt.Key.Key_C)
    assert val.progress_label.text() == "1 done · 2 left"
    votes = services.ws.store.annotation.get_example(first.uid).validations
    assert [(v.annotator, v.verdict) for v in votes] == [("bob", "correct")]

    second = val.current
    qtbot.keyClick(val, Qt.Key.Key_F)  # flag needs a reason: an instruction, not an error
    assert val.banner.kind == "info" and "Flag reason" in val.banner.text() and val.reason_edit.hasFocus()
    qtbot.keyClicks(val.reason_edit, "ambiguous")
    qtbot.keyClick(val.reason_edit, Qt.Key.Key_Return)
    votes = services.ws.store.annotation.get_example(second.uid).validations
    assert [(v.verdict, v.reason) for v in votes] == [("flagged", "ambiguous")]
    assert val.progress_label.text() == "2 done · 1 left"
    assert val.progress.value() == 2 and val.progress.maximum() == 3

    # rounds page statistics follow the database
    rounds = window.show_page("rounds")
    row = [rounds.rounds_table.item(0, c).text() for c in range(rounds.rounds_table.columnCount())]
    assert row[3:8] == ["3", "2", "0", "66.7%", "0.0%"]
    people = {rounds.people_table.item(r, 0).text(): rounds.people_table.item(r, 1).text()
              for r in range(rounds.people_table.rowCount())}
    assert people == {"alice": "3", "bob": "0"}
    assert rounds.chart.rows() == [("round 1", pytest.approx(2 / 3))]


def test_round_without_models_is_refused_with_the_reason(gui, qtbot):
    _services, window = gui
    page = window.show_page("rounds")
    page.select_task("sentiment")
    qtbot.mouseClick(page.new_round_button, Qt.MouseButton.LeftButton)
    assert page.banner.kind == "error"
    assert "at least one target model" in page.banner.text()
    annotate = window.show_page("annotate")
    annotate.select_task("sentiment")
    assert "No round yet" in annotate.round_label.text()
    assert not annotate.submit_button.isEnabled()


def test_register_round_as_dataset(gui, qtbot, tmp_path):
    services, window = gui
    rounds = _open_round(qtbot, window)
    page = window.show_page("annotate")
    page.select_task("sentiment")
    _write_example(qtbot, page, "grim and dull", Qt.Key.Key_1)
    rounds = window.show_page("rounds")
    rounds.register_name.setText("r1-data")
    qtbot.mouseClick(rounds.register_button, Qt.MouseButton.LeftButton)
    assert rounds.banner.kind == "ok", rounds.banner.text()
    ds = services.ws.store.datasets.get("r1-data")
    assert ds.size == 1 and ds.label_counts["negative"] == 1
    out = tmp_path / "r1.jsonl"
    rounds.export(str(out))
    assert len(out.read_text().splitlines()) == 1


def test_nli_round_with_context_pool_shows_context_and_uses_it(gui, qtbot, tmp_path):
    from dynadesk.models import register_model

    services, window = gui
    labels = ("entailment", "neutral", "contradiction")
    folder = majority_model(tmp_path / "nli-maj", task="nli", counts={"entailment": 1, "neutral": 0,
                                                                      "contradiction": 4},
                            labels=labels, inputs=("context", "hypothesis"))
    register_model(services.ws.store, folder, "nli", name="nli-maj")
    pool = tmp_path / "contexts.txt"
    pool.write_text("A man is playing a guitar on a stage.\nTwo dogs run through a snowy field.\n")
    rounds = window.show_page("rounds")
    rounds.select_task("nli")
    rounds.model_list.item(0).setCheckState(Qt.CheckState.Checked)
    rounds.contexts_edit.setText(str(pool))
    qtbot.mouseClick(rounds.new_round_button, Qt.MouseButton.LeftButton)
    assert "with 2 contexts" in rounds.banner.text()

    page = window.show_page("annotate")
    page.select_task("nli")
    assert page.context_box.isVisible() and list(page.inputs) == ["hypothesis"]
    shown = page.context_view.toPlainText()
    assert shown in pool.read_text().splitlines()
    edit = page.inputs["hypothesis"]
    qtbot.waitUntil(edit.hasFocus, timeout=2000)
    qtbot.keyClicks(edit, "Someone is making music.")
    qtbot.keyClick(edit, Qt.Key.Key_1, Qt.KeyboardModifier.ControlModifier)  # entailment
    with qtbot.waitSignal(page._svc.submitted, timeout=20_000) as blocker:
        qtbot.keyClick(edit, Qt.Key.Key_Return, Qt.KeyboardModifier.ControlModifier)
    ex = blocker.args[0]
    assert ex.inputs == {"context": shown, "hypothesis": "Someone is making music."}
    assert ex.context_id is not None and ex.fooled  # the baseline always says contradiction
    assert page.context_view.toPlainText() != shown  # the next unused context is loaded
