"""Adapters over real (tiny, random) transformers folders and the two baselines."""

from __future__ import annotations

import json
import math

import pytest
from support.tiny_models import make_tiny_classifier, make_tiny_qa

from dynadesk.evaluator import adapters as ad
from dynadesk.models.bow import BowTraining, train_bag_of_words, write_majority

NLI = ["entailment", "neutral", "contradiction"]
SENT = ["negative", "neutral", "positive"]


@pytest.fixture(scope="module")
def nli_dir(tmp_path_factory):
    return make_tiny_classifier(tmp_path_factory.mktemp("nli"), NLI, task="nli")


@pytest.fixture(scope="module")
def qa_dir(tmp_path_factory):
    return make_tiny_qa(tmp_path_factory.mktemp("qa"))


def test_classifier_returns_labels_with_probabilities(nli_dir):
    adapter = ad.load_adapter(nli_dir)
    batch = [{"context": "the movie was good", "hypothesis": "it was bad"},
             {"context": "paris is the capital of france", "hypothesis": "paris is in germany"}]
    preds = adapter.predict(batch)
    assert len(preds) == 2
    for p in preds:
        assert set(p["probs"]) == set(NLI)
        assert math.isclose(sum(p["probs"].values()), 1.0, rel_tol=1e-5)
        assert p["label"] == max(p["probs"], key=p["probs"].get)


def test_per_batch_padding_keeps_order_and_results(nli_dir):
    """A short example predicts the same alone as padded next to a long one, and order is kept."""
    adapter = ad.load_adapter(nli_dir)
    short = {"context": "ok", "hypothesis": "fine"}
    long = {"context": " ".join(["the story of the city and the river"] * 5), "hypothesis": "it was a bad day"}
    alone_short, alone_long = adapter.predict([short])[0], adapter.predict([long])[0]
    both = adapter.predict([long, short])
    for got, want in ((both[0], alone_long), (both[1], alone_short)):
        for label in NLI:
            assert got["probs"][label] == pytest.approx(want["probs"][label], abs=1e-5)
    assert adapter.predict([long, short]) == both  # deterministic


def test_hate_speech_single_input_and_pair_length_limit(tmp_path):
    folder = make_tiny_classifier(tmp_path / "hs", ["not-hateful", "hateful"], task="hate_speech")
    adapter = ad.load_adapter(folder)
    very_long = "word " * 5000  # truncated to max_length, not an error
    preds = adapter.predict([{"statement": "they are nice people"}, {"statement": very_long}])
    assert [set(p["probs"]) for p in preds] == [{"not-hateful", "hateful"}] * 2


def test_missing_input_field_is_named(nli_dir):
    adapter = ad.load_adapter(nli_dir)
    with pytest.raises(ad.AdapterError, match=r"batch\[1\]: input field 'hypothesis'"):
        adapter.predict([{"context": "a", "hypothesis": "b"}, {"context": "a"}])


def test_qa_answers_are_spans_of_the_context(qa_dir):
    adapter = ad.load_adapter(qa_dir)
    contexts = ["Paris is the capital of France.",
                # Far longer than max_length=64 tokens: split into overlapping windows.
                " ".join(f"The river {i} runs through the city of Berlin in Germany." for i in range(40)),
                "Ünïcode café, naïve façade — and “quotes”."]
    batch = [{"context": c, "question": "What is the capital of France?"} for c in contexts]
    preds = adapter.predict(batch)
    for ctx, p in zip(contexts, preds):
        assert set(p) == {"answer", "start", "end", "score"}
        assert p["answer"] == ctx[p["start"]:p["end"]]
        assert p["answer"] and p["answer"] in ctx
        assert 0 < p["score"] <= 1
    assert adapter.predict(batch) == preds


def test_qa_answer_length_is_bounded(qa_dir):
    manifest = json.loads((qa_dir / ad.MANIFEST_NAME).read_text())
    adapter = ad.load_adapter(qa_dir, {**manifest, "max_answer_tokens": 2})
    ctx = "alpha beta gamma delta epsilon zeta eta theta iota kappa lambda mu"
    pred = adapter.predict([{"context": ctx, "question": "which letters?"}])[0]
    assert len(adapter.tokenizer(pred["answer"], add_special_tokens=False)["input_ids"]) <= 2


