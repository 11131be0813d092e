"""The generative annotation assistant (dynadesk/annotation/assistant.py): a generative target of the open round
drafts the example's free-text field; the use is recorded per example against the draft the hub proposed, and the
round statistics count it. In the library and through the hub's API (a real hub on loopback, a tiny causal LM)."""

from __future__ import annotations

import pytest
from support.hub import Client, dynadesk, hub_in_thread, rid
from support.tiny_models import make_tiny_classifier, make_tiny_generative

from dynadesk import annotation as ann
from dynadesk.annotation.assistant import assistant_prompt, propose, record_use, similarity
from dynadesk.errors import AnnotationError, ValidationError
from dynadesk.hub import identity
from dynadesk.models import register_model
from dynadesk.tasks import get_task
from dynadesk.workspace import Workspace

LABELS = ["negative", "neutral", "positive"]


@pytest.fixture(scope="module")
def models(tmp_path_factory):
    root = tmp_path_factory.mktemp("assist-models")
    return {"lm": make_tiny_generative(root / "lm", "causal", "sentiment", labels=LABELS),
            "bert": make_tiny_classifier(root / "bert", LABELS, task="sentiment", seed=1)}


def _workspace(home, models, targets=("tiny-lm",)):
    store = Workspace(home).ensure().open_store()
    register_model(store, models["lm"], "sentiment", name="tiny-lm")
    register_model(store, models["bert"], "sentiment", name="tiny-bert")
    ann.add_annotator(store, "ann1", "annotator")
    ann.new_round(store, "sentiment", list(targets))
    return store


def test_a_draft_is_the_generative_targets_and_its_use_is_counted(tmp_path, models):
    store = _workspace(tmp_path / "ws", models)
    try:
        draft = propose(store, "sentiment", label="positive")
        assert draft.model == "tiny-lm" and draft.field == "statement" and draft.label == "positive"
        assert propose(store, "sentiment", label="positive") == draft  # greedy: the same draft again
        prompt = assistant_prompt(get_task("sentiment"), "statement", {}, "positive")
        assert 'whose correct label is "positive"' in prompt and prompt.endswith("statement:")
        edited = (draft.text + " but i really loved it").strip()
        ex = ann.submit_example(store, "sentiment", "ann1", {"statement": edited}, "positive")
        use = record_use(store, ex, draft)
        assert use.edited and use.similarity == similarity(draft.text, edited) < 1.0
        ann.submit_example(store, "sentiment", "ann1", {"statement": "a film i hated"}, "negative")
        stats = ann.round_stats(store, "sentiment")
        a = stats.assistant
        assert (a["assisted"], a["edited"], a["unassisted"]) == (1, 1, 1)
        assert a["mer_assisted"] == float(ex.fooled) and stats.to_dict()["assistant"] == a
        assert store.assists.all()[0]["example_uid"] == ex.uid
    finally:
        store.close()
    shown = dynadesk(tmp_path / "ws", "rounds", "stats", "sentiment").stdout
    assert "generative assistant: 1 examples written from a draft (1 edited)" in shown, shown


def test_the_assistant_needs_a_generative_target_and_a_label(tmp_path, models):
    store = _workspace(tmp_path / "ws", models, targets=("tiny-bert",))
    try:
        with pytest.raises(AnnotationError, match="has no generative target"):
            propose(store, "sentiment", label="positive")
        ann.new_round(store, "sentiment", ["tiny-bert", "tiny-lm"])
        with pytest.raises(ValidationError, match="needs the label the example should have"):
            propose(store, "sentiment")
        with pytest.raises(ValidationError, match="'tiny-bert' is not a generative target"):
            propose(store, "sentiment", label="positive", model="tiny-bert")
    finally:
        store.close()


def test_the_hub_proposes_a_draft_and_records_the_one_it_proposed(tmp_path, models):
    home = tmp_path / "ws"
    store = _workspace(home, models)
    try:
        code = identity.invite(store, "ann1", "annotator").code
    finally:
        store.close()
    with hub_in_thread(home) as hub:
        a = Client(hub.url, code)
        task = next(t for t in a.get("/api/tasks").json() if t["name"] == "sentiment")
        assert task["assistant"] == ["tiny-lm"]
        body = {"task": "sentiment", "inputs": {"statement": "a fine film"}, "target": "positive", "assisted": True}
        refused = a.post("/api/examples", {**body, "request_id": rid(1)})
        assert refused.status_code == 422 and "no draft for 'sentiment' was proposed" in refused.text
        draft = a.post("/api/assist", {"task": "sentiment", "label": "positive"})
        assert draft.status_code == 200, draft.text
        text = draft.json()["text"]
        made = a.post("/api/examples", {**body, "inputs": {"statement": text + " indeed"}, "request_id": rid(2)})
        assert made.status_code == 200, made.text
        assert made.json()["assist"]["model"] == "tiny-lm" and made.json()["assist"]["draft"] == text
        plain = a.post("/api/examples", {**body, "assisted": False, "request_id": rid(3)})
        assert plain.status_code == 200 and "assist" not in plain.json()
        again = a.post("/api/examples", {**body, "request_id": rid(4)})  # the draft was used up
        assert again.status_code == 422
        stats = a.get("/api/stats", task="sentiment").json()["assistant"]
        assert (stats["assisted"], stats["unassisted"], stats["edited"]) == (1, 1, 1)
