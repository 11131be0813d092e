"""The local leaderboard: the latest succeeded evaluation of each model, ranked by Dynascore.

``build_leaderboard(store, task, weights=None, dataset_weights=None,
memory_budget_gib=16, stability=False, hardware_class=None) -> Leaderboard`` reads
``store.evaluations.board_runs(task, hardware_class=...)`` once into a :class:`LocalBoard` (the runs'
``metric_values`` as a :class:`~dynadesk.scoring.board.ScoreBoard`) and ranks it. Measured metrics
compare only within one hardware class, so a board ranks one class (by default the one with the most
models); ``hardware_class="all"`` ranks every run and says its measured metrics are not comparable. The app
keeps the :class:`LocalBoard` and re-ranks it on every slider move. Every stored metric is
shown with its unit; the scoring rules are the board's (:mod:`dynadesk.scoring.board`).
"""

from __future__ import annotations

import csv
import io
from collections.abc import Sequence
from dataclasses import dataclass, field, replace
from typing import TYPE_CHECKING, Any, Protocol

from dynadesk.errors import ValidationError
from dynadesk.evaluator.metric_registry import over_test_sets, run_value
from dynadesk.scoring.board import SCORE_METRICS, BoardScore, ScoreBoard, Weighting
from dynadesk.scoring.classes import (
    ALL_CLASSES,
    NOT_COMPARABLE,
    choose_hardware_class,
    noisy_in_environment,
    noisy_left_off,
)
from dynadesk.scoring.dynascore import (
    MetricSpec,
    rank_stability,
)
from dynadesk.store.evaluations import EvaluationRecord

if TYPE_CHECKING:
    from dynadesk.store import Store
    from dynadesk.store.evaluations import EvaluationRepo


class RunStore(Protocol):
    """What the board reads from a store: its evaluation runs."""

    evaluations: EvaluationRepo

__all__ = ["ALL_CLASSES", "NOT_COMPARABLE", "SCORE_METRICS", "BoardRow", "Leaderboard", "LocalBoard",
           "build_leaderboard", "choose_hardware_class", "noisy_in_environment", "noisy_left_off", "parse_weights"]



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
    noisy: list[str] = field(default_factory=list)  # why the run's measured figures were flagged noisy ([]: quiet)
    robustness_suites: list[str] = field(default_factory=list)  # suite set(s) its robustness rests on
    intervals: dict[str, dict[str, Any]] = field(default_factory=dict)  # dataset -> the run's signed interval
    paired_next: dict[str, dict[str, Any]] = field(default_factory=dict)  # dataset -> paired test vs the next row
    tied_with: str | None = None  # the next row's model, when no shared dataset tells the two apart
    rank_interval: list[int] | None = None  # central 95% of the rank over example resamples (measured fixed)
    baseline: dict[str, Any] | None = None  # a baseline row (scoring.baselines): unranked, rank 0; why, trivial

    def coverage(self) -> dict[str, dict[str, Any]]:
        """Robustness/fairness -> ``{"sources": source examples its suites changed, "low_confidence": bool}``."""
        out: dict[str, dict[str, Any]] = {}
        for kind in COVERED:
            if f"{kind}_sources" in self.values:
                out[kind] = {"sources": int(self.values[f"{kind}_sources"]),
                             "low_confidence": self.values.get(f"{kind}_low_confidence", 0.0) > 0}
        return out

    def with_coverage(self, metric: str, text: str) -> str:
        """``text`` (the metric's value as shown) with its coverage beside it: "74.48 (n=466)", "(n=12 low)"."""
        cov = self.coverage().get(metric)
        return f"{text} (n={cov['sources']}{' low' if cov['low_confidence'] else ''})" if cov else text

    def to_dict(self) -> dict[str, Any]:
        return {**self.__dict__, "coverage": self.coverage()}


