"""Baselines: rows that are shown beside a board, never ranked on it (issue 44, item 4).

A constant predictor (the majority-label model) answers the same label for every example, so its
throughput is a table lookup and its robustness and fairness are 100 by construction: it never
changes its answer, whatever the perturbation. Dynaboard's exchange rates turn those figures into
points, which ranked a model with macro-F1 19 above trained models. A baseline is therefore shown
as a baseline row: scored at the board's rates (so its figures read like every other row's) but
unranked and never one of the rows the exchange rates come from.

:func:`is_baseline` is the one decision every board makes (the local board, the app, the public
board and its API, snapshots); :func:`constant_predictions` is its evidence, read from the run's
per-example outcomes (the compact form the bundle signs, ``payload.outcomes``, and the run's profile
stores). A task owner may also name baselines in the task file (``baselines: [model, ...]``).
"""

from __future__ import annotations

import math
from collections.abc import Collection, Iterable, Mapping
from dataclasses import dataclass
from typing import Any

import numpy as np

from dynadesk.scoring.board import ScoreBoard, Weighting
from dynadesk.scoring.dynascore import PERF, MetricSpec

CONSTANT = "its predictions are constant: one answer (label, span or abstention) for every example of every test set"
MARKED = "the task file names it a baseline"
TRIVIAL_METRICS = ("robustness", "fairness")
TRIVIAL = ("trivial: a constant predictor never changes its answer, so its robustness and fairness are 100 by "
           "construction")
RANK = "baseline"  # what a board prints where a ranked row's rank is


@dataclass(frozen=True)
class Baseline:
    """Why a row is a baseline, and whether its robustness and fairness are trivial (a constant predictor)."""

    reason: str
    constant: bool

    @property
    def trivial(self) -> tuple[str, ...]:
        """The metrics that are trivially perfect for this row (robustness and fairness of a constant predictor)."""
        return TRIVIAL_METRICS if self.constant else ()

    def to_dict(self) -> dict[str, Any]:
        return {"reason": self.reason, "constant": self.constant, "trivial": list(self.trivial)}


def outcomes_by_dataset(raw: Any) -> dict[str, Mapping[str, Any]]:
    """A run's compact outcomes by dataset, from the signed list (``[{"dataset": ...}]``) or the profile's mapping."""
    if isinstance(raw, Mapping):
        return {str(k): v for k, v in raw.items() if isinstance(v, Mapping)}
    if isinstance(raw, list):
        return {str(o["dataset"]): o for o in raw if isinstance(o, Mapping) and isinstance(o.get("dataset"), str)}
    return {}


def constant_predictions(outcomes: Any) -> bool:
    """Whether the per-example outcomes show one answer for every example of every test set.

    The label-pair form (``label-pairs-u8``, macro-F1 tasks) records the prediction itself; the per-example score
    form (``u16x100``: accuracy, SQuAD F1 / exact match) records ``one_answer`` when one answer (a span's normalised
    text, an abstention, or a label) was given for every example of a test set whose golds vary
    (``bootstrap.outcomes``). A test set on which every gold is the same is no evidence (a perfect model answers
    one thing there too), so at least one test set must be informative, and every test set with evidence must show
    the same kind: a run with a test set answered variously, or with no evidence at all, is not constant. A
    malformed outcome counts as none."""
    from dynadesk.scoring.bootstrap import decode_outcomes

    informative = False
    seen = False
    for raw in outcomes_by_dataset(outcomes).values():
        try:
            o = decode_outcomes(raw)
        except Exception:  # noqa: BLE001 - a malformed outcome is no evidence (the server refuses it at ingest)
            return False
        if not o.size:
            continue
        if o.scores is not None:  # per-example scores: the host recorded whether the answers were one
            if not o.one_answer:
                return False
            seen = informative = True
            continue
        if o.pred is None or o.gold is None:
            continue
        if np.unique(o.pred).shape[0] != 1:
            return False
        seen = True
        informative = informative or np.unique(o.gold).shape[0] > 1
    return seen and informative


def is_baseline(model: str, constant: bool, marked: Collection[str] = ()) -> Baseline | None:
    """THE baseline decision of every board: a baseline when its outcomes show constant predictions
    (:func:`constant_predictions`) or the task file names the model a baseline (``marked``); else None."""
    if constant:
        return Baseline(CONSTANT + (f"; {MARKED}" if model in marked else ""), True)
    if model in marked:
        return Baseline(MARKED, False)
    return None


