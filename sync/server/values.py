"""Every metric of an upload against the task's metric registry: name, unit, finite, in range.

The registry is the metric registry (:mod:`dynadesk.evaluator.metric_registry`: name -> unit, scope)
narrowed to the task (its own score metrics, plus the shared ones), with a
range per unit. A value outside it is refused with a 422 naming the field; the units a board
shows come from here, never from a submitter's bundle.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

from dynadesk.errors import MetricValueError
from dynadesk.evaluator.metric_registry import UNIT_RANGES, shared_metrics
from dynadesk.evaluator.schema import METRIC_UNITS
from dynadesk.tasks import Task

# unit -> (lowest, highest) a real run can produce; measured values must also be > 0 (the metric registry's)
RANGES = UNIT_RANGES


@dataclass(frozen=True)
class MetricRule:
    unit: str
    low: float
    high: float
    positive: bool  # measured quantities: 0 examples/s or 0 GiB is no measurement


def registry(task: Task) -> dict[str, MetricRule]:
    """The metrics a bundle of ``task`` may carry."""
    names = [*shared_metrics(), task.metric, *task.secondary_metrics]
    out = {}
    for name in names:
        unit, deterministic = METRIC_UNITS[name]
        low, high = RANGES[unit]
        out[name] = MetricRule(unit, low, high, positive=not deterministic)
    return out


def check_metrics(metrics: list[dict[str, Any]], rules: dict[str, MetricRule], task: str) -> None:
    """Raise :class:`MetricValueError` naming ``payload.metrics[i].<field>`` for the first value out of bounds."""
    for i, m in enumerate(metrics):
        w = f"payload.metrics[{i}]"
        rule = rules.get(m["metric"])
        if rule is None:
            raise MetricValueError(f"{w}.metric: '{m['metric']:.64}' is not a metric of task '{task}'"
                                   f" (known: {', '.join(sorted(rules))})")
        if m["unit"] != rule.unit:
            raise MetricValueError(f"{w}.unit: metric '{m['metric']}' is measured in '{rule.unit}', not"
                                   f" '{m['unit']:.32}'")
        value = m["value"]
        if not math.isfinite(value) or not rule.low <= value <= rule.high or (rule.positive and value <= 0):
            bound = "above 0 and at most" if rule.positive else f"from {rule.low:g} to"
            raise MetricValueError(f"{w}.value: {m['metric']} must be {bound} {rule.high:g} {rule.unit},"
                                   f" got {value!r:.40}")
