"""The lead's review in the app (issue 47): every example of a round in a filterable, sortable table, the selected
one opened in place, adjudication by the lead (an owner's vote, stored and read back through another connection)
and agreement per annotator and per label — the same figures as the hub's lead view. Real workspace, real widgets."""

from __future__ import annotations

import pytest
from PySide6.QtCore import Qt
from support.gui import demo_like_workspace, loaded, make_window

pytestmark = pytest.mark.qt


@pytest.fixture
def review(require_qt, qtbot, tmp_path):
    services, window = make_window(qtbot, tmp_path, demo_like_workspace(tmp_path))
    page = loaded(qtbot, window.show_page("review"))
    yield services, window, page
    window.close()
    services.close()


def _hub_view(services):
    from dynadesk.hub.lead import round_table
    from dynadesk.store import Store

    other = Store.open(services.ws.workspace.db_path)
    try:
        return round_table(other, "sentiment")
    finally:
        other.close()


def _col(page, name):
    from dynadesk.gui.pages.review import COLUMNS

    return COLUMNS.index(name)


def test_every_example_listed_filtered_sorted_and_opened_in_place(review, qtbot):
    services, _window, page = review
    hub = _hub_view(services)
    assert page.task_combo.currentText() == "sentiment"  # the task with a round, not the first name (hate_speech)
    rows = page.visible_rows()
    assert len(rows) == len(hub["examples"]) == 12
    assert sorted(r[0] for r in rows) == sorted(e["author"] for e in hub["examples"])
    assert sorted(r[_col(page, "state")] for r in rows) == sorted(e["state"] for e in hub["examples"])

    page.examples_table.sortItems(_col(page, "author"), Qt.SortOrder.DescendingOrder)
    authors = [r[0] for r in page.visible_rows()]
    assert authors == sorted(authors, reverse=True) and set(authors) == {"ann", "bea"}

    page.state_combo.setCurrentText("disputed")
    disputed = page.visible_rows()
    assert len(disputed) == sum(e["state"] == "disputed" for e in hub["examples"]) == 2
    assert all(r[_col(page, "correct")] == "1" and r[_col(page, "incorrect")] == "1" for r in disputed)
    page.state_combo.setCurrentIndex(0)
    page.filter_edit.setText("statement 7")
    assert [r[1] for r in page.visible_rows()] == ["example statement 7"]
    page.filter_edit.clear()
    assert len(page.visible_rows()) == 12

    uid = next(e["uid"] for e in hub["examples"] if e["state"] == "disputed")
    assert page.select_example(uid)
    text = page.detail.toPlainText()
    ex = next(e for e in hub["examples"] if e["uid"] == uid)
    assert ex["inputs"]["statement"] in text and "val: correct" in text and "bea: incorrect" in text
    assert f"majority answered {ex['model_answer']}" in text


def test_the_lead_adjudicates_a_disputed_example(review, qtbot):
    services, _window, page = review
    uid = next(e["uid"] for e in _hub_view(services)["examples"] if e["state"] == "disputed")
    page.state_combo.setCurrentText("disputed")
    assert page.select_example(uid)
    assert page.label_combo.currentIndex() == -1  # no corrected label preselected

    services.annotation.set_active("ann")  # an annotator, not a lead: refused, nothing stored
    qtbot.mouseClick(page.incorrect_button, Qt.MouseButton.LeftButton)
    assert page.banner.kind == "error" and "not a lead" in page.banner.text()
    services.annotation.set_active("lead")
    qtbot.mouseClick(page.incorrect_button, Qt.MouseButton.LeftButton)  # neither a label nor a reason
    assert page.banner.kind == "error" and "choose the corrected label or write a reason" in page.banner.text()
    assert all(not v["lead"] for e in _hub_view(services)["examples"] for v in e["validations"])

    page.label_combo.setCurrentText("positive")
    with qtbot.waitSignal(page._svc.adjudicated, timeout=10_000):
        qtbot.mouseClick(page.incorrect_button, Qt.MouseButton.LeftButton)
    loaded(qtbot, page)
    qtbot.waitUntil(lambda: page.summary.text().count("lead: not correct") == 1, timeout=10_000)
    ex = next(e for e in _hub_view(services)["examples"] if e["uid"] == uid)
    assert ex["state"] == "lead: not correct" and ex["decided_by"] == "lead" and ex["by_lead"]
    (lead_vote,) = [v for v in ex["validations"] if v["lead"]]
    assert (lead_vote["annotator"], lead_vote["verdict"], lead_vote["label"]) == ("lead", "incorrect", "positive")
    assert page.banner.kind == "ok"
    page.state_combo.setCurrentIndex(0)
    assert page.select_example(uid) and not page.correct_button.isEnabled()  # decided: nothing left to decide

    # agreement per annotator and per label: the hub's figures, now counting the decided example
    hub = _hub_view(services)
    t = page.people_table
    people = {t.item(r, 0).text(): [t.item(r, c).text() for c in (1, 2)] for r in range(t.rowCount())}
    assert people == {a["annotator"]: [str(a["agreed"]), str(a["votes"])] for a in hub["agreement"]}
    assert people["bea"] == ["1", "1"] and people["val"] == ["0", "1"]  # bea's 'incorrect' matched the lead
    t = page.labels_table
    labels = {t.item(r, 0).text(): t.item(r, 2).text() for r in range(t.rowCount())}
    assert labels == {lb["label"]: str(lb["votes"]) for lb in hub["labels"]}
