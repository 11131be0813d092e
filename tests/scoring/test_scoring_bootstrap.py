"""The seeded bootstrap: hand-made cases with known answers, and an independent paired bootstrap."""

from __future__ import annotations

import random

import numpy as np
import pytest

from dynadesk.evaluator import metrics as M
from dynadesk.scoring import bootstrap as B

TASK = {"metric": "accuracy", "output_kind": "label", "labels": ["negative", "neutral", "positive"]}
F1_TASK = {**TASK, "metric": "macro_f1"}
LABELS = TASK["labels"]


def _data(n: int, seed: int) -> tuple[list[str], list[str], list[str]]:
    rng = random.Random(seed)
    golds = [rng.choice(LABELS) for _ in range(n)]
    a = [g if rng.random() < 0.8 else rng.choice(LABELS) for g in golds]
    b = [g if rng.random() < 0.6 else rng.choice(LABELS) for g in golds]
    return golds, a, b


def test_identical_predictions_zero_width_interval_and_tied() -> None:
    golds = ["positive"] * 30
    preds = ["positive"] * 20 + ["negative"] * 10
    for task in (TASK, F1_TASK):
        same = B.outcomes(task, task["metric"], preds, golds)
        res = B.paired(same, B.outcomes(task, task["metric"], list(preds), golds), seed=7)
        assert res["delta"] == 0.0 and res["low"] == 0.0 and res["high"] == 0.0
        assert res["tied"] is True and res["p_value"] == 1.0
    # every example scores the same: the interval of the metric itself has width zero
    flat = B.interval(B.outcomes(TASK, "accuracy", ["positive"] * 30, golds), seed=3)
    assert flat["low"] == flat["high"] == 100.0


def test_strictly_better_on_every_example_is_not_tied() -> None:
    golds, _a, _b = _data(40, 1)
    wrong = [LABELS[(LABELS.index(g) + 1) % 3] for g in golds]
    for task in (TASK, F1_TASK):
        res = B.paired(B.outcomes(task, task["metric"], golds, golds),
                       B.outcomes(task, task["metric"], wrong, golds), seed=11)
        assert res["tied"] is False and res["low"] > 0 and res["p_value"] == 0.0
        assert res["delta"] == 100.0


def test_macro_f1_resample_is_the_whole_metric_recomputed() -> None:
    golds, a, _b = _data(25, 2)
    o = B.outcomes(F1_TASK, "macro_f1", a, golds)
    idx = B.resample_indices(25, seed=5, resamples=50)
    vectorised = o.statistic(idx)
    for row, value in zip(idx, vectorised):
        expected = M.macro_f1([a[i] for i in row], [golds[i] for i in row], LABELS)
        assert value == pytest.approx(expected, abs=1e-9)
    whole = o.statistic(np.arange(25, dtype=np.int64)[None, :])[0]
    assert whole == pytest.approx(M.macro_f1(a, golds, LABELS), abs=1e-9)


def _independent_paired(metric_fn, a, b, golds, resamples, seed) -> tuple[float, float]:
    """Plain-Python paired bootstrap (a different code path: python lists, per-resample metric calls)."""
    rng = np.random.default_rng(seed)
    deltas = []
    n = len(golds)
    for _ in range(resamples):
        row = rng.integers(0, n, size=n).tolist()
        ga = [golds[i] for i in row]
        deltas.append(metric_fn([a[i] for i in row], ga) - metric_fn([b[i] for i in row], ga))
    deltas.sort()
    def pct(q: float) -> float:  # numpy's default 'linear' percentile, written out
        pos = q / 100 * (len(deltas) - 1)
        lo = int(pos)
        hi = min(lo + 1, len(deltas) - 1)
        return deltas[lo] + (deltas[hi] - deltas[lo]) * (pos - lo)
    return pct(2.5), pct(97.5)


@pytest.mark.parametrize("task", [TASK, F1_TASK])
def test_paired_matches_an_independent_implementation(task) -> None:
    golds, a, b = _data(60, 3)
    fn = (lambda p, g: M.accuracy(p, g)) if task["metric"] == "accuracy" else (lambda p, g: M.macro_f1(p, g, LABELS))
    res = B.paired(B.outcomes(task, task["metric"], a, golds), B.outcomes(task, task["metric"], b, golds),
                   seed=99, resamples=300)
    low, high = _independent_paired(fn, a, b, golds, 300, 99)
    assert res["low"] == pytest.approx(low, abs=1e-9) and res["high"] == pytest.approx(high, abs=1e-9)
    assert res["delta"] == pytest.approx(fn(a, golds) - fn(b, golds), abs=1e-9)


def test_seed_is_derived_from_digests_and_reproducible() -> None:
    golds, a, _b = _data(50, 4)
    o = B.outcomes(TASK, "accuracy", a, golds)
    s1 = B.derive_seed("sha256:" + "a" * 64, "sha256:" + "b" * 64, "accuracy")
    assert s1 == B.derive_seed("sha256:" + "a" * 64, "sha256:" + "b" * 64, "accuracy")
    assert s1 != B.derive_seed("sha256:" + "c" * 64, "sha256:" + "b" * 64, "accuracy")
    first, again = B.interval(o, s1), B.interval(o, s1)
    assert first["low"].hex() == again["low"].hex() and first["high"].hex() == again["high"].hex()
    assert first["low"] <= M.accuracy(a, golds) <= first["high"] and first["resamples"] == B.RESAMPLES


def test_bad_input_is_named() -> None:
    with pytest.raises(M.MetricError, match="3 predictions for 2 examples"):
        B.outcomes(TASK, "accuracy", ["a", "b", "c"], ["a", "b"])
    with pytest.raises(M.MetricError, match="prediction 1"):
        B.outcomes(TASK, "accuracy", ["positive", 5], ["positive", "neutral"])
    with pytest.raises(M.MetricError, match="cannot pair"):
        B.paired(B.outcomes(TASK, "accuracy", ["positive"], ["positive"]),
                 B.outcomes(TASK, "accuracy", ["positive"] * 2, ["positive"] * 2), seed=1)
