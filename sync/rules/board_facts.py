"""What the public board shows about a row beyond its scores, read from the row's signed bundle.

The board table stores only what scoring needs; hardware class, runner, sandbox flag and the
rest are already signed into every bundle, so they are derived from the stored bytes here
(never from a second, unsigned copy) and cached by bundle id (a bundle's bytes never change).
"""

from __future__ import annotations

import json
import threading
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from typing import Any

from dynadesk.evaluator.environment import hardware_class_label, hardware_class_of
from dynadesk.scoring.amrs_noise import run_spreads
from dynadesk.scoring.baselines import constant_predictions
from dynadesk.scoring.classes import ALL_CLASSES, NOT_COMPARABLE, choose_hardware_class, noisy_in_environment
from dynadesk.sync.format.payload import Payload, parse_payload

__all__ = ["ALL_CLASSES", "NOT_COMPARABLE", "FactsCache", "RowFacts", "RowFilter", "choose_hardware_class",
           "payload_of", "spreads_of"]


def payload_of(raw: bytes) -> Payload:
    """The typed signed payload of a stored (already verified) bundle (its canonical form is not re-checked)."""
    doc = json.loads(raw)
    return parse_payload(doc["payload"], doc["version"])


@dataclass(frozen=True)
class RowFacts:
    """The provenance fields a row shows and is filtered by."""

    hardware_class: str
    hardware_label: str
    runner: str
    sandboxed: bool
    answerable_only: tuple[str, ...] = ()     # datasets imported without their unanswerable questions
    robustness_suites: tuple[str, ...] = ()   # the suite set(s) its robustness rests on (dynadesk, dynaboard-augly)
    coverage: tuple[tuple[str, int, bool], ...] = ()  # (robustness|fairness, source examples changed, low confidence)
    noisy: tuple[str, ...] = ()  # why the signed measurement summary flags the timed figures noisy; () if quiet
    # (metric, relative trial spread) from the signed measurement summary: throughput's measurement floor
    # (the local board's rule, scoring.amrs_noise.run_spreads); () when the run recorded none
    spreads: tuple[tuple[str, float], ...] = ()
    # the signed per-example outcomes show one label for every example (scoring.baselines.constant_predictions)
    constant: bool = False
    evaluation_id: int | None = None  # the signed run this row is (with its bundle id): one Dynascore per run

    def to_dict(self) -> dict[str, Any]:
        return {"hardware_class": self.hardware_class, "hardware_label": self.hardware_label,
                "runner": self.runner, "sandboxed": self.sandboxed, "answerable_only": list(self.answerable_only),
                "robustness_suites": list(self.robustness_suites),
                "coverage": {kind: {"sources": n, "low_confidence": low} for kind, n, low in self.coverage},
                "noisy": list(self.noisy), "evaluation_id": self.evaluation_id}


def coverage_of(payload: Payload) -> tuple[tuple[str, int, bool], ...]:
    """How many source examples the robustness and fairness values rest on (the run's ``*_sources``: the whole-run
    figure, else the sum over its test sets) and whether that is low confidence, from the signed metrics."""
    out = []
    for kind in ("robustness", "fairness"):
        def values(name: str) -> list[float]:
            found = [m for m in payload.metrics if m.metric == name]
            whole = [float(m.value) for m in found if m.dataset == ""]
            return whole or [float(m.value) for m in found]
        sources, low = values(f"{kind}_sources"), values(f"{kind}_low_confidence")
        if sources:
            out.append((kind, int(sum(sources)), max(low, default=0.0) > 0))
    return tuple(out)


def facts_of(payload: Payload) -> RowFacts:
    env = dict(payload.environment)
    datasets = payload.datasets
    return RowFacts(hardware_class_of(env), hardware_class_label(env), payload.runner.kind, payload.runner.sandboxed,
                    tuple(d.name for d in datasets if d.answerable_only),
                    tuple(sorted({s for d in datasets for s in d.robustness_suites or ()})),
                    coverage_of(payload), tuple(noisy_in_environment(env)), spreads_in(env),
                    constant_predictions([o.to_json() for o in payload.outcomes or ()]), payload.evaluation_id)


def spreads_in(environment: dict[str, Any]) -> tuple[tuple[str, float], ...]:
    """The signed ``environment.measurement`` summary's trial spread per throughput metric (the local board's rule,
    :func:`dynadesk.scoring.amrs_noise.run_spreads`); () when the run recorded none."""
    summary = environment.get("measurement")
    return tuple(sorted(run_spreads(summary if isinstance(summary, dict) else None).items()))


def spreads_of(facts: Mapping[str, RowFacts]) -> dict[str, dict[str, float]]:
    """metric -> row label -> its run's trial spread (``ScoreBoard.score(spreads=...)``, as the local board's
    ``LocalBoard.spreads``), for rows labelled as the board ranks them."""
    out: dict[str, dict[str, float]] = {}
    for label, f in facts.items():
        for metric, value in f.spreads:
            out.setdefault(metric, {})[label] = value
    return out


class FactsCache:
    """Bundle id -> :class:`RowFacts`, filled on first use from the stored bytes."""

    def __init__(self, read_raw: Callable[[str], bytes]):
        self._read = read_raw
        self._facts: dict[str, RowFacts] = {}
        self._lock = threading.Lock()

    def get(self, bundle_id: str) -> RowFacts:
        with self._lock:
            found = self._facts.get(bundle_id)
        if found is None:
            found = facts_of(payload_of(self._read(bundle_id)))
            with self._lock:
                self._facts[bundle_id] = found
        return found

    def of_rows(self, rows: Iterable[dict[str, Any]]) -> dict[str, RowFacts]:
        return {r["bundle_id"]: self.get(r["bundle_id"]) for r in rows}


@dataclass(frozen=True)
class RowFilter:
    """Which rows a board query ranks: one hardware class (or all), optionally one runner, sandboxed or not."""

    hardware_class: str | None = None   # None: the class with the most models
    runner: str | None = None
    sandboxed: bool | None = None

    def select(self, rows: list[dict[str, Any]], facts: dict[str, RowFacts]
               ) -> tuple[list[dict[str, Any]], str, dict[str, int]]:
        """``(rows ranked, class chosen, {class: models})``; an unknown class or runner is a ValidationError."""
        from dynadesk.errors import ValidationError

        classes: dict[str, int] = {}
        for r in rows:
            cls = facts[r["bundle_id"]].hardware_class
            classes[cls] = classes.get(cls, 0) + 1
        chosen = choose_hardware_class(classes, self.hardware_class)
        runners = sorted({f.runner for f in facts.values()})
        if self.runner is not None and self.runner not in runners:
            raise ValidationError(f"runner '{self.runner}' has no submissions on this board "
                                  f"(runners present: {', '.join(runners) or 'none'})")
        kept = [r for r in rows if self._keeps(facts[r["bundle_id"]], chosen)]
        return kept, chosen, dict(sorted(classes.items()))

    def _keeps(self, f: RowFacts, chosen: str) -> bool:
        return ((chosen == ALL_CLASSES or f.hardware_class == chosen)
                and (self.runner is None or f.runner == self.runner)
                and (self.sandboxed is None or f.sandboxed == self.sandboxed))
