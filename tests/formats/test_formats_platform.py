"""Dynabench's platform round export (input_json/context_json), the aqa_v1.0 JSON lines Dynabench's QA loader
reads, and SQuAD/SNLI files feeding own tasks of the same kind."""

from __future__ import annotations

import json

from test_formats_cli import run_cli

from dynadesk.data import import_file
from dynadesk.formats import detect_format
from dynadesk.formats.dynabench_export import RETRACTED


def _ctx(cid: int, context: str) -> dict:
    return {"id": cid, "r_realid": 7, "context_json": json.dumps({"context": context}), "metadata_json": "{}",
            "tag": None, "total_used": 3}


# As get_round_data_for_export returns it: Example.to_dict() (less split/uid/user) + context, anon_uid, validations.
EXPORT = [
    {"id": 101, "cid": 11, "tag": None, "input_json": json.dumps({"hypothesis": "The film is short.",
                                                                  "label": "contradictory"}),
     "output_json": json.dumps({"label": "entailed", "prob": {"entailed": 0.7}}), "metadata_json": "{}",
     "model_wrong": True, "retracted": False, "flagged": False, "total_verified": 2,
     "context": _ctx(11, "The film runs for four hours."), "anon_uid": "a1b2",
     "validations": [["correct", "user", "v1"], ["correct", "user", "v2", {"annotator_id": "x"}]]},
    {"id": 102, "cid": 11, "tag": "numbers",
     "input_json": json.dumps({"hypothesis": "It is long.", "label": "entailed"}),
     "output_json": "{}", "metadata_json": "{}", "model_wrong": False, "retracted": False, "flagged": False,
     "total_verified": 0, "context": _ctx(11, "The film runs for four hours."), "anon_uid": "a1b2",
     "validations": []},
    {"id": 103, "cid": 12, "tag": None, "input_json": json.dumps({"hypothesis": "Oops", "label": "neutral"}),
     "output_json": "{}", "metadata_json": "{}", "model_wrong": False, "retracted": True, "flagged": False,
     "total_verified": 0, "context": _ctx(12, "A cat sat."), "anon_uid": "c3", "validations": []},
]


def test_a_dynabench_round_export_reads_as_a_format(store, tmp_path):
    path = tmp_path / "nli-r1-export.json"
    path.write_text(json.dumps(EXPORT, indent=1), encoding="utf-8")
    assert detect_format(path) == "dynabench-export"
    outcome = import_file(store, "nli", path, name="r1")
    assert outcome.dropped == {RETRACTED: 1}
    first, second = store.datasets.examples("r1")
    assert (first["id"], first["context"], first["hypothesis"], first["label"]) == (
        "101", "The film runs for four hours.", "The film is short.", "contradiction")
    assert first["metadata"]["model_wrong"] is True and first["metadata"]["validations"] == ["correct", "correct"]
    assert second["label"] == "entailment" and second["metadata"]["tag"] == "numbers"
    lines = tmp_path / "nli-r1-export.jsonl"
    lines.write_text("".join(json.dumps(r) + "\n" for r in EXPORT), encoding="utf-8")
    assert detect_format(lines) == "dynabench-export"
    assert import_file(store, "nli", lines, name="r1-lines").summary.digest == outcome.summary.digest


# data/qa/aqa_v1.0/round1/test.jsonl as Dynabench's QA loader reads it: id, context, question, SQuAD answers.
AQA = [
    {"id": "7ba1e8f4261d3170fcf42e84a81dd749116fae95", "title": "Brain",
     "context": "Another approach to brain function is to examine the consequences of damage to specific brain areas.",
     "question": "What is examined to learn about brain function?",
     "answers": [{"text": "the consequences of damage", "answer_start": 51}]},
    {"id": "5a1b", "title": "Brain", "context": "Neurons fire in bursts.", "question": "What fires?",
     "answers": [{"text": "Neurons", "answer_start": 0}, {"text": "Neurons", "answer_start": 0}]},
]


