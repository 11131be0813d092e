"""The hub page in a real browser: the opt-in generative assistant fills the drafted field, the annotator edits it
and submits, and the use is stored against that example; a served target is shown "served, not sandboxed"."""

from __future__ import annotations

import json

import pytest
from support.hub import hub_in_thread
from support.tiny_models import make_tiny_generative

from dynadesk import annotation as ann
from dynadesk.hub import identity
from dynadesk.models import register_model
from dynadesk.models.served import SERVED_NOTE, served_manifest
from dynadesk.workspace import Workspace

pytestmark = [pytest.mark.browser, pytest.mark.timeout(600)]


def _workspace(tmp_path):
    home = tmp_path / "ws"
    store = Workspace(home).ensure().open_store()
    try:
        lm = make_tiny_generative(tmp_path / "lm", "causal", "sentiment", labels=["negative", "neutral", "positive"])
        register_model(store, lm, "sentiment", name="tiny-lm")
        ann.new_round(store, "sentiment", ["tiny-lm"])
        remote = tmp_path / "remote"
        remote.mkdir()
        (remote / "dynadesk-model.json").write_text(json.dumps(served_manifest("http://127.0.0.1:9", "m",
                                                                               "hate_speech")))
        (remote / "endpoint.json").write_text(json.dumps({"endpoint": "http://127.0.0.1:9"}))
        register_model(store, remote, "hate_speech", name="remote")
        ann.new_round(store, "hate_speech", ["remote"])
        code = identity.invite(store, "ada", "annotator").code
    finally:
        store.close()
    return home, code


def test_the_assistant_drafts_in_the_page_and_a_served_target_is_marked(tmp_path, browser):
    home, code = _workspace(tmp_path)
    with hub_in_thread(home) as hub:
        page = browser.new_context().new_page()
        page.goto(hub.url + "/")
        page.fill("#code", code)
        page.click("#signin-button")
        page.wait_for_selector("#who:not([hidden])")
        for task in ("sentiment", "hate_speech"):
            if page.input_value("#task") != task:
                page.select_option("#task", task)
            page.wait_for_selector(f"#app[data-ready='{task}']", state="attached")
            page.keyboard.press("Escape")  # the guidelines shown on a first visit
            if task == "hate_speech":
                assert f"remote ({SERVED_NOTE})" in page.text_content("#round")
                assert page.is_hidden("#assistant")  # no generative target: nothing offered
                continue
            assert page.is_visible("#assistant")
            page.check("#target-positive")
            page.click("#suggest")
            page.wait_for_function("() => document.getElementById('assist-note').textContent.startsWith('Draft by')")
            assert "tiny-lm" in page.text_content("#assist-note")
            draft = page.input_value("#in-statement")
            page.fill("#in-statement", (draft + " and i loved every minute").strip())
            page.click("#submit")
            page.wait_for_function("() => { const r = document.getElementById('result');"
                                   " return !r.hidden && r.dataset.uid; }")
            uid = page.get_attribute("#result", "data-uid")
    store = Workspace(home).open_store()
    try:
        (row,) = store.assists.all()
        assert row["example_uid"] == uid and row["model"] == "tiny-lm" and row["draft"] == draft and row["edited"]
    finally:
        store.close()
