"""Dataset import/export: all-or-nothing imports with line-numbered errors, exact round trips."""

import json
import sqlite3

import pytest

from dynadesk.data import export_dataset, import_dataset
from dynadesk.errors import AlreadyExistsError, ValidationError


def _jsonl(path, rows):
    path.write_text("".join((r if isinstance(r, str) else json.dumps(r)) + "\n" for r in rows), encoding="utf-8")
    return path


def test_three_bad_lines_are_all_reported_and_nothing_is_stored(store, tmp_path):
    path = _jsonl(tmp_path / "mixed.jsonl", [
        {"id": "a", "statement": "great film", "label": "positive"},
        {"id": "b", "statement": "awful", "label": "terrible"},           # line 2: unknown label
        "{not json",                                                       # line 3: bad JSON
        {"id": "c", "statement": "ok", "label": "neutral"},
        {"id": "d", "statement": "", "label": "negative"},                # line 5: empty text
        {"id": "e", "statement": "fine", "label": "neutral"},
    ])
    with pytest.raises(ValidationError) as err:
        import_dataset(store, "sentiment", path, name="mixed")
    problems = err.value.problems
    assert [p.split(":")[0] for p in problems] == ["line 2", "line 3", "line 5"]
    assert "terrible" in problems[0] and "JSON" in problems[1] and "statement" in problems[2]
    assert not store.datasets.exists("mixed")
    assert store.db.execute("SELECT COUNT(*) FROM examples").fetchone()[0] == 0


def test_duplicate_ids_unknown_fields_and_qa_spans(store, tmp_path):
    path = _jsonl(tmp_path / "dup.jsonl", [
        {"id": "x", "statement": "a", "label": "positive"},
        {"id": "x", "statement": "b", "label": "positive", "colour": "red"},
    ])
    with pytest.raises(ValidationError) as err:
        import_dataset(store, "sentiment", path)
    assert "line 2" in str(err.value) and "colour" in str(err.value)
    qa = _jsonl(tmp_path / "qa.jsonl", [
        {"id": "q1", "context": "Paris is in France.", "question": "Where is Paris?", "answer": "France"},
        {"id": "q2", "context": "Paris is in France.", "question": "Where?", "answers": ["Spain"]},
    ])
    with pytest.raises(ValidationError, match="line 2: answer 'Spain' is not a substring"):
        import_dataset(store, "qa", qa)


def test_overlong_line_and_invalid_utf8_are_reported(store, tmp_path):
    path = tmp_path / "hostile.jsonl"
    with open(path, "wb") as fh:
        fh.write(json.dumps({"id": "ok", "statement": "fine", "label": "neutral"}).encode() + b"\n")
        fh.write(b'{"statement": "' + b"a" * (3 << 20) + b'"}\n')
        fh.write(b'{"statement": "\xff\xfe", "label": "neutral"}\n')
    with pytest.raises(ValidationError) as err:
        import_dataset(store, "sentiment", path)
    assert err.value.problems[0].startswith("line 2: ") and "limit" in err.value.problems[0]
    assert err.value.problems[1].startswith("line 3: not valid UTF-8")


@pytest.mark.parametrize("fmt", ["jsonl", "csv"])
def test_export_import_round_trip_is_exact(store, tmp_path, fmt):
    rows = [
        {"id": "p1", "context": "A man plays, \"loudly\".\nNew line.", "hypothesis": "Someone plays.",
         "label": ["entailment", "neutral"], "tags": ["quote", "multi"]},
        {"id": "p2", "context": "Ünïcödé ☃ text", "hypothesis": "Snow.", "label": "neutral",
         "metadata": {"source": "test", "n": 1.5}},
    ]
    first = import_dataset(store, "nli", _jsonl(tmp_path / "in.jsonl", rows), name="orig")
    out = tmp_path / f"out.{fmt}"
    assert export_dataset(store, "orig", out) == 2
    again = import_dataset(store, "nli", out, name="again")
    assert again.digest == first.digest
    assert store.datasets.examples("again") == store.datasets.examples("orig")
    assert first.label_counts == {"entailment": 1, "neutral": 2, "contradiction": 0}


def test_name_clash_needs_replace_and_keeps_old_data(store, tmp_path):
    p = _jsonl(tmp_path / "d.jsonl", [{"statement": "good", "label": "positive"}])
    first = import_dataset(store, "sentiment", p, name="d")
    with pytest.raises(AlreadyExistsError):
        import_dataset(store, "sentiment", p, name="d")
    assert store.datasets.get("d").digest == first.digest
    p2 = _jsonl(tmp_path / "d2.jsonl", [{"statement": "bad", "label": "negative"}])
    assert import_dataset(store, "sentiment", p2, name="d", replace=True).digest != first.digest


def test_store_is_a_real_wal_sqlite_file_with_foreign_keys(store):
    assert store.db.execute("PRAGMA journal_mode").fetchone()[0] == "wal"
    assert store.db.execute("PRAGMA foreign_keys").fetchone()[0] == 1
    assert store.integrity_check() == "ok"
    with sqlite3.connect(store.path) as conn:
        names = {r[0] for r in conn.execute("SELECT name FROM sqlite_master WHERE type='table'")}
    assert {"datasets", "examples", "models", "evaluations", "metric_values"} <= names


def test_reopening_applies_no_migration_twice(home):
    from dynadesk.workspace import Workspace

    ws = Workspace(home)
    a = ws.open_store()
    applied = a.db.execute("SELECT COUNT(*) FROM _sqlite_migrations").fetchone()[0]
    a.close()
    b = ws.open_store()
    assert b.db.execute("SELECT COUNT(*) FROM _sqlite_migrations").fetchone()[0] == applied
    b.close()
