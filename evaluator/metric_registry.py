"""The one registry of metrics: name, unit, scope, deterministic or measured, audit tolerance, Dynascore default.

Every metric table derives from :data:`METRICS`: the result files' units (``schema.METRIC_UNITS``), the task
metrics a task file may choose and how they are computed (``metrics.metric_value``), the tolerances a bundle
declares, the audit's deterministic/measured split, the metrics a re-measurement takes again, the AMRS noise
floors, the default Dynascore specs, and the server's value ranges. It runs inside the evaluation image and on
the host alike, so it imports only the standard library (the bundle format, a leaf, is handed the tolerances).
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from dynadesk.evaluator.registry import Registry, RegistryError

__all__ = ["AGGREGATES", "METRICS", "SCOPES", "SHARED", "TASK", "UNIT_RANGES", "DynascoreDefault", "MetricDef",
           "UnitsView", "dynascore_defaults", "is_deterministic", "load_independent", "metric_def", "over_test_sets",
           "register_metric", "run_value", "shared_metrics", "timed_metrics", "tolerances"]

TASK = "task"      # a task's own score, computed from its predictions; task files choose it (per output kind)
SHARED = "shared"  # every run of every task may report it (perf, robustness, the timed and memory figures, ...)
SCOPES = (TASK, SHARED)

# how a whole-run value is formed from the run's per-test-set values (MetricDef.over_test_sets)
AGGREGATES: dict[str, Callable[[Sequence[float]], float]] = {
    "mean": lambda values: sum(values) / len(values),  # unweighted: each test set counts once
    "sum": lambda values: float(sum(values)),          # counts (the source examples a value rests on)
    "max": lambda values: float(max(values)),          # flags: any test set's low confidence marks the run
}

# unit -> (lowest, highest) a real run can produce; a measured value must also be above 0 (the server's check)
UNIT_RANGES: dict[str, tuple[float, float]] = {
    "score": (0.0, 100.0),
    "examples/s": (0.0, 1e7),
    "tokens/s": (0.0, 1e9),
    "ms": (0.0, 3.6e6),
    "GiB": (0.0, 4096.0),
    "examples": (0.0, 1e9),  # how many source examples a robustness/fairness value rests on
    "flag": (0.0, 1.0),  # 1 = low confidence
}

# (task, predictions, golds) -> a value; predictions are answer strings aligned with the golds
Compute = Callable[[Mapping[str, Any], Sequence[str], Sequence[Any]], float]


@dataclass(frozen=True)
class DynascoreDefault:
    """How the metric enters the default Dynascore: ``x' = direction * x + offset``, then ``weight``."""

    weight: float
    direction: float = 1.0
    offset: float = 0.0
    budget_offset: bool = False  # the offset is the board's memory budget (memory counts as memory saved)
    order: int = 0               # the board's column order


@dataclass(frozen=True)
class MetricDef:
    """One metric. Deterministic ones must match bit for bit in an audit; measured ones within ``tolerance``."""

    name: str
    unit: str
    scope: str
    deterministic: bool
    tolerance: float | None = None      # measured: the relative difference an audit allows (bundles declare it)
    timed: bool = False                 # measured in the timed windows: CPU load moves it; a re-measurement redoes it
    trial_spread: bool = False          # its AMRS noise floor is the runs' own trial spread when known
    noise_floor: bool = False           # the AMRS note floors its differences by its tolerance
    dynascore: DynascoreDefault | None = None
    compute: Compute | None = None      # task metrics: how the value is computed (metrics.py attaches the built-ins)
    over_test_sets: str = "mean"        # the whole-run value from per-test-set values: a name in AGGREGATES

    def __post_init__(self) -> None:
        if self.over_test_sets not in AGGREGATES:
            raise ValueError(f"metric '{self.name}': over_test_sets must be one of {', '.join(AGGREGATES)}, "
                             f"got {self.over_test_sets!r}")
        if self.scope not in SCOPES:
            raise ValueError(f"metric '{self.name}': scope must be one of {', '.join(SCOPES)}, got {self.scope!r}")
        if self.unit not in UNIT_RANGES:
            raise ValueError(f"metric '{self.name}': unit {self.unit!r} has no range in UNIT_RANGES")
        if self.deterministic and self.tolerance is not None:
            raise ValueError(f"metric '{self.name}': a deterministic metric has no tolerance")
        if not self.deterministic and self.tolerance is None:
            raise ValueError(f"metric '{self.name}': a measured metric needs an audit tolerance")


def _metric_problem(name: str, metric: MetricDef) -> str | None:
    if metric.name != name:
        return f"is registered as '{name}' but names itself '{metric.name}'"
    if not metric.name or len(metric.name) > 64 or not metric.name.replace("_", "").isalnum():
        return f"metric name {metric.name!r} must be 1-64 letters, digits and underscores"
    return None


# Third-party metrics: a MetricDef as a `dynadesk.metrics` entry point (evaluator/registry.py).
METRICS: Registry[MetricDef] = Registry("metrics", "metric", MetricDef, check=_metric_problem)


