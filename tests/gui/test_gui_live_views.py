"""Results belong to what is on screen: a late live prediction or a late annotation answer
never lands under another model or task, and a selected model loads in the background
with its state shown."""

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
    register_model(st, majority_model(tmp_path / "neg", counts={"negative": 5, "neutral": 0, "positive": 1}),
                   "sentiment", name="always-negative")
    register_model(st, majority_model(tmp_path / "pos", counts={"negative": 1, "neutral": 0, "positive": 5}),
                   "sentiment", name="always-positive")
    st.close()
    services, window = make_window(qtbot, tmp_path, home)
    yield services, window
    window.close()
    services.close()


def test_late_prediction_of_the_previous_model_is_not_shown_under_the_new_one(gui, qtbot):
    _services, window = gui
    page = window.show_page("models")
    page.select_model("always-negative")
    page.inputs["statement"].setPlainText("a film")
    page._debounce.stop()
    page.predict_now()  # in flight for always-negative: its answer is queued to this thread
    page.select_model("always-positive")  # the user moves on before the answer arrives
    with qtbot.waitSignal(page._svc.predicted, timeout=20_000) as blocker:
        pass
    assert blocker.args[1]["label"] == "negative"  # the late answer did arrive...
    assert "negative" not in page.result_label.text()  # ...and was not shown under always-positive
    assert page.probs.rows() == []

    with qtbot.waitSignal(page._svc.predicted, timeout=20_000):
        page.inputs["statement"].setPlainText("a film")
    assert "Prediction: <b>positive</b>" in page.result_label.text()


def test_selected_model_loads_in_the_background_and_says_so(gui, qtbot):
    _services, window = gui
    page = window.show_page("models")
    with qtbot.waitSignal(page._svc.loaded, timeout=20_000) as blocker:
        page.select_model("always-positive")
        assert "loading the model" in page.try_title.text()
    assert blocker.args == ["always-positive"]
    assert "ready: type to predict" in page.try_title.text()


def test_annotate_page_loads_round_models_and_ignores_answers_for_another_task(gui, qtbot):
    services, window = gui
    ann = services.annotation
    ann.add_annotator("alice")
    rounds = window.show_page("rounds")
    rounds.select_task("sentiment")
    rounds.model_list.item(0).setCheckState(Qt.CheckState.Checked)
    qtbot.mouseClick(rounds.new_round_button, Qt.MouseButton.LeftButton)
    page = window.show_page("annotate")
    with qtbot.waitSignal(ann.modelReady, timeout=20_000):
        page.select_task("sentiment")
    assert page.model_states == {"always-negative": "ready"}

    page.inputs["statement"].setPlainText("good")
    page.choose(2)
    page.submit()  # the answer is on its way...
    page.select_task("nli")  # ...while the annotator switches task
    with qtbot.waitSignal(ann.submitted, timeout=20_000):
        pass
    assert page.tally.examples == 0 and not page.last_box.isVisible()  # not shown under NLI
    assert page.submit_button.text().startswith("Submit")
    assert len(services.ws.store.annotation.examples("sentiment")) == 1  # stored all the same


def test_label_chart_colours_follow_the_labels_meaning(require_qt, qtbot):
    from dynadesk.gui.charts import BarChart

    chart = BarChart()
    qtbot.addWidget(chart)
    chart.set_data([("negative", 3), ("neutral", 2), ("positive", 5)])
    names = [chart.bar_color(i).name() for i in range(3)]
    assert names == ["#e15759", "#9e9e9e", "#59a14f"]  # negative red, neutral grey, positive green
    chart.set_data([("hateful", 1), ("not-hateful", 4)])
    assert [chart.bar_color(i).name() for i in range(2)] == ["#e15759", "#59a14f"]
