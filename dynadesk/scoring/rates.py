"""Robust exchange rates (issue 44, item 2): what a public board's rate editions and provisional rates are made of.

Dynaboard's exchange rate (AMRS) for a metric is the *mean* over neighbouring pairs (by performance) of
``|delta utility| / delta perf`` over every ranked model. A mean lets one row decide it: a row at perf 84.99 beside
a row at 85 with throughput 1e7 adds one pair of rate 1e9 and multiplies the mean ~50,000-fold. A board's published
rates use a robust estimator over *reference rows* instead (docs/board.md, "Rate editions"):

1. every pair of reference rows whose performance differs by more than ``PAIR_TOLERANCE`` x the best gives a pair
   rate ``|delta utility| / |delta perf|``;
2. each row's rate is the median of its pair rates; the metric's rate is the median of the row rates (a median of
   medians: one row adds one pair to each other row's median and one value to the outer median, so with 3 or more
   honest rows the result stays between honest pair rates);
3. the bound: for every reference row, the rate without that row (the same estimator) must be within
   ``factor`` (default :data:`RATE_FACTOR`, 2) of the rate with it. A row that alone moves a rate further is left
   out of that metric's rate, named with the factor it moved it by, and the estimate is taken again; at least
   :data:`MIN_ROWS` rows must remain, else the metric has no rate and the reason says so.

So no row in a published rate's reference set moved it by more than the stated factor, and a row outside the set
moved it not at all. With every row a reference row this is *not* Dynaboard's mean; Dynaboard's own rule stays
available as a view (``compute_arrays`` without fixed rates), and the local board keeps it by default.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from dynadesk.errors import ValidationError
from dynadesk.scoring.dynascore import PAIR_TOLERANCE

RATE_FACTOR = 2.0   # no reference row may move a published rate by more than this factor
MIN_ROWS = 3        # a rate needs this many reference rows (leaving one out must still leave a pair)
ROBUST, DYNABOARD = "robust", "dynaboard"
RULES = (ROBUST, DYNABOARD)  # how an edition's rates are made from its reference rows (``rates freeze --rule``)
DYNABOARD_ESTIMATOR = ("Dynaboard's AMRS over exactly the reference rows: the mean over neighbouring pairs (by"
                       " performance) of |delta utility| / delta perf; no bound, so any one reference row can move"
                       " a rate")
ESTIMATOR = ("median over reference rows of each row's median pair rate |delta utility| / |delta perf| (pairs"
             f" whose performance differs by more than {PAIR_TOLERANCE:g} x the best); a row that alone moves a rate"
             " by more than the factor is left out of it")


@dataclass
class MetricRate:
    """One metric's robust rate: ``rate`` (None when none can be published, ``why`` says so), the rows it rests on
    and the rows left out of it with the reason."""

    metric: str
    rate: float | None
    rows: list[str] = field(default_factory=list)
    left_out: dict[str, str] = field(default_factory=dict)
    why: str | None = None

    def to_dict(self) -> dict[str, Any]:
        return {"metric": self.metric, "rate": self.rate, "rows": self.rows, "left_out": self.left_out,
                "why": self.why}


def _median_of_medians(perf: np.ndarray, col: np.ndarray, threshold: float) -> float | None:
    """The estimator over these rows (None when no pair differs enough in performance)."""
    dp = np.abs(perf[:, None] - perf[None, :])
    dx = np.abs(col[:, None] - col[None, :])
    ok = dp > threshold
    row_rates = []
    for i in range(len(perf)):
        mask = ok[i]
        if mask.any():
            row_rates.append(float(np.median(dx[i, mask] / dp[i, mask])))
    return float(np.median(row_rates)) if row_rates else None


def _moved(a: float | None, b: float | None) -> float:
    """By what factor ``b`` differs from ``a`` (1 when equal, inf when one is 0 or None and the other is not)."""
    if a is None or b is None:
        return 1.0 if a == b else math.inf
    if a == b:
        return 1.0
    if a == 0 or b == 0:
        return math.inf
    return max(a / b, b / a)


def metric_rate(metric: str, names: Sequence[str], perf: np.ndarray, col: np.ndarray, threshold: float,
                factor: float = RATE_FACTOR) -> MetricRate:
    """The bounded robust rate of one metric over the reference rows ``names`` (utilities ``perf`` and ``col``)."""
    keep = list(range(len(names)))
    left_out: dict[str, str] = {}
    while True:
        if len(keep) < MIN_ROWS:
            why = (f"{len(keep)} reference row{'s' if len(keep) != 1 else ''} "
                   f"{'is' if len(keep) == 1 else 'are'} usable for '{metric}'; a rate needs {MIN_ROWS}")
            return MetricRate(metric, None, [names[i] for i in keep], left_out, why)
        idx = np.array(keep)
        rate = _median_of_medians(perf[idx], col[idx], threshold)
        if rate is None:
            return MetricRate(metric, None, [names[i] for i in keep], left_out,
                              f"no two reference rows differ in performance by more than {PAIR_TOLERANCE:g} x the"
                              " best")
        moves = []
        for k in range(len(keep)):
            rest = np.delete(idx, k)
            moves.append(_moved(rate, _median_of_medians(perf[rest], col[rest], threshold)))
        worst = int(np.argmax(moves))
        if moves[worst] <= factor:
            return MetricRate(metric, rate, [names[i] for i in keep], left_out)
        left_out[names[keep[worst]]] = (f"alone it moved the '{metric}' rate by a factor of {moves[worst]:.3g}, above"
                                        f" the bound {factor:g}")
        del keep[worst]


def robust_rates(names: Sequence[str], utilities: np.ndarray, metric_names: Sequence[str], perf_index: int,
                 factor: float = RATE_FACTOR) -> dict[str, MetricRate]:
    """Every metric's bounded robust rate over the reference rows ``names`` (rows of ``utilities``, x' =
    direction * x + offset); the performance metric's rate is 1 by definition."""
    utilities = np.asarray(utilities, dtype=float)
    perf = utilities[:, perf_index] if len(names) else np.zeros(0)
    threshold = PAIR_TOLERANCE * abs(float(perf.max())) if len(perf) else 0.0
    out = {}
    for j, metric in enumerate(metric_names):
        if j == perf_index:
            out[metric] = MetricRate(metric, 1.0, list(names))
            continue
        out[metric] = metric_rate(metric, names, perf, utilities[:, j], threshold, factor)
    return out


