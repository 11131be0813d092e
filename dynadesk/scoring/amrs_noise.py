"""Whether an exchange rate (AMRS) rests on noise, and the opt-in ``--amrs robust`` rule.

Dynaboard converts a metric into performance points at the mean, over neighbouring
pairs of models (sorted by performance), of ``|delta utility| / delta performance``. When
the models' values of that metric lie within measurement noise of each other, the
mean is set by whichever pair happens to differ most per point of performance, often a
degenerate one (a majority baseline and its nearest neighbour), and a change of a few
MB can reorder the board. This module says so, without changing Dynaboard's rate:

- a pair *exceeds the floor* when its two values differ by more than the metric's
  measurement floor: for ``memory`` (and ``gpu_memory``) the documented runner
  tolerance (25 % of the larger value, :data:`RUNNER_TOLERANCE`); for
  ``throughput`` (and ``throughput_batched``) the runs' own trial spread (``(max - min) /
  median`` of the timed windows, recorded in each run's ``environment.measurement.spread``;
  ``spreads``): the floor is the larger of the two runs' spread times its value, and a run
  without a recorded spread counts with the declared tolerance (50 %); a metric without a
  floor (robustness, fairness) is not judged;
- a rate is *fragile* when fewer than two kept pairs exceed the floor, or when one pair
  supplies more than half of the rate; :func:`noise_notes` names the metric, that pair,
  the rate and its points per unit (one unit of the metric is worth ``1 / AMRS`` points).

``--amrs robust`` (a documented deviation from Dynaboard, never the default) leaves a
fragile metric unconverted: its AMRS is reported as None and it converts to 0 for every
model, as when no rate can be estimated. The functions take the rows that set the rate
(``names``, performance and metric utilities), so they serve whatever set of models the
rate is estimated on.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass

import numpy as np

from dynadesk.evaluator.metric_registry import METRICS

AMRS_MODES = ("dynaboard", "robust")
# The runner tolerances of docs/measurement.md, as bundles declare them (sync.format.tolerances.DEFAULTS;
# a test holds them equal): the relative difference two runs of one model may show.
RUNNER_TOLERANCE: dict[str, float] = {d.name: d.tolerance for d in METRICS.values()
                                      if d.noise_floor and d.tolerance is not None}
FLOORED = tuple(RUNNER_TOLERANCE)
MAX_PAIR_SHARE = 0.5
MIN_PAIRS_OVER_FLOOR = 2


@dataclass(frozen=True)
class RateCheck:
    """How one metric's exchange rate is supported: kept pairs, those over the floor, the largest term."""

    metric: str
    rate: float
    kept_pairs: int
    over_floor: int
    top_pair: tuple[str, str]       # (lower performance, higher performance)
    top_share: float                # the largest pair's share of the rate

    @property
    def fragile(self) -> bool:
        return self.over_floor < MIN_PAIRS_OVER_FLOOR or self.top_share > MAX_PAIR_SHARE

    @property
    def points_per_unit(self) -> float:
        return 1.0 / self.rate if self.rate else float("inf")

    def note(self) -> str:
        low, high = self.top_pair
        why = (f"only {self.over_floor} of its {self.kept_pairs} kept pairs differ by more than the measurement "
               "floor" if self.over_floor < MIN_PAIRS_OVER_FLOOR else "")
        share = f"one pair ({low} vs {high}) supplies {self.top_share:.0%} of it" \
            if self.top_share > MAX_PAIR_SHARE else f"its largest pair is {low} vs {high}"
        return (f"metric '{self.metric}': its exchange rate (AMRS {self.rate:.4g}, {self.points_per_unit:.4g} points "
                f"per unit) rests on noise: {'; '.join(p for p in (why, share) if p)}. This is Dynaboard's rule; "
                "`--amrs robust` leaves such a metric unconverted")


# Metrics whose floor is the runs' own trial spread (the timed windows' (max - min) / median), not a fixed tolerance.
SPREAD_FLOORED = tuple(d.name for d in METRICS.values() if d.trial_spread)
# metric -> model -> the run's relative trial spread of that metric
Spreads = Mapping[str, Mapping[str, float]]


