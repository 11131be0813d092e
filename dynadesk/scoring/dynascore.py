"""The Dynascore (Ma et al., Dynaboard, 2021) as a pure function: no database, no Qt.

The local leaderboard, the leaderboard server and the GUI all call this module.

API
---
``compute(models, metrics=None, perf_metric="perf", dataset_weights=None) -> DynascoreResult``
    ``models``: ``{model: {metric: value}}`` where a value is a number or a per-dataset
    mapping ``{dataset: number}``. ``metrics``: ``{name: MetricSpec(direction, offset,
    weight)}`` (default :func:`default_metrics`: perf 4, throughput / memory / robustness /
    fairness 1; memory is "memory saved", direction -1, offset = budget GiB).
    ``dataset_weights``: ``{dataset: weight}`` (default equal; normalised to sum to 1).
``from_document(doc) -> DynascoreResult``
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
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from itertools import chain
from operator import itemgetter, mul
from typing import Any, cast

import numpy as np

from dynadesk.errors import ValidationError

PERF = "perf"
DEFAULT_MEMORY_BUDGET_GIB = 16.0
PAIR_TOLERANCE = 1e-4  # fraction of the highest performance below which neighbours count as tied
WEIGHT_GRID = tuple(x / 2 for x in range(11))  # 0, 0.5, ..., 5
_RANK_TOL = 1e-9


@dataclass(frozen=True)
class MetricSpec:
    """How one metric enters the Dynascore: ``x' = direction * x + offset``, then ``weight``."""

    direction: float = 1.0
    offset: float = 0.0
    weight: float = 1.0

    def to_dict(self) -> dict[str, float]:
        return {"direction": self.direction, "offset": self.offset, "weight": self.weight}


def default_metrics(memory_budget_gib: float = DEFAULT_MEMORY_BUDGET_GIB) -> dict[str, MetricSpec]:
    """Dynaboard's defaults: performance 4, every other metric 1; memory is memory saved."""
    return {
        "perf": MetricSpec(1.0, 0.0, 4.0),
        "throughput": MetricSpec(1.0, 0.0, 1.0),
        "memory": MetricSpec(-1.0, float(memory_budget_gib), 1.0),
        "robustness": MetricSpec(1.0, 0.0, 1.0),
        "fairness": MetricSpec(1.0, 0.0, 1.0),
    }


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
        index = self.__dict__.get("_index")
        if index is None or len(index) != len(self.models):
            index = self.__dict__["_index"] = {m.name: m for m in self.models}
        return cast(ModelScore, index[name])

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


def _check_specs(metrics: Mapping[str, MetricSpec], perf_metric: str) -> None:
    if perf_metric not in metrics:
        raise ValidationError(f"performance metric '{perf_metric}' is not among the metrics "
                              f"({', '.join(metrics) or 'none'})")
    for name, spec in metrics.items():
        for attr in ("direction", "offset", "weight"):
            if not _finite(getattr(spec, attr)):
                raise ValidationError(f"metrics.{name}.{attr} must be a finite number, got {getattr(spec, attr)!r}")
        if spec.weight < 0:
            raise ValidationError(f"metrics.{name}.weight must not be negative, got {spec.weight}")
        if spec.direction == 0:
            raise ValidationError(f"metrics.{name}.direction must not be 0")
    if sum(s.weight for s in metrics.values()) <= 0:
        raise ValidationError("at least one metric weight must be positive")


def _dataset_weight(dataset_weights: Mapping[str, float] | None, name: str) -> float:
    if dataset_weights is None or name not in dataset_weights:
        return 1.0
    return float(dataset_weights[name])


def _check_dataset_weights(dataset_weights: Mapping[str, float] | None) -> None:
    for name, w in (dataset_weights or {}).items():
        if not _finite(w) or w < 0:
            raise ValidationError(f"dataset weight for '{name}' must be a finite number >= 0, got {w!r}")


# --------------------------------------------------------------------------- averaging

def _is_mapping(v: Any) -> bool:
    return type(v) is dict or isinstance(v, Mapping)


def _numbers_ok(xs: tuple[Any, ...]) -> bool:
    """All finite ints/floats (bools and strings are not numbers here)."""
    try:
        return set(map(type, xs)) <= _NUMBER_TYPES and all(map(math.isfinite, xs))
    except TypeError:
        return False


_NUMBER_TYPES = {float, int}
_MISSING = object()


def _metric_datasets(models: Mapping[str, Mapping[str, Any]], metric: str) -> list[str] | None:
    """Datasets a metric is reported on (union over models); None if given as plain numbers."""
    values = [vals.get(metric) if type(vals) is dict or isinstance(vals, Mapping) else None
              for vals in models.values()]
    keysets = {tuple(v) for v in values
               if type(v) is dict or (type(v) not in _NUMBER_TYPES and isinstance(v, Mapping))}
    if not keysets:
        return None
    return sorted({d for keys in keysets for d in keys})