def rates_from_tables(tables: dict[str, Any], factor: float = RATE_FACTOR, rule: str = ROBUST
                      ) -> dict[str, MetricRate]:
    """Each Dynascore metric's bounded robust rate over reference rows given as stored tables ``{row: {metric:
    {dataset or '': value}}}`` (equal dataset weights; utilities at the default directions and offsets). The one
    function the server's editions and a snapshot's verifier derive rates with. ``rule`` :data:`DYNABOARD`: Dynaboard's
    own AMRS over exactly these rows, unbounded (an edition frozen so says it: ``rates freeze --rule``)."""
    from dynadesk.scoring.board import SCORE_METRICS, ScoreBoard, Weighting
    from dynadesk.scoring.dynascore import PERF

    if rule not in RULES:
        raise ValidationError(f"--rule {rule!r:.40}: use one of {', '.join(RULES)}")
    board = ScoreBoard.from_tables(tables, SCORE_METRICS)
    if rule == DYNABOARD:
        if len(tables) < 2:
            return {k: MetricRate(k, 1.0 if k == PERF else None, list(tables), why=f"{len(tables)} reference row(s):"
                                  " Dynaboard's rule needs two rows that differ in performance") for k in SCORE_METRICS}
        own = board.score()
        return {k: MetricRate(k, v, list(own.names), why=None if v is not None else "no two reference rows differ in"
                              f" performance by more than {PAIR_TOLERANCE:g} x the best") for k, v in own.amrs.items()}
    scored = board.score(weighting=Weighting(rates={}))
    metrics = list(scored.metrics)
    return robust_rates(scored.names, scored.utilities, metrics, metrics.index(PERF), factor)
