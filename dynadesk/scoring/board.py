"""One scoring board: the model x dataset x metric matrix, built once and scored on demand.

The local leaderboard (CLI), the app's leaderboard and the leaderboard server all score
through :class:`ScoreBoard`, so every rule below is written here once:

- a stored table ``{metric: {dataset: value}}`` (dataset ``''`` = whole run) counts its
  per-dataset values where there are any, else the whole-run value (:func:`score_input`);
- a plain number counts the same on every dataset of its metric;
- a model's value for a metric is the mean of its per-dataset values weighted by the
  dataset weights (default 1, normalised over the datasets the metric has; a dataset of
  weight 0 need not be present);
- a model missing a scored metric, a positively weighted dataset, or holding a value that
  is not a finite number is left off with the reason; a metric of weight 0 that some model
  lacks is dropped from the score (with a note) instead;
- memory counts as memory saved below the memory budget;
- metric weights, dataset weights, the memory budget and the page are validated here
  (non-finite, negative or absurdly large values raise :class:`ValidationError` naming the
  parameter), so every surface refuses the same inputs.

Scoring then calls the vectorised Dynascore core (:func:`dynascore.compute_arrays`).
A query costs a few numpy calls on the prebuilt matrix; rows are made only for the page.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from operator import itemgetter
from typing import Any

import numpy as np

from dynadesk.errors import ValidationError
from dynadesk.scoring.amrs_noise import AMRS_MODES, Spreads, noise_checks, noise_notes, robust_rescore
from dynadesk.scoring.dynascore import (
    DEFAULT_MEMORY_BUDGET_GIB,
    PAIR_TOLERANCE,
    PERF,
    DynascoreResult,
    MetricSpec,
    ModelScore,
    check_specs,
    competition_ranks,
    compute_arrays,
    default_metrics,
    parse_metrics,
)

SCORE_METRICS: tuple[str, ...] = tuple(default_metrics())  # perf, throughput, memory, robustness, fairness
MAX_WEIGHT = 1e6            # metric or dataset weight; larger ones only make the others vanish
MAX_MEMORY_BUDGET_GIB = 1e6
MAX_PAGE_ROWS = 1000
MAX_OFFSET = 10 ** 9
_NUMBER_TYPES = {float, int}
_ABSENT: Any = object()  # a model without the metric at all


def score_input(table: Mapping[str, Mapping[str, float]]) -> dict[str, Any]:
    """``{metric: {dataset: value}}`` ('' = whole run) -> per-dataset values where there are any, else the
    whole-run value."""
    out: dict[str, Any] = {}
    for metric, by_ds in table.items():
        named = {d: v for d, v in by_ds.items() if d != ""}
        if named or "" in by_ds:
            out[metric] = named if named else by_ds[""]
    return out


def _number(v: Any) -> float:
    """``v`` as a float if it is a finite int/float (bools and strings are not numbers here), else NaN."""
    if type(v) not in _NUMBER_TYPES:
        return math.nan
    try:
        f = float(v)
    except OverflowError:
        return math.nan
    return f if math.isfinite(f) else math.nan


def _is_mapping(v: Any) -> bool:
    return type(v) is dict or isinstance(v, Mapping)


def _finite(v: Any) -> bool:
    return not math.isnan(_number(v))


def _bounded(value: Any, where: str, hi: float, lo: float = 0.0, lo_open: bool = False) -> float:
    """``value`` as a float within ``[lo, hi]`` (``(lo, hi]`` if ``lo_open``), else a ValidationError naming it."""
    if not _finite(value) or value > hi or value < lo or (lo_open and value == lo):
        low = f"> {lo:g}" if lo_open else f">= {lo:g}"
        raise ValidationError(f"{where} must be a finite number {low} and at most {hi:g}, got {value!r}")
    return float(value)


@dataclass(frozen=True)
class _Column:
    """One metric over every model: ``values`` is models x datasets (one column for a whole-run metric),
    NaN where a value is absent or not a finite number."""

    datasets: tuple[str, ...]       # () for a metric given only as whole-run numbers
    values: np.ndarray
    present: np.ndarray             # model has the metric at all
    whole: np.ndarray               # model gave one number for a per-dataset metric (kept exact)


def _column(vals: list[Any]) -> _Column:
    n = len(vals)
    present = np.array([v is not _ABSENT for v in vals], dtype=bool)
    dict_keys = {tuple(v) for v in vals if _is_mapping(v)}
    if not dict_keys:
        return _Column((), np.array([_number(v) for v in vals], dtype=float).reshape(n, 1), present,
                       np.zeros(n, dtype=bool))
    datasets = tuple(sorted({d for keys in dict_keys for d in keys}))
    fast = _dense(vals, datasets)
    if fast is not None:
        return _Column(datasets, fast, present, np.zeros(n, dtype=bool))
    rows = [[_number(v.get(d)) for d in datasets] if _is_mapping(v) else [_number(v)] * len(datasets)
            for v in vals]
    whole = np.array([v is not _ABSENT and not _is_mapping(v) for v in vals], dtype=bool)
    return _Column(datasets, np.array(rows, dtype=float).reshape(n, len(datasets)), present, whole)


def _dense(vals: list[Any], datasets: tuple[str, ...]) -> np.ndarray | None:
    """The matrix when every model gives a number for every dataset (the common case, a few C loops)."""
    getter = itemgetter(*datasets)
    try:
        cells = [getter(v) for v in vals]
        flat = [x for c in cells for x in c] if len(datasets) > 1 else cells
        if not set(map(type, flat)) <= _NUMBER_TYPES:
            return None
        arr = np.array(cells, dtype=float).reshape(len(vals), len(datasets))
    except (KeyError, TypeError, OverflowError):
        return None
    arr[~np.isfinite(arr)] = np.nan
    return arr



@dataclass(frozen=True)
class Weighting:
    """The choices a Dynascore is computed under, the same five on every board (the CLI's, the app's, the
    server's): metric ``weights`` (a weight not given: the metric's default), ``dataset_weights`` (default 1),
    the memory budget that memory is saved below, the AMRS mode (``"dynaboard"``, or ``"robust"``:
    :mod:`amrs_noise`) and fixed exchange ``rates`` by metric (a rate edition; None: estimated from the rows).
    One value, so a board query carries them together; :meth:`ScoreBoard.score` checks every one of them."""

    weights: Mapping[str, float] | None = None
    dataset_weights: Mapping[str, float] | None = None
    memory_budget_gib: float = DEFAULT_MEMORY_BUDGET_GIB
    amrs_mode: str = "dynaboard"
    rates: Mapping[str, float | None] | None = None


@dataclass(frozen=True)
class BoardScore:
    """One scoring of a board; arrays are best first. :meth:`page` makes rows only for the requested page."""

    perf_metric: str
    metrics: dict[str, MetricSpec]          # as scored (a dropped weight-0 metric is not here)
    weights: dict[str, float]               # normalised
    amrs: dict[str, float | None]
    names: list[str]
    scores: np.ndarray
    ranks: np.ndarray
    values: np.ndarray                      # dataset-averaged, models x scored metrics
    utilities: np.ndarray
    converted: np.ndarray
    other_values: dict[str, np.ndarray]     # the board's other metrics, averaged the same way (NaN: none)
    left_off: dict[str, str]
    notes: list[str]
    offset: int = 0
    limit: int | None = None
    reference: tuple[str, ...] | None = None  # the models the exchange rates came from (None: every model)

    @property
    def total(self) -> int:
        return len(self.names)

    def row(self, i: int) -> ModelScore:
        names = list(self.metrics)
        return ModelScore(self.names[i], float(self.scores[i]), int(self.ranks[i]),
                          dict(zip(names, self.values[i].tolist())), dict(zip(names, self.utilities[i].tolist())),
                          dict(zip(names, self.converted[i].tolist())))

    def page(self) -> list[ModelScore]:
        end = self.total if self.limit is None else self.offset + self.limit
        return [self.row(i) for i in range(self.offset, min(end, self.total))]

    def others(self, i: int) -> dict[str, float]:
        """Model ``i``'s averaged values of the metrics that are not scored."""
        return {k: float(col[i]) for k, col in self.other_values.items() if not math.isnan(col[i])}

    def to_result(self) -> DynascoreResult:
        """Every scored model as the :mod:`dynascore` result (for ``rank_stability`` and documents)."""
        return DynascoreResult(self.perf_metric, self.metrics, self.weights, self.amrs,
                               [self.row(i) for i in range(self.total)], self.left_off, self.notes,
                               self.converted)


