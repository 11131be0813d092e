"""Helpers shared by tests/annotation/: workspaces in tmp_path with tiny real models."""

from __future__ import annotations

import sqlite3
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from dynadesk import annotation as ann
from dynadesk.workspace import Workspace

SENTIMENT_LABELS = ["negative", "neutral", "positive"]
NLI_LABELS = ["entailment", "neutral", "contradiction"]


def build_tiny_models(root: Path) -> dict[str, Path]:
    """Tiny randomly initialised BERT folders (real transformers loading and forward pass)."""
    from support.tiny_models import make_tiny_classifier, make_tiny_qa

    root = Path(root)
    return {
        "sentiment": make_tiny_classifier(root / "tiny-sent", SENTIMENT_LABELS, task="sentiment", seed=1),
        "sentiment2": make_tiny_classifier(root / "tiny-sent2", SENTIMENT_LABELS, task="sentiment", seed=2),
        "nli": make_tiny_classifier(root / "tiny-nli", NLI_LABELS, task="nli", seed=3),
        "qa": make_tiny_qa(root / "tiny-qa", seed=4),
    }


def open_store(home: Path):
    return Workspace(Path(home)).open_store()


def register(store, models: dict[str, Path], key: str, task: str, name: str | None = None):
    from dynadesk.models import register_model

    return register_model(store, models[key], task, name=name or f"tiny-{key}")


def sentiment_round(store, models: dict[str, Path], people=(("ann1", "annotator"), ("ann2", "annotator"),
                                                            ("val1", "annotator"), ("val2", "annotator"))):
    """Annotators + a sentiment round against the tiny sentiment model."""
    for name, role in people:
        ann.add_annotator(store, name, role)
    register(store, models, "sentiment", "sentiment")
    return ann.new_round(store, "sentiment", ["tiny-sentiment"])


def create_some(store, who: str, texts: list[str], targets: list[str] | None = None, time_ms: int = 1000):
    """Submit one example per text; targets default to a label the tiny model may or may not miss."""
    out = []
    for i, text in enumerate(texts):
        target = (targets or SENTIMENT_LABELS)[i % len(targets or SENTIMENT_LABELS)]
        out.append(ann.submit_example(store, "sentiment", who, {"statement": text}, target,
                                      details=ann.ExampleDetails(time_ms=time_ms + i)))
    return out


def raw_db(path: Path) -> sqlite3.Connection:
    return sqlite3.connect(str(path))


def make_example(store, who: str, text: str, fooled: bool, task: str = "sentiment", model: str = "tiny-sentiment"):
    """Submit ``text`` with a target chosen from the model's live answer so the verdict is ``fooled``."""
    from dynadesk.models import predict_live

    said = predict_live(store, model, {"statement": text})["label"]
    labels = SENTIMENT_LABELS
    target = next(lab for lab in labels if lab != said) if fooled else said
    ex = ann.submit_example(store, task, who, {"statement": text}, target,
                            details=ann.ExampleDetails(time_ms=100 * len(text)))
    assert ex.fooled is fooled
    return ex


@contextmanager
def two_machines(tmp_path: Path, models: dict[str, Path], *, mutual: bool) -> Iterator[list]:
    """Machine A (amy, abe) and machine B (bea, bob), the same model and round 1 on each; B trusts A's
    pack key, and A trusts B's when ``mutual``."""
    stores = []
    for side, people in (("a", ("amy", "abe")), ("b", ("bea", "bob"))):
        st = open_store(tmp_path / side)
        for p in people:
            ann.add_annotator(st, p)
        register(st, models, "sentiment", "sentiment")
        ann.new_round(st, "sentiment", ["tiny-sentiment"])
        stores.append(st)
    a, b = stores
    ann.trust_key(b, ann.export_pack_key(a, tmp_path / "a.pub"))
    if mutual:
        ann.trust_key(a, ann.export_pack_key(b, tmp_path / "b.pub"))
    try:
        yield stores
    finally:
        for st in stores:
            st.close()
