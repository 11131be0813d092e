"""The task file's create/validate metadata fields in the hub (issue 49 item 4): the API passes them to the same
library calls the CLI uses and refuses a missing required field or an undeclared one with a 422 naming it; the
page shows them (text boxes, radio groups with nothing chosen), enforces the required ones and is worked by
keyboard alone. A real hub on loopback over a workspace task with a tiny real model; a real headless Chromium."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest
from support.hub import Client, hub_in_thread, rid
from support.meta_task import notes_round

from dynadesk.hub import identity
from dynadesk.store import annotation_meta
from dynadesk.workspace import Workspace

pytestmark = pytest.mark.timeout(600)


@pytest.fixture(scope="module")
def hub(tmp_path_factory) -> Iterator[dict[str, Any]]:
    root = tmp_path_factory.mktemp("hubmeta")
    home = root / "ws"
    notes_round(home, root / "models")
    with hub_in_thread(home) as h:
        yield {"home": home, "url": h.url}


def code(home, name: str, role: str = "annotator") -> str:
    st = Workspace(home).open_store()
    try:
        return identity.invite(st, name, role).code
    finally:
        st.close()


def stored(home) -> dict[str, Any]:
    """uid -> (the example, its metadata values, {voter: (verdict, reason, the vote's values)})."""
    st = Workspace(home).open_store()
    try:
        out = {}
        for e in st.annotation.examples("sentiment_notes"):
            meta = annotation_meta.of(st, [e.uid, *(v.uid for v in e.validations)])
            out[e.uid] = (e, meta.get(e.uid), {v.annotator: (v.verdict, v.reason, meta.get(v.uid))
                                                for v in e.validations})
        return out
    finally:
        st.close()


def serious(page) -> list[str]:
    """axe-core's serious or critical violations on the page as it is now (the hub's other a11y checks' rule)."""
    from axe_playwright_python.sync_playwright import Axe

    found = Axe().run(page, options={"resultTypes": ["violations"], "runOnly": {
        "type": "tag", "values": ["wcag2a", "wcag2aa", "wcag21a", "wcag21aa", "best-practice"]}})
    return [f"{v['id']}: {v['help']} at {[n['target'] for n in v['nodes']][:3]}"
            for v in found.response["violations"] if v.get("impact") in ("serious", "critical")]


def create(client: Client, text: str, **extra: Any):
    return client.post("/api/examples", {"task": "sentiment_notes", "inputs": {"statement": text},
                                         "target": "negative", "request_id": rid(text), **extra})


def test_the_api_takes_declared_fields_and_refuses_missing_or_unknown_ones(hub):
    home = hub["home"]
    writer = Client(hub["url"], code(home, "wren"))
    (task,) = [t for t in writer.get("/api/tasks").json() if t["name"] == "sentiment_notes"]
    assert [f["name"] for f in task["create_fields"]] == ["rationale", "topic"]
    assert task["create_fields"][1]["labels"] == ["food", "film", "other"]
    assert task["validate_fields"][0] == {"name": "flag_reason", "type": "multiclass", "required": True,
                                          "labels": ["offensive", "unclear", "wrong_label"], "when": "flagged"}

    before = set(stored(home))
    r = create(writer, "the soup was cold")
    assert r.status_code == 422 and "metadata field 'rationale' is required" in r.json()["detail"], r.text
    r = create(writer, "the soup was cold", fields={"rationale": "sarcasm", "mood": "sad"})
    assert r.status_code == 422 and "mood not declared" in r.json()["detail"], r.text
    r = create(writer, "the soup was cold", fields={"rationale": "sarcasm", "topic": "sports"})
    assert r.status_code == 422 and "'topic' is 'sports'" in r.json()["detail"], r.text
    r = create(writer, "the soup was cold", fields=["rationale"])
    assert r.status_code == 422 and "fields must be a mapping" in r.json()["detail"], r.text
    r = create(writer, "the soup was cold", fields={"rationale": "hidden \u202e text"})
    assert r.status_code == 422 and "fields.rationale holds U+202E" in r.json()["detail"], r.text
    assert set(stored(home)) == before  # nothing refused was stored

    r = create(writer, "the soup was cold", fields={"rationale": " sarcasm ", "topic": "food"})
    assert r.status_code == 200, r.text
    uid = r.json()["uid"]
    assert stored(home)[uid][1] == {"rationale": "sarcasm", "topic": "food"}

    voter = Client(hub["url"], code(home, "vic"))
    vote = {"uid": uid, "verdict": "flagged"}
    r = voter.post("/api/votes", {**vote, "request_id": rid("v1")})
    assert r.status_code == 422 and "'flag_reason' is required" in r.json()["detail"], r.text
    r = voter.post("/api/votes", {**vote, "fields": {"flag_reason": "unclear", "corrected_why": "x"},
                                  "request_id": rid("v2")})
    assert r.status_code == 422 and "corrected_why not declared" in r.json()["detail"], r.text
    assert stored(home)[uid][2] == {}
    r = voter.post("/api/votes", {**vote, "fields": {"flag_reason": "unclear"}, "request_id": rid("v3")})
    assert r.status_code == 200, r.text
    assert stored(home)[uid][2] == {"vic": ("flagged", "flag_reason: unclear", {"flag_reason": "unclear"})}


@pytest.mark.browser
def test_the_page_shows_enforces_and_sends_the_fields_by_keyboard(hub, browser):
    home, url = hub["home"], hub["url"]
    before = set(stored(home))
    amy = browser.new_context().new_page()
    amy.goto(url + "/")
    amy.wait_for_function("() => document.activeElement && document.activeElement.id === 'code'")
    amy.keyboard.type(code(home, "amy"))
    amy.keyboard.press("Enter")
    amy.wait_for_selector("#app[data-ready='sentiment_notes']", state="attached")
    amy.keyboard.press("Escape")  # the guidelines
    # the create fields: a labelled text box and a radio group with nothing chosen
    assert "why the model should get it wrong" in amy.text_content("label[for='meta-create-rationale']")
    assert amy.locator("#create-meta input[name='meta-create-topic']").count() == 3
    assert amy.locator("#create-meta input:checked").count() == 0
    assert amy.get_attribute("#meta-create-rationale", "aria-required") == "true"

    amy.keyboard.type("the soup was cold and the waiter rude")
    amy.keyboard.press("Escape")
    amy.keyboard.press("1")  # negative
    amy.keyboard.press("Control+Enter")
    amy.wait_for_selector("#error:not([hidden])")
    assert "rationale" in amy.text_content("#error") and set(stored(home)) == before  # refused by the page
    assert amy.evaluate("document.activeElement.id") == "meta-create-rationale"  # ... which takes her there
    assert serious(amy) == []  # the create form with its fields, error shown
    amy.keyboard.type("sarcasm the model misses")
    amy.keyboard.press("Tab")  # into the topic group: its first choice, then Space chooses it
    assert amy.evaluate("document.activeElement.name") == "meta-create-topic"
    amy.keyboard.press("ArrowRight")  # arrows move through the group and choose: film
    amy.keyboard.press("Control+Enter")
    amy.wait_for_selector("#result:not([hidden])")
    uid = amy.get_attribute("#result", "data-uid")
    assert stored(home)[uid][1] == {"rationale": "sarcasm the model misses", "topic": "film"}
    amy.keyboard.press("Enter")  # write another: the fields are cleared
    amy.wait_for_selector("#result", state="hidden")
    assert amy.input_value("#meta-create-rationale") == "" and amy.locator("#create-meta input:checked").count() == 0

    # bo flags it: F shows the flag's fields (a flag reason), nothing chosen; F again without one is refused
    bo = browser.new_context().new_page()
    bo.goto(url + "/")
    bo.fill("#code", code(home, "bo"))
    bo.click("#signin-button")
    bo.wait_for_selector("#app[data-ready='sentiment_notes']", state="attached")
    bo.keyboard.press("Escape")
    bo.keyboard.press("Escape")
    bo.keyboard.press("v")
    bo.wait_for_selector("#val-example:not([hidden])")
    skipped = 0
    while bo.get_attribute("#val-example", "data-uid") != uid:  # the API test's example may come first
        old = bo.get_attribute("#val-example", "data-uid")
        bo.keyboard.press("s")
        bo.wait_for_function("old => document.getElementById('val-example').dataset.uid !== old", arg=old)
        skipped += 1
        assert skipped < 3, "amy's example is not offered to bo"
    assert bo.is_hidden("#val-meta-flagged") and bo.is_hidden("#val-meta-incorrect")
    bo.keyboard.press("f")
    bo.wait_for_selector("#val-meta-flagged:not([hidden])")
    assert bo.locator("#val-meta input:checked").count() == 0
    assert bo.evaluate("document.activeElement.name") == "meta-validate-flag_reason"
    bo.keyboard.press("f")
    bo.wait_for_selector("#error:not([hidden])")
    assert "flag_reason" in bo.text_content("#error") and stored(home)[uid][2] == {}
    assert serious(bo) == []  # the validation view with the flag's fields shown
    bo.keyboard.press("ArrowRight")  # offensive -> unclear
    bo.keyboard.press("Enter")  # Enter in the flag's fields flags
    bo.wait_for_function("old => document.getElementById('val-example').dataset.uid !== old", arg=uid)
    assert stored(home)[uid][2] == {"bo": ("flagged", "flag_reason: unclear", {"flag_reason": "unclear"})}
    assert "Recorded: flagged" in bo.text_content("#val-result") and bo.is_visible("#key-legend")
