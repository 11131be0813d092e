"""Reliability of the data path: fuzzed imports and task files, kill -9 mid-import, hostile text."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from dynadesk.data import FileReading, import_dataset
from dynadesk.errors import ConfigError, DynaDeskError, ValidationError
from dynadesk.tasks import parse_task

EXAMPLES = 1000 if os.environ.get("DYNADESK_LONG") == "1" else 60

json_values = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False) | st.text(max_size=20),
    lambda children: st.lists(children, max_size=4) | st.dictionaries(st.text(max_size=8), children, max_size=4),
    max_leaves=10)
field_names = st.sampled_from(["id", "statement", "label", "tags", "metadata", "context", "answers", "x"])
example = st.dictionaries(field_names, json_values | st.sampled_from(["positive", "neutral", "negative"]),
                          max_size=5)


@settings(max_examples=EXAMPLES, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(lines=st.lists(example | st.binary(max_size=40), min_size=1, max_size=6))
def test_fuzzed_jsonl_import_never_crashes_and_is_all_or_nothing(store, tmp_path_factory, lines):
    path = tmp_path_factory.mktemp("fuzz") / "f.jsonl"
    with open(path, "wb") as fh:
        for line in lines:
            fh.write((json.dumps(line).encode() if isinstance(line, dict) else line.replace(b"\n", b" ")) + b"\n")
    before = store.db.execute("SELECT COUNT(*) FROM examples").fetchone()[0]
    try:
        summary = import_dataset(store, "sentiment", path, name="fuzz", replace=True)
    except ValidationError as exc:
        assert exc.problems or "no examples" in str(exc)
        assert all(p.startswith("line ") for p in exc.problems)
        assert store.db.execute("SELECT COUNT(*) FROM examples").fetchone()[0] == before
    else:
        assert summary.size == len(store.datasets.examples("fuzz"))


@settings(max_examples=EXAMPLES, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(cells=st.lists(st.lists(st.text(max_size=15), min_size=1, max_size=4), min_size=1, max_size=5))
def test_fuzzed_csv_import_never_crashes(store, tmp_path_factory, cells):
    path = tmp_path_factory.mktemp("fuzzcsv") / "f.csv"
    import csv

    with open(path, "w", newline="", encoding="utf-8") as fh:
        w = csv.writer(fh)
        w.writerow(["id", "statement", "label"])
        w.writerows(cells)
    try:
        import_dataset(store, "sentiment", path, name="fuzzcsv", replace=True)
    except ValidationError as exc:
        assert "line" in str(exc) or "no examples" in str(exc)


task_keys = st.sampled_from(["name", "inputs", "output", "metric", "fooled_rule", "perturbations", "validation", "zz"])


@settings(max_examples=EXAMPLES * 2, deadline=None)
@given(raw=st.dictionaries(task_keys, json_values, max_size=7) | json_values)
def test_fuzzed_task_files_fail_with_config_error_only(raw):
    try:
        parse_task(raw, "fuzz.yaml")
    except ConfigError as exc:
        assert str(exc).startswith("fuzz.yaml")


HOSTILE = [
    "Robert'); DROP TABLE examples;--",
    "\" OR 1=1 --",
    "%s %d {0} ${HOME} $(rm -rf /)",
    "\u202eevil\u202c \u0000nul",
    "💥" * 100,
]


def test_sql_metacharacters_and_odd_unicode_are_stored_verbatim(store, tmp_path):
    rows = [{"id": f"h{i}", "statement": s, "label": "neutral"} for i, s in enumerate(HOSTILE)]
    path = tmp_path / "h.jsonl"
    path.write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    import_dataset(store, "sentiment", path, name="hostile'; DROP TABLE datasets;--")
    assert [e["statement"] for e in store.datasets.examples("hostile'; DROP TABLE datasets;--")] == HOSTILE
    assert store.integrity_check() == "ok"


@pytest.mark.parametrize("bad_id", ["../../etc/passwd", "a/b", "..", "x\\y", ""])
def test_path_traversal_example_ids_are_rejected(store, tmp_path, bad_id):
    path = tmp_path / "ids.jsonl"
    path.write_text(json.dumps({"id": bad_id, "statement": "x", "label": "neutral"}) + "\n")
    with pytest.raises(ValidationError, match="line 1: field 'id'"):
        import_dataset(store, "sentiment", path)


IMPORTER = """
import sys
from dynadesk.workspace import Workspace
from dynadesk.data import import_dataset
store = Workspace(sys.argv[1]).open_store()
for i in range(10_000):
    import_dataset(store, "sentiment", sys.argv[2], name=f"d{i}")
    print(f"d{i}", flush=True)