COVERED = ("robustness", "fairness")  # values that rest on the examples their suites changed
COVERAGE_LEGEND = ("n: source examples the robustness/fairness suites changed, the value's coverage "
                   "(low: under 30, low confidence)")


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
    hardware_class: str = ALL_CLASSES               # the class whose runs are ranked, or ALL_CLASSES
    hardware_classes: dict[str, int] = field(default_factory=dict)  # classes present -> models with a run
    baselines: list[BoardRow] = field(default_factory=list)  # unranked rows, scored at the ranked rows' rates
    rates: str = "Dynaboard's rule: the exchange rates are estimated from the runs ranked"  # which rates scored it

    @property
    def shown_metrics(self) -> list[str]:
        """The Dynascore metrics first, then every other stored metric, alphabetically."""
        others = sorted({m for r in self.rows for m in r.values} - set(self.metrics))
        return [*self.metrics, *others]

    def row_notes(self, exclude_with: str) -> list[str]:
        """The lines under the table, one wording for every place that prints a board (the CLI, the demo): each
        noisy row's reasons and how to rank without it (``exclude_with``: that place's way to say so), and each
        model left off with why."""
        lines = [f"* {r.model}: measured figures flagged noisy ({'; '.join(r.noisy)}); its throughput and latency "
                 f"rest on a busy machine ({exclude_with} ranks without it)" for r in self.rows if r.noisy]
        return lines + [f"left off: {model}: {why}" for model, why in self.left_off.items()]

    def to_dict(self) -> dict[str, Any]:
        return {"task": self.task, "metrics": {k: v.to_dict() for k, v in self.metrics.items()},
                "weights": self.weights, "dataset_weights": self.dataset_weights, "units": self.units,
                "amrs": self.amrs, "rows": [r.to_dict() for r in self.rows], "left_off": self.left_off,
                "notes": self.notes, "hardware_class": self.hardware_class,
                "hardware_classes": self.hardware_classes, "baselines": [r.to_dict() for r in self.baselines],
                "rates": self.rates}

    def to_csv(self) -> str:
        shown = self.shown_metrics
        stab = any(r.stability for r in self.rows)
        out = io.StringIO()
        w = csv.writer(out, lineterminator="\n")
        w.writerow(["rank", "model", "dynascore", *(_header(m, self.units) for m in shown),
                    *(["min_rank", "max_rank"] if stab else []), "evaluation_id", "noisy"])
        for r in [*self.rows, *self.baselines]:
            w.writerow([r.rank or "baseline", r.model, repr(r.dynascore), *(_cell(r.values.get(m)) for m in shown),
                        *([r.stability["min_rank"], r.stability["max_rank"]] if stab and r.stability else []),
                        r.evaluation_id, "; ".join(r.noisy)])
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
        out[name.strip()] = number
    return out


def noisy_measurements(record: EvaluationRecord) -> list[str]:
    """Why the run's timed measurements were flagged noisy (other processes, steal, trials' spread), [] if quiet:
    the evaluator's ``measurement`` summary in the run's environment."""
    return noisy_in_environment(record.environment)


def _collect(records: Sequence[EvaluationRecord]) -> tuple[dict[str, dict[str, dict[str, float]]], dict[str, str]]:
    per_model: dict[str, dict[str, dict[str, float]]] = {}
    units: dict[str, str] = {}
    for rec in records:
        table: dict[str, dict[str, float]] = {}
        for mv in rec.metrics:
            table.setdefault(mv.metric, {})[mv.dataset] = mv.value
            units.setdefault(mv.metric, mv.unit)
        per_model[rec.model_name] = table
    return per_model, units


def coverage_values(table: dict[str, dict[str, float]], dataset_weights: dict[str, float]) -> dict[str, float]:
    """A run's figures that are not means, as their MetricDefs declare (``over_test_sets``): ``*_sources`` add up
    over the datasets counted (weight above 0), ``*_low_confidence`` is 1 if any of them is. The means are the
    board's own (dataset-weighted) business."""
    out: dict[str, float] = {}
    for metric, by_ds in table.items():
        if over_test_sets(metric) == "mean":
            continue
        per = [v for d, v in by_ds.items() if d and dataset_weights.get(d, 1.0) > 0]
        if per:
            out[metric] = run_value(metric, per)
        elif "" in by_ds:
            out[metric] = by_ds[""]
    return out


