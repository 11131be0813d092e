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
  ``throughput`` the run's trial spread where the caller knows it (``floors``), else
  the declared tolerance (50 %); a metric without a floor (robustness, fairness) is not
  judged;
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

AMRS_MODES = ("dynaboard", "robust")
# The runner tolerances of docs/measurement.md, as bundles declare them (sync.format.tolerances.DEFAULTS;
# a test holds them equal): the relative difference two runs of one model may show.
RUNNER_TOLERANCE: dict[str, float] = {"memory": 0.25, "gpu_memory": 0.25, "throughput": 0.5,
                                      "throughput_batched": 0.5}
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


def floor_for(metric: str, a: float, b: float, floors: Mapping[str, float] | None = None) -> float | None:
    """The smallest difference of two raw values of ``metric`` that is not measurement noise."""
    if floors and metric in floors:
        return float(floors[metric])
    if metric not in FLOORED:
        return None
    return RUNNER_TOLERANCE[metric] * max(abs(a), abs(b))


def check_rate(metric: str, names: Sequence[str], perf: np.ndarray, raw: np.ndarray, utility: np.ndarray,
               tolerance: float, floors: Mapping[str, float] | None = None) -> RateCheck | None:
    """The support of ``metric``'s rate over these rows, pairs kept as Dynaboard keeps them
    (sorted by performance utility, ties by the metric's; a pair counts when its performance
    differs by more than ``tolerance``); None when the metric has no floor or no pair is kept."""
    if metric not in FLOORED and not (floors and metric in floors):
        return None
    order = np.lexsort((utility, perf))
    dp = np.diff(perf[order])
    keep = np.flatnonzero(dp > tolerance)
    if not len(keep):
        return None
    terms = np.abs(np.diff(utility[order]))[keep] / dp[keep]
    total = float(terms.sum())
    over = 0
    for k in keep.tolist():
        a, b = float(raw[order[k]]), float(raw[order[k + 1]])
        floor = floor_for(metric, a, b, floors)
        if floor is not None and abs(b - a) > floor:
            over += 1
    top = int(np.argmax(terms))
    i = int(keep[top])
    pair = (str(names[order[i]]), str(names[order[i + 1]]))
    return RateCheck(metric, float(terms.mean()), len(keep), over, pair,
                     float(terms[top]) / total if total > 0 else 0.0)


def noise_checks(metric_names: Sequence[str], names: Sequence[str], values: np.ndarray, utilities: np.ndarray,
                 perf_index: int, tolerance: float, floors: Mapping[str, float] | None = None) -> list[RateCheck]:
    """The fragile rates of a scoring (``values``/``utilities``: the rows that set the rates, models x metrics)."""
    out = []
    perf = utilities[:, perf_index]
    for j, metric in enumerate(metric_names):
        if j == perf_index:
            continue
        check = check_rate(metric, names, perf, values[:, j], utilities[:, j], tolerance, floors)
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
