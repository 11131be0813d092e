"""Robustness/fairness against an independent implementation of Dynaboard's formula.

The reference (``get_unperturbed_percent`` in facebookresearch/dynabench
evaluation/metrics) is, in words: for every source example that has perturbed
copies, call the task's perf metric with the copies' predictions as predictions and
the original prediction, repeated, as targets; average those values over the source
examples. It is re-implemented here from that description with scikit-learn's
``f1_score(average="macro")`` for macro-F1 and the SQuAD v1.1 script's token F1, and
without Dynaboard's rounding to two decimals (so the two agree to 1e-9).
"""

from __future__ import annotations

import random
import re
import string
from collections import Counter

import pytest
from sklearn.metrics import f1_score

from dynadesk.evaluator import metrics as M
from dynadesk.tasks import get_task

SENT = get_task("sentiment").to_dict()
NLI = get_task("nli").to_dict()
QA = get_task("qa").to_dict()


def _squad_normalise(s: str) -> str:
    s = "".join(ch for ch in s.lower() if ch not in set(string.punctuation))
    return " ".join(re.sub(r"\b(a|an|the)\b", " ", s).split())


def _squad_f1(gold: str, pred: str) -> float:
    g, p = _squad_normalise(gold).split(), _squad_normalise(pred).split()
    if not g or not p:
        return float(g == p)
    same = sum((Counter(g) & Counter(p)).values())
    if same == 0:
        return 0.0
    prec, rec = same / len(p), same / len(g)
    return 2 * prec * rec / (prec + rec)


def _perf(metric: str, predictions: list[str], targets: list[str]) -> float:
    if metric == "macro_f1":
        return 100 * float(f1_score(targets, predictions, average="macro", zero_division=0))
    if metric == "accuracy":
        return 100 * sum(p == t for p, t in zip(predictions, targets)) / len(targets)
    return 100 * sum(_squad_f1(t, p) for p, t in zip(predictions, targets)) / len(targets)


def reference_unperturbed_percent(perturbed: list[list[str]], original: list[str], metric: str) -> float:
    """Dynaboard's formula: per source, the perf metric of its copies against [original] * n."""
    total, sources = 0.0, 0
    for preds, target in zip(perturbed, original):
        if preds:
            total += _perf(metric, preds, [target] * len(preds))
            sources += 1
    return total / sources


def _random_case(rng: random.Random, labels: list[str], n: int) -> tuple[dict[str, str], dict[str, list[str]]]:
    original = {f"e{i}": rng.choice(labels) for i in range(n)}
    perturbed = {}
    for i in range(n):
        k = rng.choice((0, 1, 1, 2, 3, 5))
        keep = rng.random()
        perturbed[f"e{i}"] = [original[f"e{i}"] if rng.random() < keep else rng.choice(labels) for _ in range(k)]
    return original, perturbed


@pytest.mark.parametrize("task", [SENT, NLI], ids=["macro_f1", "accuracy"])
def test_label_tasks_match_the_reference(task):
    rng = random.Random(7)
    for _ in range(200):
        original, perturbed = _random_case(rng, task["labels"], rng.randint(1, 30))
        if not any(perturbed.values()):
            continue
        ids = list(original)
        want = reference_unperturbed_percent([perturbed[i] for i in ids], [original[i] for i in ids], task["metric"])
        assert M.consistency_score(task, original, perturbed) == pytest.approx(want, abs=1e-9)


def test_squad_f1_matches_the_reference():
    rng = random.Random(3)
    words = ["the", "red", "dog", "Paris", "a", "big", "house", "in", "1998", "of", "river"]
    for _ in range(200):
        n = rng.randint(1, 12)
        original = {f"q{i}": " ".join(rng.choices(words, k=rng.randint(1, 4))) for i in range(n)}
        perturbed = {q: [" ".join(rng.choices(words, k=rng.randint(0, 4))) for _ in range(rng.randint(1, 3))]
                     for q in original}
        want = reference_unperturbed_percent(list(perturbed.values()), list(original.values()), "squad_f1")
        assert M.consistency_score(QA, original, perturbed) == pytest.approx(want, abs=1e-9)