class ScoreBoard:
    """The models x datasets x metrics matrix of one board, built once; :meth:`score` answers a query.

    ``models`` is ``{model: {metric: number | {dataset: number}}}`` (see :func:`score_input` for
    the stored form); ``metrics`` restricts the board to those metrics (default: all it has);
    """

    def __init__(self, models: Mapping[str, Any], metrics: Iterable[str] | None = None):
        self.names = sorted(models)
        self._raw = [models[n] for n in self.names]
        rows = [r if _is_mapping(r) else {} for r in self._raw]
        names_m = list(metrics) if metrics is not None else sorted({k for r in rows for k in r})
        self.columns = {m: _column([r.get(m, _ABSENT) for r in rows]) for m in names_m}
        self.datasets = sorted({d for c in self.columns.values() for d in c.datasets})

    @classmethod
    def from_tables(cls, tables: Mapping[str, Mapping[str, Mapping[str, float]]],
                    metrics: Iterable[str] | None = None) -> ScoreBoard:
        """A board from stored tables ``{model: {metric: {dataset or '': value}}}``."""
        return cls({m: score_input(t) for m, t in tables.items()}, metrics)

    # ------------------------------------------------------------------ inputs
    def specs(self, metrics: Mapping[str, MetricSpec] | None = None, weights: Mapping[str, float] | None = None,
              memory_budget_gib: float = DEFAULT_MEMORY_BUDGET_GIB) -> dict[str, MetricSpec]:
        """The metric specs of a query: ``metrics`` (default: Dynaboard's, with the memory budget) re-weighted."""
        if metrics is None:
            budget = _bounded(memory_budget_gib, "the memory budget (GiB)", MAX_MEMORY_BUDGET_GIB, lo_open=True)
            specs = default_metrics(budget)
        else:
            specs = dict(metrics)
        for name, w in (weights or {}).items():
            if name not in specs:
                raise ValidationError(f"weight of '{name}': not a Dynascore metric (use {', '.join(specs)})")
            s = specs[name]
            specs[name] = MetricSpec(s.direction, s.offset, _bounded(w, f"the weight of metric '{name}'", MAX_WEIGHT))
        return specs

    def _dataset_weights(self, dataset_weights: Mapping[str, float] | None,
                         known: Iterable[str] | None) -> dict[str, float]:
        """Checked dataset weights; ``known`` (default: the board's datasets) are the names that may be weighted."""
        out = {}
        for name, w in (dataset_weights or {}).items():
            out[name] = _bounded(w, f"dataset weight for '{name}'", MAX_WEIGHT)
        names = sorted(set(self.datasets if known is None else known))
        unknown = sorted(set(out) - set(names))
        if unknown and (self.names or known is not None):
            raise ValidationError(f"dataset weight names unknown dataset(s) {', '.join(unknown)} "
                                  f"(this board has: {', '.join(names) or 'none'})")
        return out

    @staticmethod
    def _page(offset: int, limit: int | None) -> tuple[int, int | None]:
        if type(offset) is not int or not 0 <= offset <= MAX_OFFSET:
            raise ValidationError(f"the page offset must be an integer between 0 and {MAX_OFFSET}, got {offset!r}")
        if limit is not None and (type(limit) is not int or not 1 <= limit <= MAX_PAGE_ROWS):
            raise ValidationError(f"the page limit must be an integer between 1 and {MAX_PAGE_ROWS}, got {limit!r}")
        return offset, limit

    # ------------------------------------------------------------------ averaging
    def _averaged(self, metric: str, dw: Mapping[str, float]) -> tuple[np.ndarray, np.ndarray, list[str]] | None:
        """``(mean per model, model lacks a weighted value, datasets used)``; None if every dataset has weight 0."""
        col = self.columns[metric]
        if not col.datasets:
            values = col.values[:, 0]
            return values, np.isnan(values), []
        w = np.array([dw.get(d, 1.0) for d in col.datasets])
        total = float(w.sum())
        if total <= 0:
            return None
        used = np.flatnonzero(w > 0)
        sub = col.values[:, used]
        bad = np.isnan(sub).any(axis=1)
        with np.errstate(over="ignore", invalid="ignore"):
            mean = sub @ (w[used] / total)
        if col.whole.any():  # a whole-run number is its own mean, exactly
            mean[col.whole] = col.values[col.whole, 0]
        return mean, bad, [col.datasets[i] for i in used]

    # ------------------------------------------------------------------ scoring
    def score(self, metrics: Mapping[str, MetricSpec] | None = None, weighting: Weighting | None = None, *,
              perf_metric: str = PERF, offset: int = 0, limit: int | None = None,
              known_datasets: Iterable[str] | None = None, reference: Iterable[str] | None = None,
              spreads: Spreads | None = None) -> BoardScore:
        """Score every model (the exchange rates depend on all of them) for one query; see the module docstring.

        ``weighting``: the weights, memory budget, AMRS mode and rates (:class:`Weighting`'s defaults unless given).

        ``known_datasets``: the dataset names a weight may name (default: those the board has; a server
        board passes its task's datasets, which may be weighted before any model reports them).
        ``weighting.amrs_mode``: ``"dynaboard"`` (the default) or ``"robust"`` (:mod:`amrs_noise`).
        ``reference``: the model names the exchange rates are estimated from (default: every scored model,
        Dynaboard's definition); names not on the board or left off are ignored.
        ``spreads``: each model's relative trial spread per throughput metric, the floor :mod:`amrs_noise` judges
        throughput pairs by (default: the declared runner tolerance).
        ``weighting.rates``: fixed exchange rates by metric (a rate edition, :mod:`dynadesk.scoring.rates`; None or
        absent: no rate, the metric converts to 0): nothing is estimated from the rows, so a model's Dynascore depends
        on its values, the weights and these rates alone, and the noise notes (about rows setting rates) do not
        apply."""
        w = weighting or Weighting()
        weights, dataset_weights, memory_budget_gib, amrs_mode, rates = (w.weights, w.dataset_weights,
                                                                          w.memory_budget_gib, w.amrs_mode, w.rates)
        if amrs_mode not in AMRS_MODES:
            raise ValidationError(f"--amrs {amrs_mode!r}: use one of {', '.join(AMRS_MODES)}")
        specs = self.specs(metrics, weights, memory_budget_gib)
        dw = self._dataset_weights(dataset_weights, known_datasets)
        offset, limit = self._page(offset, limit)
        notes = self._drop_unweighted_missing(specs, perf_metric)
        check_specs(specs, perf_metric)
        names_m = list(specs)
        n = len(self.names)
        cols: list[np.ndarray] = []
        lacking = np.zeros(n, dtype=bool)
        used: dict[str, list[str]] = {}
        for metric in names_m:
            if metric not in self.columns:
                lacking[:] = True
                cols.append(np.full(n, np.nan))
                used[metric] = []
                continue
            averaged = self._averaged(metric, dw)
            if averaged is None:
                raise ValidationError(f"every dataset of metric '{metric}' has weight 0 "
                                      f"({', '.join(self.columns[metric].datasets)})")
            mean, bad, used[metric] = averaged
            cols.append(mean)
            lacking |= bad
        keep = np.flatnonzero(~lacking)
        left_off = {self.names[i]: self._why(i, names_m, used) for i in np.flatnonzero(lacking).tolist()}
        values = np.column_stack(cols)[keep] if names_m else np.zeros((len(keep), 0))
        spec_list = [specs[k] for k in names_m]
        raw_w = np.array([s.weight for s in spec_list])
        pi = names_m.index(perf_metric)
        ref_names = None if reference is None else set(reference)
        ref_mask = None if ref_names is None else np.array([self.names[i] in ref_names for i in keep.tolist()],
                                                           dtype=bool)
        fixed = None if rates is None else np.array(
            [math.nan if rates.get(k) is None else float(rates[k]) for k in names_m])  # type: ignore[arg-type]
        with np.errstate(over="ignore", invalid="ignore"):
            scores, conv, util, amrs, core_notes = compute_arrays(
                values, np.array([s.direction for s in spec_list]), np.array([s.offset for s in spec_list]), raw_w, pi,
                ref_mask, fixed)
        if not np.all(np.isfinite(scores)):
            raise ValidationError("metric values are too large to combine (the Dynascore overflows); check their units")
        notes += core_notes + ([] if fixed is not None else _amrs_notes(names_m, amrs, pi, len(keep)))
        rate_rows = np.ones(len(keep), dtype=bool) if ref_mask is None or ref_mask.sum() < 2 else ref_mask
        if rate_rows.sum() > 1 and fixed is None:  # whether a rate rests on noise (amrs_noise), over the rows
            # that set the rates (fixed rates were not set by these rows); --amrs robust leaves such a metric out
            checks = noise_checks(names_m, [self.names[i] for i in keep[rate_rows].tolist()], values[rate_rows],
                                  util[rate_rows], pi, PAIR_TOLERANCE * abs(float(util[:, pi].max())), spreads)
            notes += noise_notes(checks)
            if amrs_mode == "robust" and checks:
                scores, conv, amrs = robust_rescore(conv, amrs, raw_w, names_m, checks)
                notes.append("--amrs robust (a deviation from Dynaboard): "
                             + ", ".join(f"'{c.metric}'" for c in checks) + " left unconverted (AMRS not used)")
        ranks = competition_ranks(scores) if len(keep) else np.zeros(0, dtype=int)
        order = np.argsort(ranks, kind="stable")  # names are sorted: equal ranks go by name
        rows = keep[order]
        others = {}
        for metric in self.columns:
            if metric not in specs:
                averaged = self._averaged(metric, dw)
                if averaged is not None:
                    others[metric] = averaged[0][rows]
        return BoardScore(
            perf_metric, specs, {k: float(v) for k, v in zip(names_m, raw_w / raw_w.sum())},
            {k: (None if math.isnan(a) else float(a)) for k, a in zip(names_m, amrs)},
            [self.names[i] for i in rows.tolist()], scores[order], ranks[order], values[order], util[order],
            conv[order], others, left_off, notes, offset, limit,
            None if ref_names is None else tuple(self.names[i] for i in rows.tolist() if self.names[i] in ref_names))

    def _drop_unweighted_missing(self, specs: dict[str, MetricSpec], perf_metric: str) -> list[str]:
        """Drop (in place) each weight-0 metric that some model lacks, instead of leaving those models off."""
        notes = []
        for name in list(specs):
            if name == perf_metric or specs[name].weight != 0 or not self.names:
                continue
            col = self.columns.get(name)
            if col is None or not col.present.all():
                notes.append(f"metric '{name}' has weight 0 and some models lack it: it is left out of the score")
                del specs[name]
        return notes

    def _why(self, i: int, metric_names: Sequence[str], used: Mapping[str, list[str]]) -> str:
        """Every reason model ``i`` cannot be scored."""
        vals = self._raw[i]
        if not _is_mapping(vals):
            return f"its metric values must be a mapping, got {type(vals).__name__}"
        problems: list[str] = []
        missing = [m for m in metric_names if m not in vals]
        if missing:
            problems.append(f"missing metric{'s' if len(missing) > 1 else ''} {', '.join(map(repr, missing))}")
        for metric in metric_names:
            if metric not in vals:
                continue
            v = vals[metric]
            if not _is_mapping(v):
                if not _finite(v):
                    problems.append(f"metric '{metric}' value {v!r} is not a finite number")
                continue
            if not v:
                problems.append(f"metric '{metric}' has no values")
                continue
            absent = [d for d in used[metric] if d not in v]
            if absent:
                problems.append(f"metric '{metric}' has no value for dataset{'s' if len(absent) > 1 else ''} "
                                f"{', '.join(map(repr, absent))}")
                continue
            bad = next((d for d in used[metric] if not _finite(v[d])), None)
            if bad is not None:
                problems.append(f"metric '{metric}' on dataset '{bad}' value {v[bad]!r} is not a finite number")
        return "; ".join(problems)


def _amrs_notes(names_m: Sequence[str], amrs: np.ndarray, pi: int, n: int) -> list[str]:
    notes = [f"metric '{k}' does not change between models of different performance: "
             "its AMRS is 0 and it converts to 0 for every model"
             for j, k in enumerate(names_m) if j != pi and n > 1 and amrs[j] == 0]
    if n == 1:
        notes.append("a single model: there is nothing to compare it with; its Dynascore is its weighted performance")
    return notes


# --------------------------------------------------------------------------- the table and document API

def compute(models: Mapping[str, Mapping[str, Any]], metrics: Mapping[str, MetricSpec] | None = None,
            perf_metric: str = PERF, dataset_weights: Mapping[str, float] | None = None) -> DynascoreResult:
    """Dynascore of every model that has every metric (see the module docstring); the board's own rules."""
    specs = dict(metrics) if metrics is not None else default_metrics()
    return ScoreBoard(models, specs).score(specs, Weighting(dataset_weights=dataset_weights),
                                           perf_metric=perf_metric).to_result()


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