def marked_in(task: Any) -> tuple[str, ...]:
    """The baselines a task definition names (``Task.baselines``; () for a task without the field)."""
    return tuple(getattr(task, "baselines", ()) or ())


@dataclass(frozen=True)
class BaselineScore:
    """A baseline row scored at the rates of the ranked rows: no rank, its Dynascore and contributions."""

    name: str
    dynascore: float | None                  # None: it lacks a scored metric (the board's reason in ``left_off``)
    values: dict[str, float]
    converted: dict[str, float]
    contributions: dict[str, float]
    left_off: str | None = None


def score_at_rates(rows: Mapping[str, Any], metrics: Mapping[str, MetricSpec], amrs: Mapping[str, float | None],
                   perf_metric: str = PERF, dataset_weights: Mapping[str, float] | None = None,
                   known_datasets: Iterable[str] | None = None) -> list[BaselineScore]:
    """Score baseline ``rows`` (``{model: {metric: number | {dataset: number}}}``, the ScoreBoard input) at a
    ranked board's exchange rates ``amrs`` and metric specs ``metrics`` (as scored: weights, memory budget), without
    ranking them and without their values touching any rate (their own scoring only takes the dataset-weighted
    means). ``dataset_weights`` and ``known_datasets``: those the ranked board was scored with."""
    if not rows:
        return []
    own = ScoreBoard(rows, list(metrics)).score(dict(metrics), Weighting(dataset_weights=dataset_weights),
                                                perf_metric=perf_metric, known_datasets=known_datasets)
    total = sum(s.weight for s in metrics.values()) or 1.0
    weights = {k: s.weight / total for k, s in metrics.items()}
    out = [_at(own.names[i], own.row(i).values, metrics, amrs, weights) for i in range(own.total)]
    out += [BaselineScore(name, None, {}, {}, {}, why) for name, why in own.left_off.items()]
    return sorted(out, key=lambda b: b.name)


def _at(name: str, values: Mapping[str, float], metrics: Mapping[str, MetricSpec],
        amrs: Mapping[str, float | None], weights: Mapping[str, float]) -> BaselineScore:
    """One row converted exactly as :func:`dynadesk.scoring.dynascore.compute_arrays` converts the ranked rows."""
    converted: dict[str, float] = {}
    for k, spec in metrics.items():
        rate = amrs.get(k)
        scale = 1.0 / abs(rate) if rate is not None and not math.isnan(rate) and rate != 0 else 0.0
        if k not in values:  # a weight-0 metric the row lacks: it adds nothing
            converted[k] = 0.0
            continue
        converted[k] = (values[k] * spec.direction + spec.offset) * scale + 0.0
    contributions = {k: weights[k] * v for k, v in converted.items()}
    return BaselineScore(name, float(sum(contributions.values())), dict(values), converted, contributions)


def notes(found: Mapping[str, Baseline]) -> list[str]:
    """The board notes about its baselines (label -> why), one per baseline and one per trivial pair of figures:
    each appears when, and only when, its row is a baseline (or a constant predictor)."""
    out = [f"{label}: a baseline ({b.reason}); shown unranked, and not one of the rows the exchange rates come from"
           for label, b in sorted(found.items())]
    out += [f"{label}: robustness and fairness {TRIVIAL}" for label, b in sorted(found.items()) if b.constant]
    return out


def breakdown_reference(res: Any) -> tuple[str, str, dict[str, float]] | None:
    """``(name, kind, contributions)`` the charts are drawn against (issue 44, item 7): the board's baseline, else
    its lowest-ranked row; None on an empty board. ``res`` is a ``scoring.leaderboard.Leaderboard`` (not
    imported: leaderboard imports this module). What every row shares then does not fill the picture."""
    scored = [b for b in res.baselines if b.converted]
    if scored:
        ref, kind = scored[0], "the baseline"
    elif res.rows:
        ref, kind = res.rows[-1], "the lowest-ranked row"
    else:
        return None
    return ref.model, kind, {k: res.weights[k] * ref.converted.get(k, 0.0) for k in res.metrics}
