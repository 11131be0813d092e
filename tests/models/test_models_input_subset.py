"""A model may read a subset of its task's inputs (Dynatask's hypothesis-only NLI baselines): it registers, its
live predictions and its evaluation read only the inputs its manifest names, and a manifest naming an input the
task does not have is refused, naming it."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest
from support.tiny_models import make_tiny_classifier

NLI = ["entailment", "neutral", "contradiction"]
ROWS = [{"uid": f"h{i}", "context": f"A man plays a guitar number {i}.", "hypothesis": h, "label": lab}
        for i, (h, lab) in enumerate([("Someone makes music.", "e"), ("The stage is empty.", "c"),
                                      ("He is famous.", "n"), ("A woman sings.", "c")])]


def cli(home: Path, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-c", "from dynadesk.cli import main; main()", "--home", str(home), *args],
                          capture_output=True, text=True, timeout=600, check=False)


def test_a_hypothesis_only_model_registers_and_evaluates_on_the_hypothesis_alone(tmp_path):
    from dynadesk.evaluator.adapters import load_adapter

    home = tmp_path / "home"
    folder = make_tiny_classifier(tmp_path / "hyp-only", NLI, task="nli", inputs=["hypothesis"], seed=4)
    data = tmp_path / "anli.jsonl"
    data.write_text("".join(json.dumps(r) + "\n" for r in ROWS), encoding="utf-8")
    for args in (("models", "add", str(folder), "--task", "nli", "--name", "hyp-only"),
                 ("data", "import", str(data), "--task", "nli", "--name", "anli")):
        proc = cli(home, *args)
        assert proc.returncode == 0, proc.stdout + proc.stderr
    proc = cli(home, "eval", "hyp-only", "--runner", "local", "--dataset", "anli", "--json")
    assert proc.returncode == 0, proc.stdout + proc.stderr
    run = json.loads(proc.stdout)
    preds = [json.loads(line)["prediction"]["label"]
             for line in (Path(run["run_dir"]) / "out" / "predictions.jsonl").read_text().splitlines()]
    adapter = load_adapter(folder)
    alone = [p["label"] for p in adapter.predict([{"hypothesis": r["hypothesis"]} for r in ROWS])]
    assert preds == alone  # what the model gives on the hypothesis alone, the context never read


def test_a_manifest_input_the_task_lacks_is_refused_naming_it(tmp_path):
    home = tmp_path / "home"
    folder = make_tiny_classifier(tmp_path / "bad", NLI, task="nli", inputs=["hypothesis", "premise"])
    proc = cli(home, "models", "add", str(folder), "--task", "nli", "--name", "bad")
    assert proc.returncode != 0
    assert "'premise' is not one" in proc.stdout + proc.stderr and "context, hypothesis" in proc.stdout + proc.stderr


@pytest.mark.parametrize("inputs", [["hypothesis", "hypothesis"]])
def test_a_manifest_naming_an_input_twice_is_refused(tmp_path, inputs):
    folder = make_tiny_classifier(tmp_path / "twice", NLI, task="nli", inputs=inputs)
    proc = cli(tmp_path / "home", "models", "add", str(folder), "--task", "nli", "--name", "twice")
    assert proc.returncode != 0 and "each at most once" in proc.stdout + proc.stderr