class LocalBoard:
    """One task's latest succeeded runs as a scoring board, built once and re-ranked per query."""

    def __init__(self, task: str, records: Sequence[EvaluationRecord], marked: Sequence[str] = ()):
        from dynadesk.scoring import baselines as _baselines

        self.task = task
        self.records = {r.model_name: r for r in records}
        self.tables, self.units = _collect(records)
        # baselines (constant predictors, or named in the task file) are never ranked (scoring.baselines)
        self.baselines = {n: b for n, rec in self.records.items()
                          if (b := _baselines.is_baseline(n, _baselines.constant_predictions(_outcomes(rec)), marked))}
        self.board = ScoreBoard.from_tables({n: t for n, t in self.tables.items() if n not in self.baselines})
        self._paired: dict[tuple[Any, Any, str], dict[str, Any] | None] = {}
        self._resampled: dict[int, dict[str, Any]] = {}  # run id -> {dataset: bootstrap.Resampled}

    def spreads(self) -> dict[str, dict[str, float]]:
        """metric -> model -> the run's relative trial spread (throughput's measurement floor, amrs_noise)."""
        from dynadesk.scoring.amrs_noise import run_spreads

        out: dict[str, dict[str, float]] = {}
        for name, rec in self.records.items():
            for metric, value in run_spreads((rec.environment or {}).get("measurement")).items():
                out.setdefault(metric, {})[name] = value
        return out

    def scored_datasets(self) -> list[str]:
        """Datasets with per-dataset figures of a Dynascore metric (each can be weighted)."""
        return sorted({d for m in SCORE_METRICS if m in self.board.columns for d in self.board.columns[m].datasets})

    def rank(self, weighting: Weighting | None = None, stability: bool = False,
             exclude_noisy: bool = False) -> Leaderboard:
        """The board for this weighting (see :meth:`ScoreBoard.score` for what is refused). Runs whose measured
        figures were flagged noisy are marked on their rows; ``exclude_noisy`` ranks without them (their
        throughput would otherwise also move every other row's exchange rates) and lists them as left off.
        ``weighting.rates``: a rate edition's exchange rates (``--rates BOARD``): each run's Dynascore then depends
        on the run, the weights and those rates alone, the same figure the board shows for it. A weight not given
        is the task file's default (``aggregation_metric.default_weights``), else the registry's."""
        from dynadesk.task_extras import board_weights

        weighting = weighting or Weighting()
        dataset_weights: dict[str, float] = dict(weighting.dataset_weights or {})
        weighting = replace(weighting, weights=board_weights(self.task, weighting.weights))
        noisy = {name: why for name, rec in self.records.items() if (why := noisy_measurements(rec))}
        board = self.board
        if exclude_noisy and noisy:
            board = ScoreBoard.from_tables({n: t for n, t in self.tables.items()
                                            if n not in noisy and n not in self.baselines})
        scored = board.score(weighting=weighting, spreads=self.spreads())
        stab = rank_stability(scored.to_result()) if stability else {}
        rows = []
        for i in range(scored.total):
            ms = scored.row(i)
            rec = self.records[ms.name]
            others = {**scored.others(i), **coverage_values(self.tables[ms.name], dataset_weights or {})}
            rows.append(BoardRow(ms.name, ms.rank, ms.dynascore, rec.id, rec.finished_at,
                                 {**others, **ms.values}, self.tables[ms.name], ms.converted,
                                 stab.get(ms.name), noisy.get(ms.name, [])))
        mark_ties(rows, self.records, self._paired, self._resampled)
        mark_rank_intervals(rows, self.records, scored.weights.get("perf", 0.0), dataset_weights or {}, self._resampled)
        left_off = dict(scored.left_off)
        if exclude_noisy:
            left_off.update(noisy_left_off(noisy, "--exclude-noisy"))
        board_out = Leaderboard(self.task, scored.metrics, scored.weights, dict(dataset_weights or {}), self.units,
                                scored.amrs, rows, left_off, scored.notes)
        board_out.baselines = self._baseline_rows(scored, dataset_weights or {}, noisy)
        if self.baselines:
            from dynadesk.scoring.baselines import notes as baseline_notes

            board_out.notes = [*board_out.notes, *baseline_notes(self.baselines)]
        return board_out

    def _baseline_rows(self, scored: BoardScore, dataset_weights: dict[str, float],
                       noisy: dict[str, list[str]]) -> list[BoardRow]:
        """The baseline rows, scored at the ranked rows' rates (never ranked: rank 0), with the board's notes on
        them (scoring.baselines: why each is a baseline, and trivial robustness and fairness)."""
        from dynadesk.scoring import baselines as _baselines
        from dynadesk.scoring.board import score_input

        found = _baselines.score_at_rates({n: score_input(self.tables[n]) for n in self.baselines}, scored.metrics,
                                          scored.amrs, scored.perf_metric, dataset_weights=dataset_weights)
        out = []
        for b in found:
            rec, why = self.records[b.name], self.baselines[b.name]
            others = coverage_values(self.tables[b.name], dataset_weights)
            row = BoardRow(b.name, 0, b.dynascore if b.dynascore is not None else float("nan"), rec.id,
                           rec.finished_at, {**others, **b.values}, self.tables[b.name], b.converted,
                           noisy=noisy.get(b.name, []), baseline=why.to_dict())
            row.intervals = _run_intervals(rec)
            out.append(row)
        return out