def floor_for(metric: str, a: float, b: float, spread_a: float | None = None,
              spread_b: float | None = None) -> float | None:
    """The smallest difference of two raw values of ``metric`` that is not measurement noise: each run's relative
    floor (its trial spread for throughput when known, else the runner tolerance) times its value, the larger."""
    if metric not in FLOORED:
        return None
    tol = RUNNER_TOLERANCE[metric]
    ra = spread_a if spread_a is not None and metric in SPREAD_FLOORED else tol
    rb = spread_b if spread_b is not None and metric in SPREAD_FLOORED else tol
    return max(ra * abs(a), rb * abs(b))


def run_spreads(measurement: Mapping[str, object] | None) -> dict[str, float]:
    """A run's relative trial spread per throughput metric, from its ``environment.measurement`` summary
    (``spread: {dataset: {metric: s}}``): the largest over its test sets, the run's figure being no steadier
    than its noisiest set. Empty for runs that recorded none."""
    per_set = (measurement or {}).get("spread")
    out: dict[str, float] = {}
    if not isinstance(per_set, Mapping):
        return out
    for by_metric in per_set.values():
        if not isinstance(by_metric, Mapping):
            continue
        for metric, value in by_metric.items():
            if metric in SPREAD_FLOORED and isinstance(value, (int, float)) and not isinstance(value, bool) \
                    and value >= 0:
                out[str(metric)] = max(out.get(str(metric), 0.0), float(value))
    return out


def check_rate(metric: str, names: Sequence[str], perf: np.ndarray, raw: np.ndarray, utility: np.ndarray,
               tolerance: float, spreads: Spreads | None = None) -> RateCheck | None:
    """The support of ``metric``'s rate over these rows, pairs kept as Dynaboard keeps them
    (sorted by performance utility, ties by the metric's; a pair counts when its performance
    differs by more than ``tolerance``); None when the metric has no floor or no pair is kept."""
    if metric not in FLOORED:
        return None
    by_model = (spreads or {}).get(metric, {})
    order = np.lexsort((utility, perf))
    dp = np.diff(perf[order])
    keep = np.flatnonzero(dp > tolerance)
    if not len(keep):
        return None
    terms = np.abs(np.diff(utility[order]))[keep] / dp[keep]
    total = float(terms.sum())
    over = 0
    for k in keep.tolist():
        lo, hi = int(order[k]), int(order[k + 1])
        a, b = float(raw[lo]), float(raw[hi])
        floor = floor_for(metric, a, b, by_model.get(str(names[lo])), by_model.get(str(names[hi])))
        if floor is not None and abs(b - a) > floor:
            over += 1
    top = int(np.argmax(terms))
    i = int(keep[top])
    pair = (str(names[order[i]]), str(names[order[i + 1]]))
    return RateCheck(metric, float(terms.mean()), len(keep), over, pair,
                     float(terms[top]) / total if total > 0 else 0.0)


def noise_checks(metric_names: Sequence[str], names: Sequence[str], values: np.ndarray, utilities: np.ndarray,
                 perf_index: int, tolerance: float, spreads: Spreads | None = None) -> list[RateCheck]:
    """The fragile rates of a scoring (``values``/``utilities``: the rows that set the rates, models x metrics)."""
    out = []
    perf = utilities[:, perf_index]
    for j, metric in enumerate(metric_names):
        if j == perf_index:
            continue
        check = check_rate(metric, names, perf, values[:, j], utilities[:, j], tolerance, spreads)
        if check is not None and check.fragile:
            out.append(check)
    return out


def noise_notes(checks: Sequence[RateCheck]) -> list[str]:
    return [c.note() for c in checks]


def robust_rescore(converted: np.ndarray, amrs: np.ndarray, weights: np.ndarray, metric_names: Sequence[str],
                   checks: Sequence[RateCheck]) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """``--amrs robust``: the fragile metrics unconverted (AMRS NaN, converted 0); ``(scores, converted, amrs)``."""
    converted = converted.copy()
    amrs = amrs.copy()
    for c in checks:
        j = list(metric_names).index(c.metric)
        converted[:, j] = 0.0
        amrs[j] = np.nan
    w = np.asarray(weights, dtype=float) / float(np.sum(weights))
    return converted @ w, converted, amrs
