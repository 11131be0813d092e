"""Issue 45, the attacker after the replay hole: fast careless answers in the timed windows, repeated in the pass.

With the windows before the pass, a model cannot replay the pass's answers; it can still answer each timed query
at once with anything (here: always 'neutral') and, recognising those inputs in the pass, give the same answers
there, so "every timed answer equals the pass's" holds, and it is fast. Seen accepted without the comparison:
the host now compares the pass's accuracy on the timed examples with the rest of the set.
"""

from __future__ import annotations

import json
import random
from pathlib import Path

import pytest

from dynadesk.orchestration.bounds import BoundExceeded, check_measured, host_figures
from dynadesk.orchestration.timed_accuracy import gold_labels

LABELS = ("negative", "neutral", "positive")


def _run(tmp_path: Path, careless: bool, n: int = 400, timed: int = 120, accuracy: float = 0.85) -> tuple:
    """A set of ``n`` examples, ``timed`` of them asked in the windows; the pass right ``accuracy`` of the time,
    except (``careless``) on the timed ones, always 'neutral' there."""
    from dynadesk.evaluator.schema import DatasetSpec, Settings, Spec

    rng = random.Random(5)
    gold = [LABELS[i % 3] for i in range(n)]
    (tmp_path / "data").mkdir()
    (tmp_path / "data" / "d000.jsonl").write_text(
        "".join(json.dumps({"id": f"e{i}", "statement": f"text {i}", "label": g}) + "\n" for i, g in enumerate(gold)))
    spec = Spec(task={"inputs": [{"name": "statement"}]}, model={"manifest": {}},
                datasets=[DatasetSpec("s", "d000.jsonl", "0" * 64, n)], settings=Settings())
    timed_ids = {f"e{i}" for i in rng.sample(range(n), timed)}
    preds = []
    for i, g in enumerate(gold):
        right = rng.random() < accuracy
        label = "neutral" if careless and f"e{i}" in timed_ids else g if right else LABELS[(i + 1) % 3]
        preds.append({"dataset": "s", "id": f"e{i}", "prediction": {"label": label}})
    (tmp_path / "predictions.jsonl").write_text("".join(json.dumps(p) + "\n" for p in preds))
    answers = {"s": {p["id"]: p["prediction"]["label"] for p in preds if p["id"] in timed_ids}}
    measured = {"median": 50.0, "noise": {"reasons": []}, "noisy": False, "spread": 0.0, "trials": []}
    lat = {"p50_ms": 20.0, "p90_ms": 25.0, "p99_ms": 30.0, "too_few_samples": [], "trial_spread": {}}
    observed = {"loadgen": {"finished": True, "problems": [], "answers": answers, "max_new_tokens": None,
                            "datasets": {"s": {"batch1": measured, "batched": measured, "latency": lat}}},
                "memory": {}}
    rows = [{"dataset": d, "metric": m, "value": v} for (d, m), v in host_figures(observed, ["s"]).items()]
    return rows, observed, tmp_path / "predictions.jsonl", gold_labels(spec, tmp_path / "data")


def test_careless_fast_answers_repeated_in_the_pass_are_refused_naming_both_accuracies(tmp_path):
    rows, observed, predictions, gold = _run(tmp_path, careless=True)
    with pytest.raises(BoundExceeded, match=r"the timed examples of 's' were answered worse than the rest of the set "
                                            r"\(accuracy 0\.[23]\d\d on 120 timed, 0\.8\d\d on 280 others"):
        check_measured(rows, observed, ["s"], predictions, gold)


def test_an_honest_model_scores_its_timed_examples_as_the_rest(tmp_path):
    rows, observed, predictions, gold = _run(tmp_path, careless=False)
    report = check_measured(rows, observed, ["s"], predictions, gold)
    figures = report["timed_accuracy"]["s"]
    assert (figures["timed"], figures["rest"]) == (120, 280) and abs(figures["z"]) < 4