def test_pickle_only_folder_refused_unless_allowed(tmp_path):
    folder = make_tiny_classifier(tmp_path / "pk", SENT, pickle_weights=True)
    assert ad.pickle_only(folder)
    with pytest.raises(ad.PickleWeightsError, match="executes arbitrary code.*safetensors.*container"):
        ad.load_adapter(folder)
    safe = make_tiny_classifier(tmp_path / "safe", SENT)
    want = ad.load_adapter(safe).predict([{"statement": "good movie"}])[0]
    got = ad.load_adapter(folder, allow_pickle=True).predict([{"statement": "good movie"}])[0]
    assert got["label"] == want["label"]
    assert got["probs"]["positive"] == pytest.approx(want["probs"]["positive"], abs=1e-6)


def test_manifest_problems_are_listed(nli_dir):
    with pytest.raises(ad.AdapterError, match="'kind' must be one of"):
        ad.load_adapter(nli_dir, {"task": "nli", "kind": "magic", "inputs": ["context", "hypothesis"]})
    with pytest.raises(ad.AdapterError, match="'inputs' must be.*'labels' must list.*'max_length' must be"):
        ad.load_adapter(nli_dir, {"task": "nli", "kind": "majority", "inputs": [], "labels": ["one"],
                                  "max_length": 2})
    with pytest.raises(ad.AdapterError, match="3 outputs but the manifest lists 2 labels"):
        ad.load_adapter(nli_dir, {"task": "nli", "kind": "hf-sequence-classification",
                                  "inputs": ["context", "hypothesis"], "labels": ["a", "b"]})


def test_missing_folder_and_missing_manifest(tmp_path):
    with pytest.raises(ad.AdapterError, match="model folder not found"):
        ad.load_adapter(tmp_path / "nope")
    (tmp_path / "empty").mkdir()
    with pytest.raises(ad.AdapterError, match="manifest missing"):
        ad.load_adapter(tmp_path / "empty")


def _toy_examples():
    pos = ["great movie", "i loved it", "what a great film", "loved the story", "so good", "great fun"]
    neg = ["awful movie", "i hated it", "what a terrible film", "hated the story", "so bad", "terrible fun"]
    neu = ["it is a movie", "the film is long", "a story about a city", "it was made in paris", "a book", "a day"]
    return ([{"statement": s, "label": "positive"} for s in pos] + [{"statement": s, "label": "negative"} for s in neg]
            + [{"statement": s, "label": "neutral"} for s in neu])


def test_bag_of_words_learns_and_reloads_deterministically(tmp_path):
    examples = _toy_examples() * 4
    for name in ("a", "b"):
        train_bag_of_words(tmp_path / name, "sentiment", SENT, ["statement"], examples,
                           BowTraining(dim=16, epochs=30, seed=5))
    assert (tmp_path / "a" / ad.BOW_WEIGHTS).read_bytes() == (tmp_path / "b" / ad.BOW_WEIGHTS).read_bytes()
    adapter = ad.load_adapter(tmp_path / "a")
    preds = adapter.predict([{"statement": ex["statement"]} for ex in _toy_examples()])
    hits = sum(p["label"] == ex["label"] for p, ex in zip(preds, _toy_examples()))
    assert hits >= 15  # of 18 training sentences; chance is 6
    assert adapter.predict([{"statement": "zzz unknown words only"}])[0]["label"] in SENT  # empty bag is fine


def test_bow_tokens_are_deterministic_and_field_scoped():
    assert ad.bow_tokens("Don't STOP!") == ["don't", "stop", "!", "don't stop", "stop !"]
    assert ad.bow_tokens("yes", 1) == ["1:yes"]


def test_majority_predicts_the_most_frequent_training_label(tmp_path):
    write_majority(tmp_path / "m", "sentiment", SENT, ["statement"], ["neutral", "positive", "neutral"])
    preds = ad.load_adapter(tmp_path / "m").predict([{"statement": "anything"}, {"statement": "else"}])
    assert [p["label"] for p in preds] == ["neutral", "neutral"]
    assert preds[0]["probs"] == pytest.approx({"negative": 0.0, "neutral": 2 / 3, "positive": 1 / 3})
