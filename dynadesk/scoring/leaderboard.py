"""The local leaderboard: the latest succeeded evaluation of each model, ranked by Dynascore.

``build_leaderboard(store, task, weights=None, dataset_weights=None,
memory_budget_gib=16, stability=False) -> Leaderboard`` reads
``store.evaluations.latest_succeeded(task)`` and feeds per-dataset metric values
(``metric_values`` rows; a row with dataset ``''`` is a whole-run figure, used when the
metric has no per-dataset rows) to :func:`dynadesk.scoring.dynascore.compute`.
Every stored metric is shown with its unit; the Dynascore uses ``perf``,
``throughput``, ``memory``, ``robustness`` and ``fairness``. A model lacking one of
these is left off with the reason, except that a metric given weight 0 which some
model lacks is dropped from the score (with a note) instead.
"""

from __future__ import annotations

import csv
import io
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from dynadesk.errors import ValidationError
from dynadesk.scoring.dynascore import DEFAULT_MEMORY_BUDGET_GIB, MetricSpec, compute, default_metrics, rank_stability

if TYPE_CHECKING:
    from dynadesk.store import Store
    from dynadesk.store.evaluations import EvaluationRecord

SCORE_METRICS = ("perf", "throughput", "memory", "robustness", "fairness")


@dataclass
class BoardRow:
    model: str
    rank: int
    dynascore: float
    evaluation_id: int
    finished_at: str | None
    values: dict[str, float]                   # every metric, dataset-weighted mean
    per_dataset: dict[str, dict[str, float]]   # metric -> dataset ('' = whole run) -> value
    converted: dict[str, float]                # Dynascore metrics in performance units
    stability: dict[str, Any] | None = None

    def to_dict(self) -> dict[str, Any]:
        return dict(self.__dict__)


@dataclass
class Leaderboard:
    task: str
    metrics: dict[str, MetricSpec]
    weights: dict[str, float]                  # normalised metric weights
    dataset_weights: dict[str, float]          # as given (default 1 each)
    units: dict[str, str]
    amrs: dict[str, float | None]
    rows: list[BoardRow]
    left_off: dict[str, str] = field(default_factory=dict)
    notes: list[str] = field(default_factory=list)

    @property
    def shown_metrics(self) -> list[str]:
        """The Dynascore metrics first, then every other stored metric, alphabetically."""
        others = sorted({m for r in self.rows for m in r.values} - set(self.metrics))
        return [*self.metrics, *others]

    def to_dict(self) -> dict[str, Any]:
        return {"task": self.task, "metrics": {k: v.to_dict() for k, v in self.metrics.items()},
                "weights": self.weights, "dataset_weights": self.dataset_weights, "units": self.units,
                "amrs": self.amrs, "rows": [r.to_dict() for r in self.rows], "left_off": self.left_off,
                "notes": self.notes}

    def to_csv(self) -> str:
        shown = self.shown_metrics
        stab = any(r.stability for r in self.rows)
        out = io.StringIO()
        w = csv.writer(out, lineterminator="\n")
        w.writerow(["rank", "model", "dynascore", *(_header(m, self.units) for m in shown),
                    *(["min_rank", "max_rank"] if stab else []), "evaluation_id"])
        for r in self.rows:
            w.writerow([r.rank, r.model, repr(r.dynascore), *(_cell(r.values.get(m)) for m in shown),
                        *([(r.stability or {})["min_rank"], (r.stability or {})["max_rank"]] if stab else []),
                        r.evaluation_id])
        return out.getvalue()


def _header(metric: str, units: dict[str, str]) -> str:
    unit = units.get(metric)
    return f"{metric} ({unit})" if unit else metric


def _cell(v: float | None) -> str:
    return "" if v is None else repr(v)


def parse_weights(pairs: list[str] | tuple[str, ...], what: str) -> dict[str, float]:
    """``["perf=4", "memory=0.5"]`` -> ``{"perf": 4.0, "memory": 0.5}`` with clear errors."""
    out: dict[str, float] = {}
    for pair in pairs:
        name, sep, value = pair.partition("=")
        if not sep or not name.strip():
            raise ValidationError(f"{what} '{pair}' must look like NAME=NUMBER")
        try:
            number = float(value)
        except ValueError:
            raise ValidationError(f"{what} '{pair}': '{value}' is not a number") from None
        if not number >= 0 or number == float("inf"):
            raise ValidationError(f"{what} '{pair}': the weight must be a finite number >= 0")
        out[name.strip()] = number
    return out