def _run_intervals(rec: EvaluationRecord) -> dict[str, dict[str, Any]]:
    stored = (rec.profile or {}).get("intervals")
    return dict(stored) if isinstance(stored, dict) else {}


def _resampled_of(records: dict[str, EvaluationRecord], cache: dict[int, dict[str, Any]]) -> dict[str, Any]:
    """Each run's shared resamples per test set (:class:`~dynadesk.scoring.bootstrap.Resampled`), worked out once."""
    from dynadesk.scoring.bootstrap import resampled_rows

    for rec in records.values():
        if rec.id not in cache:
            cache[rec.id] = resampled_rows(_outcomes(rec))
    return {name: cache[rec.id] for name, rec in records.items()}


def mark_ties(rows: list[BoardRow], records: dict[str, EvaluationRecord],
              cache: dict[tuple[Any, Any, str], dict[str, Any] | None], resampled: dict[int, dict[str, Any]]) -> None:
    """Each row's intervals, and the paired bootstrap of the task metric against the next row on every dataset
    both scored with the same data digest (:func:`dynadesk.scoring.bootstrap.neighbour_tests`, the one the server
    and snapshots use); ``tied_with`` when none of those differences is significant. A pair's test is computed once
    per board (``cache``), not per re-rank."""
    from dynadesk.scoring.bootstrap import neighbour_tests

    tests = neighbour_tests([r.model for r in rows], _resampled_of(records, resampled), cache)
    for i, row in enumerate(rows):
        row.intervals = _run_intervals(records[row.model])
        found, tied = tests.get(row.model, ({}, False))
        row.paired_next = {name: {"with": rows[i + 1].model, **t} for name, t in found.items()}
        row.tied_with = rows[i + 1].model if tied else None


def _outcomes(rec: EvaluationRecord) -> dict[str, Any]:
    stored = (rec.profile or {}).get("outcomes")
    return stored if isinstance(stored, dict) else {}


def local_board(store: RunStore, task: str,
                hardware_class: str | None = None) -> tuple[LocalBoard, str, dict[str, int]]:
    """The task's board for one hardware class (default: the one with the most models) or all of them."""
    classes = store.evaluations.hardware_classes(task)
    chosen = choose_hardware_class(classes, hardware_class)
    runs = store.evaluations.board_runs(task, hardware_class=None if chosen == ALL_CLASSES else chosen)
    return LocalBoard(task, runs, _marked_baselines(task)), chosen, classes