# per metric: (datasets used, their normalised weights, a getter of their values), or None for a whole-run value
_Plan = tuple[list[str], list[float], Any] | None


def _average(models: Mapping[str, Any], metric_names: Sequence[str],
             dataset_weights: Mapping[str, float] | None) -> tuple[list[str], np.ndarray, dict[str, str]]:
    """Dataset-averaged ``models x metrics`` matrix for the eligible models, and who was left off."""
    plans: dict[str, _Plan] = {}
    for metric in metric_names:
        datasets = _metric_datasets(models, metric)
        if datasets is None:
            plans[metric] = None
            continue
        w = {d: _dataset_weight(dataset_weights, d) for d in datasets}
        total = sum(w.values())
        if total <= 0:
            raise ValidationError(f"every dataset of metric '{metric}' has weight 0 ({', '.join(datasets)})")
        used = [d for d in datasets if w[d] > 0]
        plans[metric] = (used, [w[d] / total for d in used], itemgetter(*used))
    ordered = sorted(models)
    fast = _fast_matrix([models[m] for m in ordered], metric_names, plans)
    if fast is not None:
        return ordered, fast, {}
    names, rows, left = [], [], {}
    for model in ordered:
        row, why = _model_row(models[model], metric_names, plans)
        if why:
            left[model] = why
        else:
            names.append(model)
            rows.append(row)
    matrix = np.array(rows, dtype=float).reshape(len(rows), len(metric_names))
    return names, matrix, left


def _fast_matrix(rows: list[Any], metric_names: Sequence[str], plans: dict[str, _Plan]) -> np.ndarray | None:
    """The averaged matrix built column by column, or None if any model needs a closer look.

    The common case (every model has every metric as finite numbers, per dataset where
    others are) is done with a few list comprehensions and numpy; anything else falls
    back to :func:`_model_row`, which also says what is wrong.
    """
    n = len(rows)
    if not all(type(v) is dict for v in rows):
        return None
    cols = []
    try:
        for metric in metric_names:
            plan = plans[metric]
            if plan is None:
                col = [v[metric] for v in rows]
                flat: Iterable[Any] = col
            else:
                used, weights, getter = plan
                cells = [getter(v[metric]) for v in rows]
                flat = chain.from_iterable(cells) if len(used) > 1 else cells
            if not set(map(type, flat)) <= _NUMBER_TYPES:
                return None
            arr = np.array(col if plan is None else cells, dtype=float)
            if not np.all(np.isfinite(arr)):
                return None
            cols.append(arr if plan is None else arr.reshape(n, len(plan[0])) @ np.array(plan[1]))
    except (KeyError, TypeError):
        return None
    return np.column_stack(cols) if cols else np.zeros((n, 0))


def _model_row(vals: Any, metric_names: Sequence[str], plans: dict[str, _Plan]) -> tuple[list[float], str | None]:
    """The model's averaged values, or ``None`` and every reason it cannot be scored."""
    if not _is_mapping(vals):
        return [], f"its metric values must be a mapping, got {type(vals).__name__}"
    row: list[float] = []
    problems: list[str] = []
    missing = [m for m in metric_names if m not in vals]
    if missing:
        problems.append(f"missing metric{'s' if len(missing) > 1 else ''} {', '.join(map(repr, missing))}")
    for metric in metric_names:
        v = vals.get(metric, _MISSING)
        if v is _MISSING:
            continue
        if not _is_mapping(v):  # a whole-run number counts for every dataset
            if _finite(v):
                row.append(float(v))
            else:
                problems.append(f"metric '{metric}' value {v!r} is not a finite number")
            continue
        used, weights, getter = cast(tuple[list[str], list[float], Any], plans[metric])  # v is per dataset
        try:
            xs = getter(v)
        except KeyError:
            absent = [d for d in used if d not in v]
            problems.append(f"metric '{metric}' has no value for dataset{'s' if len(absent) > 1 else ''} "
                            f"{', '.join(map(repr, absent))}")
            continue
        xs = xs if len(used) > 1 else (xs,)
        if not _numbers_ok(xs):
            bad = next(d for d, x in zip(used, xs) if not _finite(x))
            problems.append(f"metric '{metric}' on dataset '{bad}' value {v[bad]!r} is not a finite number")
            continue
        row.append(float(sum(map(mul, xs, weights))))
    return row, "; ".join(problems) if problems else None


# --------------------------------------------------------------------------- core

