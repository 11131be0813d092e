"""The Dynabench family as published: Dynabench's own files for every task, DynaSent, DynaHate CSV.

Each sample is the block of docs/data-formats.md (so the page shows what is imported), checked row by row.
"""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest
from support import REPO

from dynadesk.data import import_file
from dynadesk.errors import ValidationError
from dynadesk.formats import Mapping, read_examples
from dynadesk.formats.dynabench import MIXED, NO_GOLD
from dynadesk.tasks import get_task

DOC = REPO / "docs" / "data-formats.md"


def _sample(tmp_path: Path, file: str) -> Path:
    m = re.search(rf"<!-- example: [^>]*file={re.escape(file)}[^>]*-->\n```[a-z]*\n(.*?)\n```",
                  DOC.read_text(encoding="utf-8"), re.DOTALL)
    assert m, file
    path = tmp_path / file
    path.write_text(m.group(1) + "\n", encoding="utf-8")
    return path


def _ids_labels(examples: list[dict]) -> list[tuple[str, object]]:
    return [(e["id"], e.get("label", e.get("answers"))) for e in examples]


def test_dynabench_nli_labels_entailed_contradictory(tmp_path):
    r = read_examples(get_task("nli"), _sample(tmp_path, "dynabench_nli_r1_dev.jsonl"))
    assert r.format == "dynabench" and r.detected
    assert _ids_labels(r.examples) == [("nli-1", "entailment"), ("nli-2", "contradiction"), ("nli-3", "neutral")]


@pytest.mark.parametrize("task,file,expected", [
    ("sentiment", "dynabench_sentiment_r1_dev.jsonl", [("sent-1", "positive"), ("sent-2", "negative")]),
    ("hate_speech", "dynabench_hate_r1_dev.jsonl", [("hate-1", "not-hateful"), ("hate-2", "hateful")]),
])
def test_dynabench_single_input_files_with_empty_context(store, tmp_path, task, file, expected):
    outcome = import_file(store, task, _sample(tmp_path, file))
    assert outcome.format == "dynabench" and outcome.detected
    examples = list(store.datasets.iter_examples(outcome.summary.name))
    assert _ids_labels(examples) == expected
    assert all(set(e) == {"id", "statement", "label"} for e in examples)  # the "" context is no input


def test_dynabench_single_input_non_empty_context_is_kept_as_metadata(tmp_path):
    path = tmp_path / "s.jsonl"
    path.write_text(json.dumps({"uid": "a", "context": "a review", "statement": "Good.", "label": "positive"}) + "\n")
    (ex,) = read_examples(get_task("sentiment"), path).examples
    assert ex["metadata"] == {"context": "a review"}


def test_dynabench_qa_answer_string_or_list(tmp_path):
    r = read_examples(get_task("qa"), _sample(tmp_path, "dynabench_qa_r1_dev.jsonl"))
    assert r.format == "dynabench"
    assert _ids_labels(r.examples) == [("qa-1", ["France", "a region in France"]), ("qa-2", ["The Normans"])]


def test_dynasent_r1_train_leaves_out_mixed_and_null_gold(tmp_path):
    r = read_examples(get_task("sentiment"), _sample(tmp_path, "dynasent-v1.1-round01-yelp-train.jsonl"))
    assert r.format == "dynasent" and r.detected
    assert _ids_labels(r.examples) == [("r1-0000001", "positive"), ("r1-0000004", "neutral")]
    assert r.dropped == {MIXED: 1, NO_GOLD: 1}
    assert r.examples[0]["statement"].startswith("Roto-Rooter")
    assert r.examples[0]["metadata"]["review_rating"] == 1
    assert set(r.examples[0]["metadata"]["label_distribution"]) == {"positive", "negative", "neutral", "mixed"}


def test_dynasent_mixed_kept_when_mapped(tmp_path):
    path = _sample(tmp_path, "dynasent-v1.1-round01-yelp-train.jsonl")
    r = read_examples(get_task("sentiment"), path, mapping=Mapping(labels={"mixed": "neutral"}))
    assert _ids_labels(r.examples) == [("r1-0000001", "positive"), ("r1-0000002", "neutral"),
                                       ("r1-0000004", "neutral")]
    assert r.dropped == {NO_GOLD: 1}


def test_dynasent_r2_dev(tmp_path):
    r = read_examples(get_task("sentiment"), _sample(tmp_path, "dynasent-v1.1-round02-dynabench-dev.jsonl"))
    assert r.format == "dynasent" and not r.dropped
    assert _ids_labels(r.examples) == [("r2-0000001", "negative"), ("r2-0000002", "positive")]
    assert r.examples[0]["metadata"]["sentence_author"] == "w250"


def test_dynahate_csv_as_published(store, tmp_path):
    outcome = import_file(store, "hate_speech", _sample(tmp_path, "Dynamically_Generated_Hate_Dataset_v0.2.3.csv"),
                          all_splits=True)  # the file holds a train and a test row: each split its own dataset
    assert outcome.format == "dynahate" and outcome.detected and outcome.splits_found == {"train": 1, "test": 1}
    examples = [ex for s in [outcome.summary, *outcome.also] for ex in store.datasets.iter_examples(s.name)]
    assert _ids_labels(examples) == [("acl1", "hateful"), ("acl10", "not-hateful")]
    first, second = examples
    assert first["statement"] == "dalits are lowlife scum"
    assert first["metadata"] == {"X1": "1", "type": "notgiven", "target": "notgiven", "level": "original",
                                 "split": "train", "round.base": "1", "annotator": "GNZuCtwed3", "round": "1"}
    assert "target" not in second["metadata"] and "acl.id.matched" not in second["metadata"]  # NA = missing
    assert "" not in first["metadata"]  # the row-number column is ignored


def test_keep_extra_moves_unknown_fields_to_metadata(tmp_path):
    path = tmp_path / "t.jsonl"
    path.write_text(json.dumps({"id": "a", "statement": "Good.", "label": "positive", "source": "web",
                                "metadata": {"k": 1}}) + "\n")
    with pytest.raises(ValidationError) as err:
        read_examples(get_task("sentiment"), path)
    assert "unknown field(s) source" in str(err.value)
    (ex,) = read_examples(get_task("sentiment"), path, mapping=Mapping(keep_extra=True)).examples
    assert ex["metadata"] == {"source": "web", "k": 1}
    csv = tmp_path / "t.csv"
    csv.write_text("id,text,label,source\na,Good.,positive,web\n")
    (ex,) = read_examples(get_task("sentiment"), csv, mapping=Mapping(keep_extra=True)).examples
    assert ex["metadata"] == {"source": "web"}


def test_hint_never_proposes_an_empty_or_row_number_column(tmp_path):
    csv = tmp_path / "rows.csv"
    csv.write_text('"",tweet,sentiment\n"1",Good day,positive\n')
    with pytest.raises(ValidationError) as err:
        read_examples(get_task("sentiment"), csv)
    text = str(err.value)
    assert "--map statement=tweet" in text and "--map label=sentiment" in text
    assert "=;" not in text and not re.search(r"--map \w+=(\s|$|;|,)", text)
    glue = tmp_path / "test.tsv"
    glue.write_text("index\tsentence\n0\tit is charming\n")
    with pytest.raises(ValidationError) as err:
        read_examples(get_task("sentiment"), glue)
    text = str(err.value)
    assert "label=index" not in text and "no column holds the gold label" in text