def _marked_baselines(task: str) -> tuple[str, ...]:
    """The models the task file names baselines (none for a task no longer defined here)."""
    from dynadesk.errors import NotFoundError
    from dynadesk.tasks import get_task

    try:
        return get_task(task).baselines
    except NotFoundError:
        return ()


def label_suite_sets(board: Leaderboard, store: Store,
                     records: dict[str, EvaluationRecord] | None = None) -> Leaderboard:
    """Say on every row which robustness suite set its test sets were perturbed with (DynaDesk's own, the
    default, or the reference's ``dynaboard-augly``); a note when the board mixes them (not comparable).

    ``records`` are the board's runs by model (read again when not given); each test set's suite sets are read
    once, however many rows share it."""
    datasets = getattr(store, "datasets", None)
    if datasets is None:
        return board
    from dynadesk.scoring.perturb import robustness_suite_sets

    if records is None:
        chosen = None if board.hardware_class == ALL_CLASSES else board.hardware_class
        records = {r.model_name: r for r in store.evaluations.board_runs(board.task, hardware_class=chosen)}
    suites: dict[str, list[str]] = {}
    seen: set[tuple[str, ...]] = set()
    for row in board.rows:
        rec = records.get(row.model)
        names = rec.datasets if rec is not None else []
        for d in names:
            if d not in suites:
                suites[d] = robustness_suite_sets(store, d) if datasets.exists(d) else []
        row.robustness_suites = sorted({s for d in names for s in suites[d]})
        seen.add(tuple(row.robustness_suites))
    if len(seen) > 1:
        board.notes.append("rows' robustness rests on different suite sets ("
                           + "; ".join(", ".join(s) or "none" for s in sorted(seen))
                           + "): their robustness values are not comparable")
    return board


def build_leaderboard(store: Store, task: str, weighting: Weighting | None = None, *, stability: bool = False,
                      hardware_class: str | None = None, exclude_noisy: bool = False,
                      rates_from: str | None = None) -> Leaderboard:
    """Rank each model's board run of ``task`` within one hardware class (see the module docstring) under
    ``weighting`` (:class:`~dynadesk.scoring.board.Weighting`); its ``amrs_mode="robust"`` leaves a metric whose
    exchange rate rests on noise unconverted (amrs_noise). ``weighting.rates``: a board's rate edition
    (``rates_from`` names it on the board)."""
    from dynadesk.tasks import bundled_task_names, get_task

    if task not in bundled_task_names():  # (cached) else the workspace's own tasks are read as well
        get_task(task)  # a clear NotFoundError for an unknown task
    board, chosen, classes = local_board(store, task, hardware_class)
    ranked = with_hardware(board.rank(weighting, stability, exclude_noisy), chosen, classes)
    if weighting is not None and weighting.rates is not None:
        ranked.rates = rates_from or "fixed exchange rates"
    return label_suite_sets(ranked, store, board.records)


def with_hardware(board: Leaderboard, chosen: str, classes: dict[str, int]) -> Leaderboard:
    """``board`` stamped with the class it ranks; an all-classes board says its measured metrics do not compare."""
    board.hardware_class, board.hardware_classes = chosen, dict(classes)
    if chosen == ALL_CLASSES and len(classes) > 1:
        board.notes.insert(0, NOT_COMPARABLE.format(n=len(classes)))
    return board


def mark_rank_intervals(rows: list[BoardRow], records: dict[str, EvaluationRecord], perf_weight: float,
                        dataset_weights: dict[str, float], cache: dict[int, dict[str, Any]]) -> None:
    """Each row's Dynascore rank interval (:func:`dynadesk.scoring.bootstrap.rank_intervals`: the shared resamples
    of every test set, measured metrics and exchange rates held fixed). None for runs made before it."""
    from dynadesk.scoring.bootstrap import rank_intervals

    resampled = _resampled_of(records, cache)
    found = rank_intervals([r.dynascore for r in rows], [r.per_dataset.get("perf", {}) for r in rows],
                           [resampled[r.model] for r in rows], dataset_weights, perf_weight)
    for row, interval in zip(rows, found or []):
        row.rank_interval = interval
