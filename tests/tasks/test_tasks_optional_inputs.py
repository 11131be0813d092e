"""Own tasks with an optional (possibly empty) input, as Dynatask's optional context: examples with an empty or
absent context import and evaluate; a required input still refuses an empty value; every other task's dict (and
so its signed digest) is unchanged."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest
from support.tiny_models import make_tiny_classifier

from dynadesk.datasets import validate_example
from dynadesk.errors import ConfigError
from dynadesk.tasks import get_task, parse_task_text

TASK = """name: claims
title: Claims with optional evidence
description: A claim, with optional evidence, is true or false.
inputs:
  - name: context
    description: Evidence, when there is any.
    is_context: true
    optional: true
  - name: claim
    description: The claim judged.
output:
  kind: label
  labels: [true_claim, false_claim]
metric: accuracy
fooled_rule:
  kind: label_mismatch
"""


def test_an_optional_input_may_be_empty_or_absent_and_a_required_one_may_not():
    task = parse_task_text(TASK, "claims.yaml")
    assert [f.optional for f in task.inputs] == [True, False]
    ok = validate_example(task, {"id": "a", "context": "", "claim": "x", "label": "true_claim"}, "x")
    assert ok["context"] == ""
    assert validate_example(task, {"id": "b", "claim": "y", "label": "false_claim"}, "x")["context"] == ""
    with pytest.raises(ValueError, match="field 'claim' must be a non-empty string"):
        validate_example(task, {"id": "c", "context": "e", "claim": " ", "label": "true_claim"}, "x")
    with pytest.raises(ValueError, match="field 'context' must be a string"):
        validate_example(task, {"id": "d", "context": 3, "claim": "z", "label": "true_claim"}, "x")
    assert task.to_dict()["inputs"][0]["optional"] is True and "optional" not in task.to_dict()["inputs"][1]
    assert all("optional" not in f for name in ("nli", "sentiment", "qa") for f in get_task(name).to_dict()["inputs"])


def test_optional_must_be_true_or_false_and_never_the_span_source():
    with pytest.raises(ConfigError, match=r"inputs\[0\]: field 'optional' must be"):
        parse_task_text(TASK.replace("optional: true", "optional: maybe"), "claims.yaml")
    span = TASK.replace("kind: label\n  labels: [true_claim, false_claim]", "kind: span\n  span_of: context") \
        .replace("metric: accuracy", "metric: squad_f1").replace("kind: label_mismatch",
                                                                   "kind: answer_f1_below\n  threshold: 0.4")
    with pytest.raises(ConfigError, match="an optional input"):
        parse_task_text(span, "claims.yaml")


def cli(home: Path, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-c", "from dynadesk.cli import main; main()", "--home", str(home), *args],
                          capture_output=True, text=True, timeout=600, check=False)


def test_a_set_with_empty_contexts_imports_and_evaluates(tmp_path):
    home = tmp_path / "home"
    (tmp_path / "claims.yaml").write_text(TASK, encoding="utf-8")
    rows = [{"id": "1", "context": "", "claim": "the sky is green", "label": "false_claim"},
            {"id": "2", "claim": "water is wet", "label": "true_claim"},
            {"id": "3", "context": "paris is in france", "claim": "paris is french", "label": "true_claim"}]
    (tmp_path / "claims.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    model = make_tiny_classifier(tmp_path / "m", ["true_claim", "false_claim"], task="claims",
                                 inputs=["context", "claim"])
    for args in (("tasks", "add", str(tmp_path / "claims.yaml")),
                 ("data", "import", str(tmp_path / "claims.jsonl"), "--task", "claims", "--name", "claims-test"),
                 ("models", "add", str(model), "--task", "claims", "--name", "tiny-claims")):
        proc = cli(home, *args)
        assert proc.returncode == 0, proc.stdout + proc.stderr
    proc = cli(home, "eval", "tiny-claims", "--runner", "local", "--dataset", "claims-test", "--json")
    assert proc.returncode == 0, proc.stdout + proc.stderr
    run = json.loads(proc.stdout)
    assert run["status"] == "succeeded"
    preds = (Path(run["run_dir"]) / "out" / "predictions.jsonl").read_text().splitlines()
    assert len(preds) == 3
