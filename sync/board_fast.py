"""Board scoring from matrices built once per board change, so a query costs a few numpy calls.

:func:`dynadesk.scoring.dynascore.compute` re-reads every model's nested dict on each
call (about 10 ms for 500 models) and builds a :class:`ModelScore` for every model, though
a query returns one page. :class:`BoardMatrix` keeps each metric as a ``models x datasets``
array (NaN where a value is missing or not a finite number); a query only averages the
columns its dataset weights select, then calls the same vectorised core
(:func:`dynascore.compute_arrays`, :func:`dynascore.competition_ranks`) the same way
``compute`` does, so scores, ranks, AMRS and notes are identical. Any board ``compute``
would treat specially (a model left off, a metric given per dataset by some models and as
one number by others, no models) returns ``None`` and the caller uses ``compute`` itself.
``tests/test_sync_board_fast.py`` checks the two agree.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

import numpy as np

from dynadesk.errors import ValidationError
from dynadesk.scoring import dynascore


def _number(v: Any) -> float:
    """``v`` as a float if ``compute`` would take it as a finite number, else NaN (it would leave the model off)."""
    if type(v) not in (int, float):
        return math.nan
    try:
        f = float(v)
    except OverflowError:
        return math.nan
    return f if math.isfinite(f) else math.nan


@dataclass(frozen=True)
class Scored:
    """One scoring of a board: what a board answer needs, with rows made only for the requested page."""

    total: int
    amrs: dict[str, float | None]
    left_off: dict[str, str]
    notes: list[str]
    page: list[dynascore.ModelScore]


@dataclass(frozen=True)
class BoardMatrix:
    names: list[str]                                        # model labels, sorted (compute's order)
    columns: dict[str, np.ndarray]                          # whole-run metrics: value per model
    per_dataset: dict[str, tuple[list[str], np.ndarray]]    # metric -> (sorted datasets, models x datasets)
    mixed: frozenset[str]                                   # metrics only compute can handle

    @classmethod
    def build(cls, models: Mapping[str, Mapping[str, Any]], metric_names: list[str]) -> BoardMatrix:
        names = sorted(models)
        columns, per_dataset, mixed = {}, {}, set()
        for metric in metric_names:
            vals: list[Any] = [models[n].get(metric) for n in names]
            dicts = [type(v) is dict for v in vals]
            if not any(dicts):
                columns[metric] = np.array([_number(v) for v in vals], dtype=float)
            elif all(dicts):
                datasets = sorted({d for v in vals for d in v})
                per_dataset[metric] = (datasets, np.array([[_number(v.get(d)) for d in datasets] for v in vals],
                                                          dtype=float).reshape(len(names), len(datasets)))
            else:
                mixed.add(metric)
        return cls(names, columns, per_dataset, frozenset(mixed))

    def _averaged(self, metric_names: list[str], dataset_weights: Mapping[str, float] | None) -> np.ndarray | None:
        """The ``models x metrics`` matrix ``compute`` would build, or None where it would do something else."""
        cols = []
        for metric in metric_names:
            if metric in self.mixed:
                return None
            if metric in self.columns:
                col = self.columns[metric]
            else:
                datasets, matrix = self.per_dataset[metric]
                w = {d: (1.0 if dataset_weights is None or d not in dataset_weights else float(dataset_weights[d]))
                     for d in datasets}
                total = sum(w.values())
                if total <= 0:
                    raise ValidationError(f"every dataset of metric '{metric}' has weight 0 ({', '.join(datasets)})")
                used = [i for i, d in enumerate(datasets) if w[d] > 0]
                sub = np.ascontiguousarray(matrix[:, used])
                if not np.all(np.isfinite(sub)):
                    return None
                col = sub @ np.array([w[datasets[i]] / total for i in used])
            if not np.all(np.isfinite(col)):
                return None
            cols.append(col)
        return np.column_stack(cols)

    def score(self, specs: dict[str, dynascore.MetricSpec], perf_metric: str,
              dataset_weights: Mapping[str, float] | None, offset: int, limit: int) -> Scored | None:
        """``compute(models, specs, perf_metric, dataset_weights)``, restricted to one page; None: use compute."""
        if not self.names:
            return None
        dynascore.compute({}, specs, perf_metric, dataset_weights)  # the same checks of weights and specs
        names_m = list(specs)
        values = self._averaged(names_m, dataset_weights)
        if values is None:
            return None
        spec_list = [specs[k] for k in names_m]
        raw_w = np.array([s.weight for s in spec_list])
        pi = names_m.index(perf_metric)
        with np.errstate(over="ignore", invalid="ignore"):
            scores, conv, _util, amrs, notes = dynascore.compute_arrays(
                values, np.array([s.direction for s in spec_list]), np.array([s.offset for s in spec_list]), raw_w, pi)
        if not np.all(np.isfinite(scores)):
            raise ValidationError("metric values are too large to combine (the Dynascore overflows); check their units")
        n = len(self.names)
        for j, k in enumerate(names_m):
            if j != pi and n > 1 and amrs[j] == 0:
                notes.append(f"metric '{k}' does not change between models of different performance: "
                             "its AMRS is 0 and it converts to 0 for every model")
        if n == 1:
            notes.append("a single model: there is nothing to compare it with; "
                         "its Dynascore is its weighted performance")
        ranks = dynascore.competition_ranks(scores)
        order = np.argsort(ranks, kind="stable")[offset:offset + limit]  # names are sorted: ties go by name
        page = [dynascore.ModelScore(self.names[i], float(scores[i]), int(ranks[i]),
                                     dict(zip(names_m, values[i].tolist())), {},
                                     dict(zip(names_m, conv[i].tolist()))) for i in order.tolist()]
        return Scored(n, {k: (None if math.isnan(a) else float(a)) for k, a in zip(names_m, amrs)}, {}, notes, page)