def test_aqa_v1_json_lines_read_as_squad_style_questions(store, tmp_path):
    path = tmp_path / "test.jsonl"
    path.write_text("".join(json.dumps(r) + "\n" for r in AQA), encoding="utf-8")
    assert detect_format(path) == "aqa"
    outcome = import_file(store, "qa", path, name="aqa-r1")
    first, second = store.datasets.examples("aqa-r1")
    assert first["id"] == AQA[0]["id"] and first["answers"] == ["the consequences of damage"]
    assert first["metadata"] == {"title": "Brain", "answer_start": [51]}
    assert second["answers"] == ["Neurons", "Neurons"] and outcome.dropped == {}


OWN_NLI = """\
name: claims
inputs:
  - name: evidence
    is_context: true
  - name: claim
output:
  kind: label
  labels: [entailment, neutral, contradiction]
metric: accuracy
fooled_rule:
  kind: label_mismatch
"""

OWN_SPAN = """\
name: clinic_qa
inputs:
  - name: note
    is_context: true
  - name: question
output:
  kind: span
  span_of: note
metric: squad_f1
fooled_rule:
  kind: answer_f1_below
  threshold: 0.4
"""

SNLI_ROWS = [
    {"annotator_labels": ["neutral"], "captionID": "3416050480.jpg#4", "gold_label": "neutral",
     "pairID": "3416050480.jpg#4r1n", "sentence1": "A person on a horse jumps over a broken down airplane.",
     "sentence1_parse": "(ROOT x)", "sentence2": "A person is training his horse for a competition.",
     "sentence2_parse": "(ROOT y)"},
    {"annotator_labels": ["contradiction"], "captionID": "3416050480.jpg#4", "gold_label": "contradiction",
     "pairID": "3416050480.jpg#4r1c", "sentence1": "A person on a horse jumps over a broken down airplane.",
     "sentence2": "A person is at a diner, ordering an omelette."},
]

SQUAD = {"version": "v2.0", "data": [{"title": "Clinic", "paragraphs": [{
    "context": "Patient reports a headache; prescribed ibuprofen twice daily.",
    "qas": [{"id": "q1", "question": "What was prescribed?", "is_impossible": False,
             "answers": [{"text": "ibuprofen", "answer_start": 39}]}]}]}]}


def test_snli_and_squad_files_feed_own_tasks_of_the_same_kind(home, tmp_path):
    for text, name in [(OWN_NLI, "claims.yaml"), (OWN_SPAN, "clinic_qa.yaml")]:
        (tmp_path / name).write_text(text)
        res = run_cli(home, "tasks", "add", str(tmp_path / name))
        assert res.returncode == 0, res.stderr
    snli = tmp_path / "snli_1.0_dev.jsonl"
    snli.write_text("".join(json.dumps(r) + "\n" for r in SNLI_ROWS), encoding="utf-8")
    res = run_cli(home, "data", "import", str(snli), "--task", "claims", "--name", "claims-dev")
    assert res.returncode == 0, res.stderr
    assert "format: snli" in res.stdout
    squad = tmp_path / "clinic.json"
    squad.write_text(json.dumps(SQUAD), encoding="utf-8")
    res = run_cli(home, "data", "import", str(squad), "--task", "clinic_qa", "--name", "clinic")
    assert res.returncode == 0, res.stderr
    shown = json.loads(run_cli(home, "data", "show", "claims-dev", "--json").stdout)
    assert shown["head"][0]["evidence"] == SNLI_ROWS[0]["sentence1"]
    assert shown["head"][0]["claim"] == SNLI_ROWS[0]["sentence2"] and shown["head"][1]["label"] == "contradiction"
    shown = json.loads(run_cli(home, "data", "show", "clinic", "--json").stdout)
    assert shown["head"][0]["note"].startswith("Patient") and shown["head"][0]["answers"] == ["ibuprofen"]