"""


def test_kill_9_during_imports_leaves_no_half_imported_dataset(home, tmp_path):
    src = tmp_path / "big.jsonl"
    src.write_text("".join(json.dumps({"id": str(i), "statement": f"text number {i} " * 5, "label": "neutral"}) + "\n"
                           for i in range(3000)))
    proc = subprocess.Popen([sys.executable, "-c", IMPORTER, str(home), str(src)], stdout=subprocess.PIPE, text=True)
    reported = []
    deadline = time.monotonic() + 60
    while len(reported) < 3 and time.monotonic() < deadline:
        line = proc.stdout.readline()
        if not line:
            break
        reported.append(line.strip())
    time.sleep(0.15)  # land somewhere inside the next import
    proc.send_signal(signal.SIGKILL)
    proc.wait()
    assert len(reported) >= 3, "the importer did not get going"
    from dynadesk.workspace import Workspace

    store = Workspace(home).open_store()
    assert store.integrity_check() == "ok"
    stored = {d.name: d for d in store.datasets.list()}
    for name in reported:
        assert name in stored
    for d in stored.values():  # every visible dataset is complete
        assert d.size == 3000 == len(store.datasets.examples(d.name))
    orphans = store.db.execute(
        "SELECT COUNT(*) FROM examples WHERE dataset_id NOT IN (SELECT id FROM datasets)").fetchone()[0]
    assert orphans == 0


def test_unreadable_database_is_a_store_error(tmp_path):
    from dynadesk.store import Store

    bad = tmp_path / "not.db"
    bad.write_bytes(b"this is not a database" * 100)
    with pytest.raises(DynaDeskError, match="cannot open workspace database"):
        Store.open(bad)


public_names = st.sampled_from(["uid", "id", "pairID", "context", "hypothesis", "premise", "sentence1", "sentence2",
                                "gold_label", "label", "question", "answers", "text", "reason", "metadata",
                                "annotator_labels", "is_impossible", "title", "data", "paragraphs", "qas"])
public_values = json_values | st.sampled_from(["e", "n", "c", "-", "entailment", 0, 1, -1]) | st.fixed_dictionaries(
    {"text": st.lists(st.text(max_size=5), max_size=2), "answer_start": st.lists(st.integers(), max_size=2)})
public_row = st.dictionaries(public_names, public_values, max_size=6)


@settings(max_examples=EXAMPLES, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(rows=st.lists(public_row, min_size=1, max_size=4), fmt=st.sampled_from(
    ["jsonl", "dynabench", "snli", "hf", "squad"]), task=st.sampled_from(["nli", "qa", "sentiment"]),
    field_map=st.dictionaries(st.sampled_from(["context", "id", "label"]), public_names, max_size=2),
    squad_doc=st.booleans())
def test_fuzzed_public_formats_fail_only_with_validation_errors(store, tmp_path_factory, rows, fmt, task,
                                                                 field_map, squad_doc):
    from dynadesk.data import import_file
    from dynadesk.formats import Mapping

    path = tmp_path_factory.mktemp("pub") / "f.json"
    if squad_doc:
        doc = {"version": "v2.0", "data": [{"title": "t", "paragraphs": [{"context": "c", "qas": rows}]}, rows[0]]}
        path.write_text(json.dumps(doc), encoding="utf-8")
    else:
        path.write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    before = store.db.execute("SELECT COUNT(*) FROM examples").fetchone()[0]
    try:
        out = import_file(store, task, path, name="pub", reading=FileReading(fmt, Mapping(field_map, {"x": "y"})),
                          replace=True)
    except ValidationError as exc:
        assert str(exc)
        assert store.db.execute("SELECT COUNT(*) FROM examples").fetchone()[0] == before
    else:
        assert out.summary.size == len(store.datasets.examples("pub"))
