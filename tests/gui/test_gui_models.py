"""Models page: register folders through the form, refuse pickles with the reason, and
predict live (debounced) as the user types, with probability bars."""

from __future__ import annotations

import pytest
from PySide6.QtCore import Qt
from support.gui import majority_model

pytestmark = pytest.mark.qt


def test_register_majority_and_try_it_live(gui, qtbot, tmp_path):
    services, window = gui
    page = window.show_page("models")
    folder = majority_model(tmp_path / "maj", counts={"negative": 6, "neutral": 1, "positive": 3})
    with qtbot.waitSignal(page._svc.registered, timeout=30_000):
        page.path_edit.setText(str(folder))
        page.task_combo.setCurrentText("sentiment")
        page.name_edit.setText("baseline")
        qtbot.mouseClick(page.register_button, Qt.MouseButton.LeftButton)
    assert page.banner.kind == "ok" and "Registered 'baseline'" in page.banner.text()
    assert [page.table.item(r, 0).text() for r in range(page.table.rowCount())] == ["baseline"]
    assert services.ws.store.models.get("baseline").kind == "majority"
    assert page.selected_model() == "baseline"
    edit = page.inputs["statement"]
    answers: list[int] = []
    page._svc.predicted.connect(lambda rid, _out: answers.append(rid))
    with qtbot.waitSignal(page._svc.predicted, timeout=20_000) as blocker:
        qtbot.keyClicks(edit, "what a film")  # one prediction after the typing pauses, not one per key
    assert blocker.args[0] == page._svc.latest_request
    qtbot.wait(400)  # longer than the debounce: no second prediction follows
    assert answers == [page._svc.latest_request]
    assert "Prediction: <b>negative</b>" in page.result_label.text()
    assert page.probs.rows() == [("negative", pytest.approx(0.6)), ("positive", pytest.approx(0.3)),
                                 ("neutral", pytest.approx(0.1))]


def test_tiny_transformer_probabilities_and_pickle_refusal(gui, qtbot, tmp_path):
    from support.tiny_models import make_tiny_classifier

    services, window = gui
    page = window.show_page("models")
    good = make_tiny_classifier(tmp_path / "tiny", ["negative", "neutral", "positive"])
    with qtbot.waitSignal(page._svc.registered, timeout=60_000):
        page.path_edit.setText(str(good))
        page.task_combo.setCurrentText("sentiment")
        qtbot.mouseClick(page.register_button, Qt.MouseButton.LeftButton)
    with qtbot.waitSignal(page._svc.predicted, timeout=60_000):
        qtbot.keyClicks(page.inputs["statement"], "good movie")
    probs = dict(page.probs.rows())
    assert set(probs) == {"negative", "neutral", "positive"}
    assert sum(probs.values()) == pytest.approx(1.0, abs=1e-4)
    top = max(probs, key=probs.get)
    assert f"Prediction: <b>{top}</b>" in page.result_label.text()

    bad = make_tiny_classifier(tmp_path / "pickled", ["negative", "neutral", "positive"], pickle_weights=True)
    with qtbot.waitSignal(page._svc.registerFailed, timeout=60_000):
        page.path_edit.setText(str(bad))
        qtbot.mouseClick(page.register_button, Qt.MouseButton.LeftButton)
    assert page.banner.kind == "error" and "pickle" in page.banner.text()
    assert not services.ws.store.models.exists("pickled")
    assert page.register_button.isEnabled()
