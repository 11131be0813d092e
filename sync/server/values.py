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
from dynadesk.sync.format.payload import Payload
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


# ---------------------------------------------------------------------------------------------- signed evidence
# Issue 44, item 6: what the server can check of a claim itself. Per-example outcomes give the metric exactly
# (macro-F1 from label pairs) or to 0.005 point (u16x100 stores each example's score to 0.01); the board answers
# to 4 decimals, so a signed value further than that from what its outcomes give is not the run's.
API_SLACK = 0.5e-4
QUANTUM_SLACK = {"u16x100": 0.005, "label-pairs-u8": 0.0}


def observed_outcomes(payload: Payload) -> list[dict[str, Any]]:
    """``[{index, dataset, metric, value, slack}]``: the metric each ``payload.outcomes`` entry gives (worked out in
    the upload pool: decoding is the costly part); :class:`MetricValueError` naming an entry that does not decode."""
    import numpy as np

    from dynadesk.evaluator.metrics import MetricError
    from dynadesk.scoring.bootstrap import decode_outcomes

    out = []
    for i, signed in enumerate(payload.outcomes or ()):
        try:
            o = decode_outcomes(signed.to_json())
        except MetricError as exc:
            raise MetricValueError(f"payload.outcomes[{i}]: {exc}") from None
        if o.size == 0:
            continue
        value = float(o.statistic(np.arange(o.size, dtype=np.int64)[None, :])[0])
        out.append({"index": i, "dataset": signed.dataset, "metric": signed.metric, "value": value,
                    "slack": API_SLACK + QUANTUM_SLACK.get(signed.encoding, 0.0) + 1e-9})
    return out


def check_evidence(metrics: list[dict[str, Any]], observed: list[dict[str, Any]], intervals: list[dict[str, Any]],
                   task_metric: str) -> None:
    """Raise :class:`MetricValueError` naming the field unless every signed value its outcomes give is that value
    (the task metric's and ``perf`` on that dataset) and every signed interval contains its point value."""
    points = {(m["dataset"], m["metric"]): (i, float(m["value"])) for i, m in enumerate(metrics)}
    for o in observed:
        w = f"payload.outcomes[{o['index']}]"
        if o["metric"] != task_metric:
            raise MetricValueError(f"{w}.metric: outcomes of '{o['metric']:.64}', but the task's metric is"
                                   f" '{task_metric}'")
        for name in (task_metric, "perf"):
            hit = points.get((o["dataset"], name))
            if hit is not None and abs(hit[1] - o["value"]) > o["slack"]:
                raise MetricValueError(
                    f"payload.metrics[{hit[0]}].value: {name} on '{o['dataset']}' is signed as {hit[1]!r}, but {w}"
                    f" (the per-example outcomes) give {o['value']:.4f}: a bundle's values must be its outcomes'"
                    " (re-create it from the run: dynadesk bundle create)")
    for i, iv in enumerate(intervals):
        w = f"payload.intervals[{i}]"
        hit = points.get((iv["dataset"], iv["metric"]))
        if hit is None:
            raise MetricValueError(f"{w}: an interval of {iv['metric']:.64} on '{iv['dataset']:.64}', but the bundle"
                                   " signs no such value")
        if not float(iv["low"]) - API_SLACK <= hit[1] <= float(iv["high"]) + API_SLACK:
            raise MetricValueError(f"{w}: [{iv['low']!r}, {iv['high']!r}] does not contain its point value"
                                   f" {hit[1]!r} (payload.metrics[{hit[0]}]): an interval must contain the value"
                                   " it is about")