def _collect(records: Iterable[EvaluationRecord]) -> tuple[dict[str, dict[str, dict[str, float]]], dict[str, str]]:
    per_model: dict[str, dict[str, dict[str, float]]] = {}
    units: dict[str, str] = {}
    for rec in records:
        table: dict[str, dict[str, float]] = {}
        for mv in rec.metrics:
            table.setdefault(mv.metric, {})[mv.dataset] = mv.value
            units.setdefault(mv.metric, mv.unit)
        per_model[rec.model_name] = table
    return per_model, units


def _score_input(table: dict[str, dict[str, float]]) -> dict[str, Any]:
    """Per-dataset values where there are any, else the whole-run ('') value."""
    out: dict[str, Any] = {}
    for metric, by_ds in table.items():
        named = {d: v for d, v in by_ds.items() if d != ""}
        out[metric] = named if named else by_ds[""]
    return out


def _mean(value: Any, dataset_weights: dict[str, float]) -> float:
    if not isinstance(value, dict):
        return float(value)
    w = {d: dataset_weights.get(d, 1.0) for d in value}
    total = sum(w.values())
    if total <= 0:
        return sum(value.values()) / len(value)
    return float(sum(value[d] * w[d] for d in value) / total)


def build_leaderboard(store: Store, task: str, weights: dict[str, float] | None = None,
                      dataset_weights: dict[str, float] | None = None,
                      memory_budget_gib: float = DEFAULT_MEMORY_BUDGET_GIB, stability: bool = False) -> Leaderboard:
    """Rank the latest succeeded evaluation of every model of ``task`` (see the module docstring)."""
    from dynadesk.tasks import get_task

    get_task(task)  # a clear NotFoundError for an unknown task
    if not 0 < memory_budget_gib < float("inf"):
        raise ValidationError(f"the memory budget must be a positive number of GiB, got {memory_budget_gib}")
    specs = default_metrics(memory_budget_gib)
    for name, w in (weights or {}).items():
        if name not in specs:
            raise ValidationError(f"--weight {name}: not a Dynascore metric (use {', '.join(specs)})")
        specs[name] = MetricSpec(specs[name].direction, specs[name].offset, float(w))
    dataset_weights = dict(dataset_weights or {})
    records = store.evaluations.latest_succeeded(task)
    per_model, units = _collect(records)
    known = {d for t in per_model.values() for by_ds in t.values() for d in by_ds if d}
    unknown = sorted(set(dataset_weights) - known)
    if unknown and per_model:
        raise ValidationError(f"--dataset-weight names unknown dataset(s) {', '.join(unknown)} "
                              f"(this board has: {', '.join(sorted(known)) or 'none'})")
    inputs = {m: _score_input(t) for m, t in per_model.items()}
    notes = []
    for name in list(specs):
        if specs[name].weight == 0 and any(name not in v for v in inputs.values()):
            notes.append(f"metric '{name}' has weight 0 and some models lack it: it is left out of the score")
            del specs[name]
    if sum(s.weight for s in specs.values()) <= 0:
        raise ValidationError("at least one metric weight must be positive")
    scoring_input = {m: {k: v[k] for k in specs if k in v} for m, v in inputs.items()}
    result = compute(scoring_input, specs, "perf", dataset_weights or None)
    stab = rank_stability(result) if stability else {}
    by_eval = {r.model_name: r for r in records}
    rows = []
    for ms in result.models:
        rec = by_eval[ms.name]
        values = {k: _mean(v, dataset_weights) for k, v in inputs[ms.name].items()}
        values.update(ms.values)  # the Dynascore's own averages (same weights)
        rows.append(BoardRow(ms.name, ms.rank, ms.dynascore, rec.id, rec.finished_at, values,
                             per_model[ms.name], ms.converted, stab.get(ms.name)))
    return Leaderboard(task, result.metrics, result.weights, dataset_weights, units, result.amrs, rows,
                       result.left_off, notes + result.notes)
