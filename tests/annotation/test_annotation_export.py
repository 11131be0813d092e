"""Export of a round in the task's schema, registration as a dataset, stable digests."""

from __future__ import annotations

import json

import pytest
from support.annotation import make_example, open_store, sentiment_round

from dynadesk import annotation as ann
from dynadesk.data import export_dataset, import_dataset
from dynadesk.datasets import dataset_digest
from dynadesk.errors import AlreadyExistsError, ValidationError


@pytest.fixture
def st(tmp_path, models):
    s = open_store(tmp_path / "ws")
    sentiment_round(s, models)
    yield s
    s.close()


def _populate(st):
    a = make_example(st, "ann1", "the film was great fun", fooled=True)
    b = make_example(st, "ann2", "a dull and sad book", fooled=False)
    c = make_example(st, "ann1", "service was fine i guess", fooled=True)
    for who in ("ann2", "val1", "val2"):
        ann.validate(st, a.uid, who, "correct")
    ann.validate(st, c.uid, "val1", "flagged", reason="unclear")
    return a, b, c


def test_export_schema_and_metadata(st, tmp_path):
    a, b, c = _populate(st)
    out = tmp_path / "r1.jsonl"
    assert ann.export_round(st, "sentiment", out) == 3
    rows = [json.loads(line) for line in out.read_text(encoding="utf-8").splitlines()]
    assert [r["id"] for r in rows] == [a.uid, b.uid, c.uid]  # creation order, stable ids
    first = rows[0]
    assert (first["statement"], first["label"]) == (a.inputs["statement"], a.target)
    assert set(first["tags"]) == {"round-1", "fooled", "verified-correct"}
    meta = first["metadata"]["annotation"]
    assert meta["model_output"] == a.model_output and meta["fooled"] is True and meta["verified_fooled"] is True
    assert [v["annotator"] for v in meta["validations"]] == ["ann2", "val1", "val2"]
    assert rows[2]["metadata"]["annotation"]["validations"][0] == {
        "annotator": "val1", "verdict": "flagged", "label": None, "reason": "unclear",
        "created_at": rows[2]["metadata"]["annotation"]["validations"][0]["created_at"]}
    only = ann.export_examples(st, "sentiment", status="verified-fooled")
    assert [r["id"] for r in only] == [a.uid]
    assert [r["id"] for r in ann.export_examples(st, "sentiment", status="fooled")] == [a.uid, c.uid]


def test_exported_round_imports_back_with_the_same_digest_twice(st, tmp_path):
    _populate(st)
    digests = []
    for i, fmt in enumerate(["jsonl", "jsonl", "csv", "csv"]):
        path = tmp_path / f"export{i}.{fmt}"
        ann.export_round(st, "sentiment", path, status="all")
        digests.append(import_dataset(st, "sentiment", path, name=f"adv-{i}").digest)
    registered = ann.register_round(st, "sentiment", "adv-registered", status="all")
    assert len(set(digests)) == 1 and registered.digest == digests[0]
    assert registered.size == 3 and registered.source == "annotation:sentiment/round-1/all"
    # the registered dataset exports/imports like any other
    again = tmp_path / "again.jsonl"
    export_dataset(st, "adv-registered", again)
    assert import_dataset(st, "sentiment", again, name="adv-again").digest == registered.digest
    assert dataset_digest(st.datasets.examples("adv-registered")) == registered.digest
    with pytest.raises(AlreadyExistsError):
        ann.register_round(st, "sentiment", "adv-registered")
    assert ann.register_round(st, "sentiment", "adv-registered", status="verified-fooled", replace=True).size == 1


def test_export_errors(st, tmp_path):
    with pytest.raises(ValidationError, match="no examples with status 'all'"):
        ann.export_round(st, "sentiment", tmp_path / "x.jsonl")
    _populate(st)
    with pytest.raises(ValidationError, match="status 'best'"):
        ann.export_examples(st, "sentiment", status="best")
    with pytest.raises(ValidationError, match="unknown export format"):
        ann.export_round(st, "sentiment", tmp_path / "x.jsonl", fmt="xml")
    with pytest.raises(ValidationError, match="split 'final'"):
        ann.register_round(st, "sentiment", "n", split="final")
