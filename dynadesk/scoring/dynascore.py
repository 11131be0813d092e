"""The Dynascore (Ma et al., Dynaboard, 2021): metric specs, the vectorised core, ranks, documents.

No database, no Qt. Input rules (averaging, who is left off, budgets, weights) live in
:mod:`dynadesk.scoring.board`, whose :class:`~dynadesk.scoring.board.ScoreBoard` the local
leaderboard, the leaderboard server and the GUI all score through; ``board.compute`` is that
board for a ``{model: {metric: value}}`` table and ``board.from_document`` the document form.

API
---
``board.compute(models, metrics=None, perf_metric="perf", dataset_weights=None) -> DynascoreResult``
    ``models``: ``{model: {metric: value}}`` where a value is a number or a per-dataset
    mapping ``{dataset: number}``. ``metrics``: ``{name: MetricSpec(direction, offset,
    weight)}`` (default :func:`default_metrics`: perf 4, throughput / memory / robustness /
    fairness 1; memory is "memory saved", direction -1, offset = budget GiB).
    ``dataset_weights``: ``{dataset: weight}`` (default equal; normalised to sum to 1).
``board.from_document(doc) -> DynascoreResult``
    The ``dynadesk dynascore FILE.json`` form: ``{"perf_metric", "metrics": {name:
    {"direction", "offset", "weight"}}, "models": {...}, "dataset_weights"?}``.
``DynascoreResult.to_dict()``
    ``{"perf_metric", "weights", "amrs": {metric: float | None}, "models": {model:
    {"dynascore", "rank", "values", "utilities", "converted"}}, "ranking", "left_off": {model:
    reason}, "notes"}``.
``rank_stability(result, grid=WEIGHT_GRID) -> {model: {"min_rank", "max_rank", "by_metric"}}``
    Ranks a model takes when each metric weight in turn is varied over 0-5.
``compute_arrays(...)``: the vectorised core on a ``models x metrics`` matrix.

Definition
----------
1. A model's value for a metric is the weighted mean of its per-dataset values
   (dataset weights normalised over the datasets the metric has; a plain number is a
   whole-run value that counts the same on every dataset).
2. Utility ``x' = direction * x + offset``.
3. Sort models by performance utility ascending (ties broken by the metric's own
   utility, so the answer does not depend on input order); over neighbouring pairs
   whose performance difference exceeds ``1e-4 * |max performance|``,
   ``AMRS(metric) = mean(|delta x'| / delta perf)``; AMRS(perf) = 1.
4. ``converted = x' / |AMRS|``; weights normalised to sum to 1;
   ``dynascore = sum(weight * converted)``. Rank 1 is best; equal scores share a rank.

Degenerate cases (never an exception, an infinity or a NaN):

- a model missing a metric, missing a dataset with positive weight, or with a value
  that is not a finite number is left off (``left_off[model]`` says why);
- no pair of models is kept (one model, or every performance tied): no exchange rate
  can be estimated, so ``amrs`` is ``None`` for every other metric, those metrics
  convert to 0 and the Dynascore is the weighted performance (a note says so);
- AMRS is 0 (the metric is equal for every model, or changes only between models of
  equal performance): the metric converts to 0 for everyone (it cannot separate them);
- no models: an empty board.

Invalid specifications (negative or non-finite weights, all weights zero, a zero
direction, an unknown performance metric) raise :class:`ValidationError`.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from dynadesk.errors import ValidationError
from dynadesk.evaluator.metric_registry import dynascore_defaults

PERF = "perf"
DEFAULT_MEMORY_BUDGET_GIB = 16.0
PAIR_TOLERANCE = 1e-4  # fraction of the highest performance below which neighbours count as tied
WEIGHT_GRID = tuple(x / 2 for x in range(11))  # 0, 0.5, ..., 5
_RANK_TOL = 1e-9
MAX_SPEC_WEIGHT = 1e6


@dataclass(frozen=True)
class MetricSpec:
    """How one metric enters the Dynascore: ``x' = direction * x + offset``, then ``weight``."""

    direction: float = 1.0
    offset: float = 0.0
    weight: float = 1.0

    def to_dict(self) -> dict[str, float]:
        return {"direction": self.direction, "offset": self.offset, "weight": self.weight}


def default_metrics(memory_budget_gib: float = DEFAULT_MEMORY_BUDGET_GIB) -> dict[str, MetricSpec]:
    """Dynaboard's defaults (performance 4, every other metric 1; memory is memory saved), from the metric
    registry's Dynascore defaults."""
    return {d.name: MetricSpec(s.direction, float(memory_budget_gib) if s.budget_offset else s.offset, s.weight)
            for d in dynascore_defaults() if (s := d.dynascore) is not None}


