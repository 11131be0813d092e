"""Typed payloads for unit tests of the payload's readers (the audit's comparisons, the board's facts).

:func:`typed` builds a :class:`~dynadesk.sync.format.payload.Payload` from a partial JSON object, the rest filled
from a minimal one, by the types' constructors (no format check): a reader's unit test states only the fields it
reads, with values (``"sha256:x"``) a signed bundle could not carry. Bundles from the real writer are parsed.
"""

from __future__ import annotations

from typing import Any

from dynadesk.sync.format.parts import Metric, Predictions, Runner, Submitter, Tolerance
from dynadesk.sync.format.payload import Payload

__all__ = ["metric", "typed"]


def metric(row: dict[str, Any]) -> Metric:
    """A metric row as the typed part."""
    return Metric(row["dataset"], row["metric"], row["value"], row["unit"], row["deterministic"])


def typed(partial: dict[str, Any]) -> Payload:
    """A payload holding ``partial``'s metrics, tolerances, predictions, environment and runner (others minimal)."""
    from dynadesk.sync.format.parts import Evaluator, Model, WorkerSettings

    pred = partial.get("predictions") or {"digest": "sha256:" + "0" * 64, "merkle_root": "0" * 64, "count": 1}
    runner = partial.get("runner") or {"kind": "local", "sandboxed": False}
    tolerances = partial.get("tolerances")
    declared = None if tolerances is None else {k: Tolerance(v["relative"]) for k, v in tolerances.items()}
    return Payload(created_at="2026-01-01T00:00:00.000Z", task=partial.get("task", "sentiment"),
                   model=Model("m", "sha256:" + "0" * 64), datasets=(), evaluator=Evaluator(None, None),
                   runner=Runner(runner["kind"], runner["sandboxed"]), environment=partial.get("environment", {}),
                   worker_settings=WorkerSettings(batch_size=1, device="cpu", deterministic=True, seed=0,
                                                  present=frozenset({"batch_size", "device", "deterministic", "seed"})),
                   seeds={}, metrics=tuple(metric(m) for m in partial.get("metrics", [])),
                   predictions=Predictions(pred["digest"], pred["merkle_root"], pred["count"]),
                   submitter=Submitter("sha256:" + "0" * 64), evaluation_id=1,
                   tolerances=declared)
