"""Live prediction keeps warm adapters (LRU by digest), validates inputs and is thread-safe."""

from __future__ import annotations

from concurrent.futures import ThreadPoolExecutor

import pytest
from support.tiny_models import make_tiny_classifier, make_tiny_qa

from dynadesk.errors import ModelError, NotFoundError, ValidationError
from dynadesk.models import LivePredictor, predict_live, register_model

SENT = ["negative", "neutral", "positive"]


@pytest.fixture(scope="module")
def folders(tmp_path_factory):
    root = tmp_path_factory.mktemp("live")
    return {
        "a": make_tiny_classifier(root / "a", SENT, seed=1),
        "b": make_tiny_classifier(root / "b", SENT, seed=2),
        "nli": make_tiny_classifier(root / "nli", ["entailment", "neutral", "contradiction"], task="nli", seed=3),
        "qa": make_tiny_qa(root / "qa", seed=4),
    }


def test_lru_keeps_warm_adapters_by_digest(store, folders):
    for key in ("a", "b", "nli"):
        register_model(store, folders[key], "nli" if key == "nli" else "sentiment", name=key)
    live = LivePredictor(capacity=2)
    a, b, nli = (store.models.get(n) for n in ("a", "b", "nli"))
    first = live.adapter(a)
    assert live.adapter(a) is first  # warm: the same loaded model
    live.predict(b, {"statement": "fine"})
    assert live.loaded() == [a.digest, b.digest]
    live.adapter(a)  # touch a: b becomes least recently used
    live.predict(nli, {"context": "a man sleeps", "hypothesis": "a man is awake"})
    assert live.loaded() == [a.digest, nli.digest]
    assert live.adapter(a) is first
    # A second name for the same folder shares the warm model (same digest).
    register_model(store, folders["a"], "sentiment", name="a-again")
    assert live.adapter(store.models.get("a-again")) is first


def test_predictions_match_the_adapter_and_are_repeatable(store, folders):
    from dynadesk.evaluator.adapters import load_adapter

    register_model(store, folders["a"], "sentiment", name="a")
    want = load_adapter(folders["a"]).predict([{"statement": "I loved every minute of it"}])[0]
    got = [predict_live(store, "a", {"statement": "I loved every minute of it"}) for _ in range(3)]
    assert got[0] == got[1] == got[2]
    assert got[0]["label"] == want["label"]
    assert got[0]["probs"] == pytest.approx(want["probs"], abs=1e-6)


def test_qa_live_answer_is_a_span(store, folders):
    register_model(store, folders["qa"], "qa", name="qa")
    ctx = "The Seine flows through Paris, the capital of France."
    pred = predict_live(store, "qa", {"context": ctx, "question": "Which river flows through Paris?"})
    assert pred["answer"] == ctx[pred["start"]:pred["end"]] and pred["answer"]


def test_bad_inputs_name_the_field(store, folders):
    register_model(store, folders["nli"], "nli", name="nli")
    with pytest.raises(ValidationError) as err:
        predict_live(store, "nli", {"context": "  ", "premise": "x"})
    text = str(err.value)
    assert "'context' is missing or empty" in text and "'hypothesis' is missing" in text
    assert "unknown field(s) premise" in text
    with pytest.raises(NotFoundError, match="no model named 'ghost'"):
        predict_live(store, "ghost", {"statement": "x"})


def test_missing_folder_is_a_model_error(store, tmp_path):
    folder = make_tiny_classifier(tmp_path / "gone", SENT)
    register_model(store, folder, "sentiment", name="gone")
    import shutil

    shutil.rmtree(folder)
    with pytest.raises(ModelError, match="its folder .* is gone"):
        LivePredictor().predict(store.models.get("gone"), {"statement": "x"})


def test_threads_share_one_warm_model(store, folders):
    register_model(store, folders["b"], "sentiment", name="b")
    live = LivePredictor()
    rec = store.models.get("b")
    texts = [f"review number {i} was good" for i in range(12)]
    serial = [live.predict(rec, {"statement": t}) for t in texts]
    with ThreadPoolExecutor(4) as pool:
        parallel = list(pool.map(lambda t: live.predict(rec, {"statement": t}), texts))
    assert parallel == serial
    assert live.loaded() == [rec.digest]
