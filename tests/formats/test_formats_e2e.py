"""From a fresh workspace, an ANLI-style file, an SNLI file and a SQuAD v2.0 file each import with one
command (format detected) and evaluate with a tiny model through `dynadesk eval --runner local`."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

from support.tiny_models import make_tiny_classifier, make_tiny_qa

from dynadesk.formats.squad import UNANSWERABLE

CONTEXT = "Paris is the capital of France. The river Seine runs through the city."


def cli(home: Path, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-c", "from dynadesk.cli import main; main()", "--home", str(home), *args],
                          capture_output=True, text=True, timeout=600, check=False)


def cli_json(home: Path, *args: str) -> Any:
    proc = cli(home, *args, "--json")
    assert proc.returncode == 0, proc.stderr
    return json.loads(proc.stdout)


def _write_sources(tmp_path: Path) -> dict[str, Path]:
    anli = tmp_path / "anli_r3_dev.jsonl"
    anli.write_text("".join(json.dumps(r) + "\n" for r in [
        {"uid": "a-1", "context": "A man plays a guitar on a stage.", "hypothesis": "Someone makes music.",
         "label": "e", "reason": "Playing a guitar makes music.", "tag": "Basic"},
        {"uid": "a-2", "context": "A man plays a guitar on a stage.", "hypothesis": "The stage is empty.",
         "label": "c", "reason": "A man is on it."},
        {"uid": "a-3", "context": "A man plays a guitar on a stage.", "hypothesis": "He is famous.", "label": "n",
         "reason": "Not said."},
    ]), encoding="utf-8")
    snli = tmp_path / "snli_1.0_test.jsonl"
    snli.write_text("".join(json.dumps(r) + "\n" for r in [
        {"annotator_labels": ["entailment"], "captionID": "1.jpg#0", "gold_label": "entailment", "pairID": "1.jpg#0r1e",
         "sentence1": "Two dogs run in a park.", "sentence1_binary_parse": "( x )", "sentence1_parse": "(ROOT x)",
         "sentence2": "Animals are outside.", "sentence2_binary_parse": "( y )", "sentence2_parse": "(ROOT y)"},
        {"annotator_labels": ["neutral", "contradiction"], "captionID": "1.jpg#0", "gold_label": "-",
         "pairID": "1.jpg#0r1n", "sentence1": "Two dogs run in a park.", "sentence1_binary_parse": "( x )",
         "sentence1_parse": "(ROOT x)", "sentence2": "The dogs are brothers.", "sentence2_binary_parse": "( y )",
         "sentence2_parse": "(ROOT y)"},
        {"annotator_labels": ["contradiction"], "captionID": "1.jpg#0", "gold_label": "contradiction",
         "pairID": "1.jpg#0r1c", "sentence1": "Two dogs run in a park.", "sentence1_binary_parse": "( x )",
         "sentence1_parse": "(ROOT x)", "sentence2": "The dogs sleep.", "sentence2_binary_parse": "( y )",
         "sentence2_parse": "(ROOT y)"},
    ]), encoding="utf-8")
    squad = tmp_path / "dev-v2.0.json"
    paragraph = {"context": CONTEXT, "qas": [
        {"question": "What is the capital of France?", "id": "q1", "is_impossible": False,
         "answers": [{"text": "Paris", "answer_start": 0}]},
        {"question": "Which river runs through the city?", "id": "q2", "is_impossible": False,
         "answers": [{"text": "The river Seine", "answer_start": 32}, {"text": "Seine", "answer_start": 42}]},
        {"question": "Who built the river?", "id": "q3", "is_impossible": True, "answers": [],
         "plausible_answers": [{"text": "Seine", "answer_start": 42}]},
    ]}
    squad.write_text(json.dumps({"version": "v2.0", "data": [{"title": "Paris", "paragraphs": [paragraph]}]}),
                     encoding="utf-8")
    return {"anli": anli, "snli": snli, "squad": squad}


def _evaluate(home: Path, model: str, dataset: str) -> dict[str, Any]:
    proc = cli(home, "eval", model, "--runner", "local", "--dataset", dataset, "--json")
    assert proc.returncode == 0, proc.stdout + proc.stderr
    run = json.loads(proc.stdout)
    assert run["status"] == "succeeded" and run["runner"] == "local"
    return run


def _perf(run: dict[str, Any], dataset: str) -> float:
    return next(m["value"] for m in run["metrics"] if m["metric"] == "perf" and m["dataset"] == dataset)


def test_public_files_import_and_evaluate_from_a_fresh_workspace(home, tmp_path):
    sources = _write_sources(tmp_path)
    nli_model = make_tiny_classifier(tmp_path / "tiny-nli", ["entailment", "neutral", "contradiction"], task="nli")
    qa_model = make_tiny_qa(tmp_path / "tiny-qa")
    assert cli_json(home, "models", "add", str(nli_model), "--task", "nli", "--name", "tiny-nli")["kind"] \
        == "hf-sequence-classification"
    assert cli_json(home, "models", "add", str(qa_model), "--task", "qa", "--name", "tiny-qa")["task"] == "qa"

    expected = {"anli": ("nli", "dynabench", 3, {}),
                "snli": ("nli", "snli", 2, {"no-consensus rows (gold_label '-')": 1}),
                "squad": ("qa", "squad", 2, {UNANSWERABLE: 1})}
    for name, (task, fmt, size, dropped) in expected.items():
        proc = cli(home, "data", "import", str(sources[name]), "--task", task, "--name", name)
        assert proc.returncode == 0, proc.stderr
        assert f"format: {fmt} (" in proc.stdout and "detected" in proc.stdout
        shown = cli_json(home, "data", "show", name)
        assert shown["size"] == size and shown["split"] == "test"
        assert {k: v for k, v in dropped.items()} == json.loads(
            cli(home, "data", "import", str(sources[name]), "--task", task, "--name", name, "--replace",
                "--json").stdout)["dropped"]

    for name, model in (("anli", "tiny-nli"), ("snli", "tiny-nli"), ("squad", "tiny-qa")):
        run = _evaluate(home, model, name)
        assert run["datasets"] == [name]
        assert 0.0 <= _perf(run, name) <= 100.0
        predictions = Path(run["run_dir"]) / "out" / "predictions.jsonl"
        rows = [json.loads(line) for line in predictions.read_text().splitlines()]
        assert len(rows) == expected[name][2]
        if name == "squad":
            assert {r["id"] for r in rows} == {"q1", "q2"} and all("answer" in r["prediction"] for r in rows)
        else:
            assert all(r["prediction"]["label"] in ("entailment", "neutral", "contradiction") for r in rows)