@dataclass
class ModelScore:
    name: str
    dynascore: float
    rank: int
    values: dict[str, float]       # dataset-averaged raw values
    utilities: dict[str, float]    # x'
    converted: dict[str, float]    # x' / |AMRS|

    def to_dict(self) -> dict[str, Any]:
        return {"dynascore": self.dynascore, "rank": self.rank, "values": self.values,
                "utilities": self.utilities, "converted": self.converted}


@dataclass
class DynascoreResult:
    perf_metric: str
    metrics: dict[str, MetricSpec]
    weights: dict[str, float]               # normalised
    amrs: dict[str, float | None]
    models: list[ModelScore]                # best first
    left_off: dict[str, str] = field(default_factory=dict)
    notes: list[str] = field(default_factory=list)
    converted_matrix: np.ndarray = field(default_factory=lambda: np.zeros((0, 0)), repr=False)

    def model(self, name: str) -> ModelScore:
        """The scored model called ``name`` (``KeyError`` if it is not on the board)."""
        index: dict[str, ModelScore] | None = self.__dict__.get("_index")
        if index is None or len(index) != len(self.models):
            index = self.__dict__["_index"] = {m.name: m for m in self.models}
        return index[name]

    def to_dict(self) -> dict[str, Any]:
        return {
            "perf_metric": self.perf_metric,
            "metrics": {k: v.to_dict() for k, v in self.metrics.items()},
            "weights": self.weights,
            "amrs": self.amrs,
            "models": {m.name: m.to_dict() for m in self.models},
            "ranking": [m.name for m in self.models],
            "left_off": self.left_off,
            "notes": self.notes,
        }


# --------------------------------------------------------------------------- validation

def _finite(value: Any) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool) and math.isfinite(value)


def check_specs(metrics: Mapping[str, MetricSpec], perf_metric: str) -> None:
    """Refuse specs that cannot be scored: an unknown performance metric, non-finite, negative or absurd
    weights (above ``MAX_SPEC_WEIGHT`` the other metrics silently vanish), a zero direction, no positive weight."""
    if perf_metric not in metrics:
        raise ValidationError(f"performance metric '{perf_metric}' is not among the metrics "
                              f"({', '.join(metrics) or 'none'})")
    for name, spec in metrics.items():
        for attr in ("direction", "offset", "weight"):
            if not _finite(getattr(spec, attr)):
                raise ValidationError(f"metrics.{name}.{attr} must be a finite number, got {getattr(spec, attr)!r}")
        if spec.weight < 0:
            raise ValidationError(f"metrics.{name}.weight must not be negative, got {spec.weight}")
        if spec.weight > MAX_SPEC_WEIGHT:
            raise ValidationError(f"metrics.{name}.weight must be at most {MAX_SPEC_WEIGHT:g}, got {spec.weight:g}")
        if spec.direction == 0:
            raise ValidationError(f"metrics.{name}.direction must not be 0")
    if sum(s.weight for s in metrics.values()) <= 0:
        raise ValidationError("at least one metric weight must be positive")


# --------------------------------------------------------------------------- core

def compute_arrays(values: np.ndarray, directions: np.ndarray, offsets: np.ndarray, weights: np.ndarray,
                   perf_index: int, reference: np.ndarray | None = None, rates: np.ndarray | None = None
                   ) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray, list[str]]:
    """Vectorised Dynascore on a ``models x metrics`` matrix of dataset-averaged values.

    Returns ``(scores, converted, utilities, amrs, notes)``; ``amrs`` holds NaN where no
    exchange rate could be estimated (those metrics convert to 0). ``weights`` need not
    be normalised. ``reference`` (a boolean mask over the models, default all) selects the
    models the exchange rates are estimated from; every model is then converted at those
    rates. With every model a reference model this is exactly Dynaboard's definition; a
    smaller reference set is how a public board keeps one submitter's extra rows from
    moving everybody's rates (docs/board.md). ``rates`` (one per metric, NaN: none) are fixed
    exchange rates, a board's published rate edition (:mod:`dynadesk.scoring.rates`): nothing is
    estimated from the rows, so a model's score depends on its own values, the weights and the
    rates alone.
    """
    values = np.asarray(values, dtype=float)
    n, m = values.shape
    utilities = values * directions + offsets
    w = np.asarray(weights, dtype=float) / float(np.sum(weights))
    amrs = np.ones(m)
    notes: list[str] = []
    ref = np.ones(n, dtype=bool) if reference is None else np.asarray(reference, dtype=bool)
    ref_util = utilities[ref]
    perf = ref_util[:, perf_index] if len(ref_util) else np.zeros(0)
    threshold = PAIR_TOLERANCE * abs(float(perf.max())) if len(perf) else 0.0
    estimable = False
    if rates is not None:
        amrs = np.asarray(rates, dtype=float).copy()
        amrs[perf_index] = 1.0
    for j in range(m if rates is None else 0):
        if j == perf_index:
            continue
        col = ref_util[:, j]
        order = np.lexsort((col, perf))
        dp = np.diff(perf[order])
        keep = dp > threshold
        if not keep.any():
            amrs[j] = np.nan
            continue
        estimable = True
        amrs[j] = float(np.mean(np.abs(np.diff(col[order]))[keep] / dp[keep]))
    if m > 1 and n > 1 and not estimable and rates is None:  # one model: the board's own note says so
        notes.append("no two models differ in performance by more than "
                     f"{PAIR_TOLERANCE:g} x the best: no exchange rate can be estimated, so only "
                     "performance counts (other metrics convert to 0)")
    scale = np.zeros(m)
    ok = ~np.isnan(amrs) & (amrs != 0)
    scale[ok] = 1.0 / np.abs(amrs[ok])
    converted = utilities * scale + 0.0  # + 0.0 turns -0.0 into 0.0
    scores = converted @ w if n else np.zeros(0)
    return scores, converted, utilities, amrs, notes


