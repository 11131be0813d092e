"""The hub page driven only by the keyboard, and the lead's view (issue 47 items 1 and 2).

A real ``dynadesk hub serve`` over tiny real models; each person in their own headless Chromium context.
An annotator signs in, reads the guidelines, writes with number keys and Ctrl+Enter / Enter, skips with S;
a submission without a chosen label is refused by the page and by the server, and nothing is stored for it.
A second annotator validates with S / C / I and number keys: nothing preselected is ever recorded. The lead
(an owner invite) filters, sorts and opens the round's examples in place and decides a disputed one.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest
from support.hub import build_workspace, hub_process, invite

from dynadesk import annotation as ann
from dynadesk.annotation.validate import example_status
from dynadesk.workspace import Workspace

pytestmark = [pytest.mark.browser, pytest.mark.timeout(600)]


@pytest.fixture(scope="module")
def hub(tmp_path_factory) -> Iterator[dict[str, Any]]:
    root = tmp_path_factory.mktemp("hubkeys")
    home = root / "ws"
    build_workspace(home, root / "models")
    codes = {"amy": invite(home, "amy", "annotator"), "bo": invite(home, "bo", "annotator"),
             "boss": invite(home, "boss", "owner")}
    with hub_process(home) as url:
        yield {"home": home, "url": url, "codes": codes}


def serious(page) -> list[str]:
    """axe-core's serious or critical violations on the page as it is now (as the board's a11y test asks)."""
    from axe_playwright_python.sync_playwright import Axe

    found = Axe().run(page, options={"resultTypes": ["violations"], "runOnly": {
        "type": "tag", "values": ["wcag2a", "wcag2aa", "wcag21a", "wcag21aa", "best-practice"]}})
    return [f"{v['id']}: {v['help']} at {[n['target'] for n in v['nodes']][:3]}"
            for v in found.response["violations"] if v.get("impact") in ("serious", "critical")]


def stored(home) -> list[Any]:
    st = Workspace(home).open_store()
    try:
        return st.annotation.examples("sentiment")
    finally:
        st.close()


def keyboard_sign_in(browser, url: str, code: str) -> Any:
    page = browser.new_context().new_page()
    page.goto(url + "/")
    page.wait_for_function("() => document.activeElement && document.activeElement.id === 'code'")
    page.keyboard.type(code)
    page.keyboard.press("Enter")
    page.wait_for_selector("#app[data-ready='qa']", state="attached")  # the first open task (alphabetical)
    return page


def to_sentiment(page) -> None:
    page.select_option("#task", "sentiment")  # the one mouse-free control a keyboard user reaches by Tab
    page.wait_for_selector("#app[data-ready='sentiment']", state="attached")


def test_a_keyboard_session_stores_only_chosen_labels(hub, browser):
    url, home = hub["url"], hub["home"]
    amy = keyboard_sign_in(browser, url, hub["codes"]["amy"])
    # first sign-in: the guidelines come first, with good and bad examples; Escape closes, G opens again
    assert amy.is_visible("#guidelines") and amy.locator("#guidelines .guide-bad li").count() >= 1
    to_sentiment(amy)
    assert amy.is_visible("#guidelines") and "i did not hate it" in amy.text_content("#guidelines .guide-good")
    amy.keyboard.press("Escape")
    assert not amy.is_visible("#guidelines")
    assert amy.evaluate("document.activeElement.id") == "in-statement"
    amy.keyboard.press("Escape")  # leave the text box: now keys are commands
    amy.keyboard.press("g")
    assert amy.is_visible("#guidelines")
    amy.keyboard.press("Escape")
    assert amy.is_visible("#key-legend") and "Ctrl+Enter" in amy.text_content("#key-legend")

    # no label is chosen for her: Ctrl+Enter without one is refused by the page, nothing stored
    assert amy.locator("#target input:checked").count() == 0
    amy.keyboard.type("the soup was cold and the waiter rude")
    amy.keyboard.press("Control+Enter")
    amy.wait_for_selector("#error:not([hidden])")
    assert "Choose the true label" in amy.text_content("#error") and stored(home) == []
    # ... and by the server, when a page (or a script) sends no label
    answer = amy.evaluate("""async () => {
        const r = await fetch('/api/examples', {method: 'POST', credentials: 'same-origin',
            headers: {'Content-Type': 'application/json', 'X-CSRF-Token': state.me.csrf},
            body: JSON.stringify({task: 'sentiment', inputs: {statement: 'no label sent'},
                                  request_id: 'nolabel-0001'})});
        return [r.status, (await r.json()).detail]; }""")
    assert answer[0] == 422 and "not one of the task's labels" in answer[1], answer
    assert stored(home) == []

    made = []
    amy.keyboard.press("Escape")
    amy.keyboard.press("1")  # negative
    amy.keyboard.press("Control+Enter")
    amy.wait_for_selector("#result:not([hidden])")
    made.append(amy.get_attribute("#result", "data-uid"))
    assert "%" in amy.text_content("#result-probs")  # the model's probabilities with its answer
    amy.keyboard.press("Enter")  # write another
    amy.wait_for_selector("#result", state="hidden")
    for text, key in (("what a wonderful surprise party", "3"), ("an ordinary tuesday at the office", "2")):
        amy.keyboard.type(text)
        amy.keyboard.press("Escape")
        amy.keyboard.press(key)
        amy.keyboard.press("Enter")  # outside a text box Enter submits
        amy.wait_for_function("old => document.getElementById('result').dataset.uid !== old", arg=made[-1])
        made.append(amy.get_attribute("#result", "data-uid"))
        amy.keyboard.press("Enter")
        amy.wait_for_selector("#result", state="hidden")
    # S skips: the form is cleared and nothing is stored
    amy.keyboard.type("a statement she gives up on")
    amy.keyboard.press("Escape")
    amy.keyboard.press("s")
    assert amy.input_value("#in-statement") == "" and amy.locator("#target input:checked").count() == 0
    rows = {e.uid: e for e in stored(home)}
    assert sorted(rows) == sorted(made)
    assert sorted(e.target for e in rows.values()) == ["negative", "neutral", "positive"]

    # bo validates by keyboard: V, S skips, I without a label is refused, a number then I, C
    bo = keyboard_sign_in(browser, url, hub["codes"]["bo"])
    to_sentiment(bo)
    bo.keyboard.press("Escape")  # the guidelines
    bo.keyboard.press("Escape")  # the text box
    bo.keyboard.press("v")
    bo.wait_for_selector("#val-example:not([hidden])")
    assert bo.locator("#val-label input:checked").count() == 0 and "%" in bo.text_content("#val-model")
    skipped = bo.get_attribute("#val-example", "data-uid")
    bo.keyboard.press("s")
    bo.wait_for_function("old => document.getElementById('val-example').dataset.uid !== old", arg=skipped)
    wrong = bo.get_attribute("#val-example", "data-uid")
    bo.keyboard.press("i")
    bo.wait_for_selector("#error:not([hidden])")
    assert "Choose the right label" in bo.text_content("#error")
    assert all(not e.validations for e in stored(home))
    assert serious(bo) == []  # the validation view, error shown
    bo.keyboard.press("1")
    bo.keyboard.press("i")
    bo.wait_for_function("old => document.getElementById('val-example').dataset.uid !== old", arg=wrong)
    result = bo.text_content("#val-result")
    assert "waiting for more votes" in result and "unverified" not in result
    right = bo.get_attribute("#val-example", "data-uid")
    assert right not in (skipped, wrong)
    bo.keyboard.press("c")
    bo.wait_for_selector("#validate-empty:not([hidden])")  # the skipped one is not offered again
    votes = {e.uid: [(v.annotator, v.verdict, v.label) for v in e.validations] for e in stored(home)}
    first_other = next(lbl for lbl in ("negative", "neutral", "positive") if lbl != rows[wrong].target)
    assert votes == {skipped: [], wrong: [("bo", "incorrect", first_other)], right: [("bo", "correct", None)]}
    hub["disputed"], hub["wrong"] = right, wrong


def test_the_lead_filters_sorts_opens_and_decides(hub, browser):
    url, home = hub["url"], hub["home"]
    if "disputed" not in hub:
        pytest.fail("the keyboard session above did not run (it makes the round this test reads)")
    st = Workspace(home).open_store()
    try:  # a validator disagrees with bo on one example: it is disputed
        invite(home, "vee", "validator")
        ann.validate(st, hub["disputed"], "vee", "flagged", reason="two statements glued together")
    finally:
        st.close()
    amy_page = browser.new_context().new_page()  # an annotator cannot read the lead's table
    amy_page.goto(url + "/")
    amy_page.fill("#code", invite(home, "amy", "annotator"))
    amy_page.click("#signin-button")
    amy_page.wait_for_selector("#app[data-ready]", state="attached")
    assert amy_page.is_hidden("#tab-lead")
    assert amy_page.evaluate("async () => (await fetch('/api/lead/examples?task=sentiment')).status") == 403

    boss = keyboard_sign_in(browser, url, hub["codes"]["boss"])
    to_sentiment(boss)
    boss.keyboard.press("Escape")
    boss.click("#tab-lead")
    boss.wait_for_selector("#lead-table tbody tr")
    assert boss.locator("#lead-table tbody tr").count() == 3
    boss.select_option("#lead-state", "disputed")
    assert boss.locator("#lead-table tbody tr").count() == 1
    assert boss.get_attribute("#lead-table tbody tr", "data-uid") == hub["disputed"]
    boss.select_option("#lead-state", "")
    boss.fill("#lead-filter", "wonderful")
    assert boss.locator("#lead-table tbody tr").count() == 1
    boss.fill("#lead-filter", "")
    boss.click("#lead-table th[data-key='target'] button")
    assert boss.get_attribute("#lead-table th[data-key='target']", "aria-sort") == "ascending"
    labels = boss.locator("#lead-table tbody tr td:nth-child(4)").all_text_contents()
    assert labels == sorted(labels)
    boss.click("#lead-table th[data-key='target'] button")
    assert boss.locator("#lead-table tbody tr td:nth-child(4)").all_text_contents() == sorted(labels, reverse=True)

    row = f"#lead-table tr[data-uid='{hub['disputed']}']"
    boss.click(f"{row} button.open")  # opened in place, right under its row
    detail = f"#lead-table tr[data-detail='{hub['disputed']}']"
    assert boss.evaluate(f"document.querySelector(\"{row}\").nextElementSibling.dataset.detail") == hub["disputed"]
    assert "two statements glued together" in boss.text_content(detail)
    boss.click(f"{detail} button.decide-correct")
    boss.wait_for_selector(f"{row}[data-state='lead: correct']")
    assert "The lead's decision (boss): correct" in boss.text_content(detail)
    assert serious(boss) == []  # the lead's table with a row open
    st = Workspace(home).open_store()
    try:
        ex = st.annotation.get_example(hub["disputed"])
        status = example_status(ex, 3)
        assert (status.status, status.decided_by) == ("verified-correct", "boss")
    finally:
        st.close()
    # agreement: bo's 'correct' matches the lead's decision, vee's flag does not
    cells = {r.locator("th").text_content(): r.locator("td").all_text_contents()
             for r in boss.locator("#agree-annotators tbody tr").all()}
    assert cells == {"bo": ["1", "1", "100.0%"], "vee": ["0", "1", "0.0%"]}
    per_label = {r.locator("th").text_content(): r.locator("td").all_text_contents()[:2]
                 for r in boss.locator("#agree-labels tbody tr").all()}
    ex_labels = {e.uid: e.target for e in stored(home)}
    assert per_label[ex_labels[hub["disputed"]]] == ["1", "2"] and per_label[ex_labels[hub["wrong"]]] == ["0", "1"]