def register_metric(metric: MetricDef) -> MetricDef:
    """Add (or replace) a metric; a task metric also goes into its output kinds' ``metrics`` (evaluator/kinds.py)."""
    try:
        METRICS.add(metric.name, metric)
    except RegistryError as exc:
        raise ValueError(str(exc)) from None
    return metric


def metric_def(name: str) -> MetricDef | None:
    return METRICS.get(name)


def is_deterministic(name: str, unknown: bool = False) -> bool:
    """Whether ``name`` must match exactly (``unknown`` for a metric this installation does not know)."""
    d = METRICS.get(name)
    return unknown if d is None else d.deterministic


def run_value(name: str, values: Sequence[float]) -> float:
    """The whole-run value of ``name`` from its per-test-set values, as its :class:`MetricDef` declares (a metric
    this installation does not know: the mean). The worker's figures, the host's recompute and every board read it
    here, so a metric's rule is one declaration, never a name's suffix."""
    return AGGREGATES[over_test_sets(name)](values)


def over_test_sets(name: str) -> str:
    """The rule (a name in :data:`AGGREGATES`) by which ``name``'s per-test-set values make its run value."""
    d = METRICS.get(name)
    return d.over_test_sets if d is not None else "mean"


def tolerances() -> dict[str, float]:
    """Measured metric -> the relative tolerance a new bundle declares for it."""
    return {d.name: d.tolerance for d in METRICS.values() if d.tolerance is not None}


def shared_metrics() -> tuple[str, ...]:
    return tuple(d.name for d in METRICS.values() if d.scope == SHARED)


def timed_metrics() -> frozenset[str]:
    return frozenset(d.name for d in METRICS.values() if d.timed)


def load_independent() -> frozenset[str]:
    """Measured metrics that competing CPU load does not move (the audit judges them even on a noisy re-run)."""
    return frozenset(d.name for d in METRICS.values() if not d.deterministic and not d.timed)


def dynascore_defaults() -> list[MetricDef]:
    """The metrics of the default Dynascore, in the board's column order."""
    return sorted((d for d in METRICS.values() if d.dynascore is not None),
                  key=lambda d: d.dynascore.order if d.dynascore else 0)


class UnitsView(Mapping[str, tuple[str, bool]]):
    """``name -> (unit, deterministic)`` over the live registry (what ``schema.METRIC_UNITS`` always was)."""

    def __getitem__(self, name: str) -> tuple[str, bool]:
        d = METRICS[name]
        return d.unit, d.deterministic

    def __iter__(self) -> Iterator[str]:
        return iter(list(METRICS))

    def __len__(self) -> int:
        return len(METRICS)


def _builtin() -> None:
    def score(name: str, scope: str = SHARED, dynascore: DynascoreDefault | None = None) -> None:
        register_metric(MetricDef(name, "score", scope, True, dynascore=dynascore))

    score("perf", dynascore=DynascoreDefault(4.0, order=0))
    for name in ("accuracy", "macro_f1", "squad_f1", "exact_match"):
        score(name, TASK)
    score("has_ans")  # SQuAD 2.0 sets: the primary metric on answerable questions (metrics.answerability_scores)
    score("no_ans")   # ... and on unanswerable ones
    score("robustness", dynascore=DynascoreDefault(1.0, order=3))
    score("fairness", dynascore=DynascoreDefault(1.0, order=4))
    for kind in ("robustness", "fairness"):
        register_metric(MetricDef(f"{kind}_sources", "examples", SHARED, True, over_test_sets="sum"))
    for kind in ("robustness", "fairness"):
        register_metric(MetricDef(f"{kind}_low_confidence", "flag", SHARED, True, over_test_sets="max"))
    register_metric(MetricDef("throughput", "examples/s", SHARED, False, 0.5, timed=True, trial_spread=True,
                              noise_floor=True, dynascore=DynascoreDefault(1.0, order=1)))
    register_metric(MetricDef("throughput_batched", "examples/s", SHARED, False, 0.5, timed=True, trial_spread=True,
                              noise_floor=True))
    for q in (50, 90, 99):
        register_metric(MetricDef(f"latency_p{q}_ms", "ms", SHARED, False, 0.5, timed=True))
    register_metric(MetricDef("memory", "GiB", SHARED, False, 0.25, noise_floor=True,
                              dynascore=DynascoreDefault(1.0, direction=-1.0, budget_offset=True, order=2)))
    register_metric(MetricDef("gpu_memory", "GiB", SHARED, False, 0.25, noise_floor=True))
    # generation runs only (a span task answered by a generative LM): from the same timed windows
    register_metric(MetricDef("tokens_per_second", "tokens/s", SHARED, False, 0.5, timed=True, noise_floor=True))
    register_metric(MetricDef("time_to_first_token_ms", "ms", SHARED, False, 0.5, timed=True))


_builtin()
