"""Hub examples a validator would misread (issue 45 item 3): text with a right-to-left override (U+202E), another
bidi control or a NUL is refused with 422 naming the field and the character, and nothing is stored; before, the
example was stored and shown reversed to the validator. Ordinary text with accents, emoji joiners and line breaks
passes."""

from __future__ import annotations

from pathlib import Path

import pytest
from support.hub import Client, build_workspace, hub_in_thread, invite, rid

from dynadesk.workspace import Workspace


@pytest.fixture(scope="module")
def home(tmp_path_factory) -> Path:
    root = tmp_path_factory.mktemp("hub-text")
    build_workspace(root / "home", root / "models")
    return root / "home"


def _count(home: Path) -> int:
    store = Workspace(home).open_store()
    try:
        return len(store.annotation.examples("sentiment"))
    finally:
        store.close()


@pytest.mark.parametrize(("field", "text", "named"), [
    ("statement", "I loved it \u202edab saw ti", "U+202E RIGHT-TO-LEFT OVERRIDE"),
    ("statement", "fine \u2067isolated\u2069", "U+2067"),
    ("statement", "nul\x00here", "U+0000"),
    ("explanation", "it says \u202epositive", "U+202E"),
])
def test_bidi_and_control_characters_in_an_example_are_refused(home: Path, field: str, text: str, named: str):
    code = invite(home, f"ann-{abs(hash(text)) % 10000}", "annotator")
    with hub_in_thread(home) as hub:
        ann = Client(hub.url, code)
        before = _count(home)
        body = {"task": "sentiment", "inputs": {"statement": "a plain statement"}, "target": "positive",
                "time_ms": 1000, "request_id": rid(text)}
        if field == "explanation":
            body["explanation"] = text
        else:
            body["inputs"] = {"statement": text}
        r = ann.post("/api/examples", body)
        assert r.status_code == 422, r.text
        where = "explanation" if field == "explanation" else "inputs.statement"
        assert where in r.json()["detail"] and named in r.json()["detail"], r.json()
        assert _count(home) == before
        family = "\U0001f469\u200d\U0001f469\u200d\U0001f467"  # an emoji sequence with zero-width joiners
        ok = ann.post("/api/examples", {"task": "sentiment", "inputs": {"statement": f"Café {family} was\ngood"},
                                        "target": "positive", "time_ms": 1000, "request_id": rid("ok" + text)})
        assert ok.status_code == 200, ok.text