def competition_ranks(scores: np.ndarray) -> np.ndarray:
    """1 = best; scores equal within 1e-9 (relative) share a rank ("1, 2, 2, 4")."""
    scores = np.asarray(scores, dtype=float)
    if scores.ndim == 1:
        return _ranks_2d(scores[:, None])[:, 0]
    return _ranks_2d(scores)


def _ranks_2d(scores: np.ndarray) -> np.ndarray:
    n = scores.shape[0]
    order = np.argsort(-scores, axis=0, kind="stable")
    s = np.take_along_axis(scores, order, axis=0)
    tol = _RANK_TOL * np.maximum(1.0, np.abs(s[:-1]))
    new_group = np.vstack([np.ones((1, s.shape[1]), bool), (s[:-1] - s[1:]) > tol])
    pos = np.arange(1, n + 1)[:, None] * np.ones((1, s.shape[1]), int)
    group_rank = np.maximum.accumulate(np.where(new_group, pos, 0), axis=0)
    ranks = np.empty_like(group_rank)
    np.put_along_axis(ranks, order, group_rank, axis=0)
    return ranks


def rank_stability(result: DynascoreResult, grid: tuple[float, ...] = WEIGHT_GRID) -> dict[str, dict[str, Any]]:
    """For each model, the best and worst rank over boards where one weight varies over ``grid``.

    Each metric's weight in turn takes every grid value while the others keep theirs
    (a combination whose weights are all 0 is skipped). ``by_metric[metric]`` is the
    ``[best, worst]`` rank range caused by that metric's weight alone.
    """
    names = [m.name for m in result.models]
    if not names:
        return {}
    conv = result.converted_matrix
    base = np.array([result.metrics[k].weight for k in result.metrics], dtype=float)
    lo = np.array([m.rank for m in result.models])
    hi = lo.copy()
    by_metric: dict[str, tuple[np.ndarray, np.ndarray]] = {}
    for j, metric in enumerate(result.metrics):
        W = np.repeat(base[:, None], len(grid), axis=1)
        W[j, :] = grid
        W = W[:, W.sum(axis=0) > 0]
        if W.shape[1] == 0:
            continue
        ranks = _ranks_2d(conv @ W)
        mlo, mhi = ranks.min(axis=1), ranks.max(axis=1)
        by_metric[metric] = (mlo, mhi)
        lo, hi = np.minimum(lo, mlo), np.maximum(hi, mhi)
    return {name: {"rank": result.models[i].rank, "min_rank": int(lo[i]), "max_rank": int(hi[i]),
                   "by_metric": {k: [int(v[0][i]), int(v[1][i])] for k, v in by_metric.items()}}
            for i, name in enumerate(names)}


# --------------------------------------------------------------------------- documents

def _number(value: Any, where: str) -> float:
    if not _finite(value):
        raise ValidationError(f"{where} must be a finite number, got {value!r}")
    return float(value)


def parse_metrics(raw: Any, where: str = "metrics") -> dict[str, MetricSpec]:
    """``{name: {"direction", "offset", "weight"}}`` -> specs; omitted keys take defaults."""
    if not isinstance(raw, Mapping) or not raw:
        raise ValidationError(f"{where} must be a non-empty mapping of metric name -> settings")
    defaults = default_metrics()
    out = {}
    for name, spec in raw.items():
        if not isinstance(spec, Mapping):
            raise ValidationError(f"{where}.{name} must be a mapping with direction, offset, weight")
        unknown = set(spec) - {"direction", "offset", "weight"}
        if unknown:
            raise ValidationError(f"{where}.{name}: unknown key(s) {', '.join(sorted(unknown))}")
        d = defaults.get(name, MetricSpec())
        out[name] = MetricSpec(
            _number(spec.get("direction", d.direction), f"{where}.{name}.direction"),
            _number(spec.get("offset", d.offset), f"{where}.{name}.offset"),
            _number(spec.get("weight", d.weight), f"{where}.{name}.weight"))
    return out