def compute_arrays(values: np.ndarray, directions: np.ndarray, offsets: np.ndarray, weights: np.ndarray,
                   perf_index: int) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray, list[str]]:
    """Vectorised Dynascore on a ``models x metrics`` matrix of dataset-averaged values.

    Returns ``(scores, converted, utilities, amrs, notes)``; ``amrs`` holds NaN where no
    exchange rate could be estimated (those metrics convert to 0). ``weights`` need not
    be normalised.
    """
    values = np.asarray(values, dtype=float)
    n, m = values.shape
    utilities = values * directions + offsets
    w = np.asarray(weights, dtype=float) / float(np.sum(weights))
    amrs = np.ones(m)
    notes: list[str] = []
    perf = utilities[:, perf_index] if n else np.zeros(0)
    threshold = PAIR_TOLERANCE * abs(float(perf.max())) if n else 0.0
    estimable = False
    for j in range(m):
        if j == perf_index:
            continue
        col = utilities[:, j]
        order = np.lexsort((col, perf))
        dp = np.diff(perf[order])
        keep = dp > threshold
        if not keep.any():
            amrs[j] = np.nan
            continue
        estimable = True
        amrs[j] = float(np.mean(np.abs(np.diff(col[order]))[keep] / dp[keep]))
    if m > 1 and n and not estimable:
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


def compute(models: Mapping[str, Mapping[str, Any]], metrics: Mapping[str, MetricSpec] | None = None,
            perf_metric: str = PERF, dataset_weights: Mapping[str, float] | None = None) -> DynascoreResult:
    """Dynascore of every model that has every metric (see the module docstring)."""
    metrics = dict(metrics) if metrics is not None else default_metrics()
    _check_specs(metrics, perf_metric)
    _check_dataset_weights(dataset_weights)
    names_m = list(metrics)
    names, values, left = _average(models, names_m, dataset_weights)
    specs = [metrics[k] for k in names_m]
    directions = np.array([s.direction for s in specs])
    offsets = np.array([s.offset for s in specs])
    raw_w = np.array([s.weight for s in specs])
    pi = names_m.index(perf_metric)
    with np.errstate(over="ignore", invalid="ignore"):
        scores, conv, util, amrs, notes = compute_arrays(values, directions, offsets, raw_w, pi)
    if not np.all(np.isfinite(scores)):
        raise ValidationError("metric values are too large to combine (the Dynascore overflows); check their units")
    for j, k in enumerate(names_m):
        if j != pi and len(names) > 1 and amrs[j] == 0:
            notes.append(f"metric '{k}' does not change between models of different performance: "
                         "its AMRS is 0 and it converts to 0 for every model")
    if len(names) == 1:
        notes.append("a single model: there is nothing to compare it with; its Dynascore is its weighted performance")
    ranks = competition_ranks(scores) if names else np.zeros(0, int)
    rows = [ModelScore(name, s_, r_, dict(zip(names_m, v_)), dict(zip(names_m, u_)), dict(zip(names_m, c_)))
            for name, s_, r_, v_, u_, c_ in zip(names, scores.tolist(), ranks.tolist(), values.tolist(),
                                                util.tolist(), conv.tolist())]
    order = sorted(range(len(rows)), key=lambda i: (rows[i].rank, rows[i].name))
    return DynascoreResult(
        perf_metric=perf_metric, metrics=metrics,
        weights={k: float(v) for k, v in zip(names_m, raw_w / raw_w.sum())},
        amrs={k: (None if math.isnan(a) else float(a)) for k, a in zip(names_m, amrs)},
        models=[rows[i] for i in order], left_off=left, notes=notes,
        converted_matrix=conv[order] if len(rows) else conv)


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


def from_document(doc: Any) -> DynascoreResult:
    """Score the ``dynadesk dynascore FILE.json`` document (see the module docstring)."""
    if not isinstance(doc, Mapping):
        raise ValidationError(f"the document must be a JSON object, got {type(doc).__name__}")
    unknown = set(doc) - {"perf_metric", "metrics", "models", "dataset_weights"}
    if unknown:
        raise ValidationError(f"unknown top-level key(s) {', '.join(sorted(unknown))} "
                              "(allowed: perf_metric, metrics, models, dataset_weights)")
    perf_metric = doc.get("perf_metric", PERF)
    if not isinstance(perf_metric, str):
        raise ValidationError("perf_metric must be a metric name")
    metrics = parse_metrics(doc["metrics"]) if "metrics" in doc else None
    models = doc.get("models")
    if not isinstance(models, Mapping):
        raise ValidationError("models must be a mapping of model name -> {metric: value}")
    dw = doc.get("dataset_weights")
    if dw is not None and not isinstance(dw, Mapping):
        raise ValidationError("dataset_weights must be a mapping of dataset name -> weight")
    return compute(models, metrics, perf_metric, dw)
