"""Tolerances for measured metrics, as a bundle declares them in its signed ``tolerances`` map.

Shape (optional payload field; absent in bundles made before it existed)::

    "tolerances": {"throughput": {"relative": 0.5}, "memory": {"relative": 0.25}, ...}

The bundle's claim ``b`` matches the auditor's re-measurement ``a`` when ``|b - a| <= relative * |a|``:
the tolerance is judged against what the auditor measured, never against the claim, and a declared
tolerance above the policy maximum (:data:`POLICY_MAX`) is capped to it, so a submitter cannot buy
room by claiming big numbers or declaring wide tolerances.
Deterministic metrics never get a tolerance: they must be identical bit for bit.
The bundle format (:mod:`dynadesk.sync.format.tolerances`) owns the field and its shape; this is how an
audit applies it.
"""

from __future__ import annotations

from dynadesk.evaluator.metric_registry import tolerances
from dynadesk.sync.format.payload import Payload

# The format's part (field name, shape check) lives with the bundle format; the defaults are the metric registry's.
from dynadesk.sync.format.tolerances import FALLBACK, FIELD, MAX_ENTRIES, check_tolerances
from dynadesk.sync.format.tolerances import declare as _declare

DEFAULTS: dict[str, float] = tolerances()


def declare(measured_metrics: list[str]) -> dict[str, dict[str, float]]:
    """The ``tolerances`` map a new bundle signs, with the metric registry's defaults."""
    return _declare(measured_metrics, tolerances())


__all__ = ["DEFAULTS", "FALLBACK", "FIELD", "MAX_ENTRIES", "POLICY_MAX", "check_tolerances", "declare",
           "relative_change",
           "tolerance_for", "within"]

# The widest tolerance an audit applies, whatever a bundle declares (docs/audit.md): the defaults.
POLICY_MAX: dict[str, float] = dict(DEFAULTS)


def tolerance_for(payload: Payload, metric: str) -> tuple[float, str]:
    """``(relative tolerance, source)``: the declared one capped at the policy maximum, else the default."""
    cap = POLICY_MAX.get(metric, FALLBACK)
    declared = payload.tolerances or {}
    if metric in declared:
        rel = float(declared[metric].relative)
        if rel > cap:
            return cap, f"declared ±{rel:.0%}, capped at the policy maximum"
        return rel, "declared"
    return DEFAULTS.get(metric, FALLBACK), "default"


def within(reference: float, other: float, relative: float) -> bool:
    """``|other - reference| <= relative * |reference|``; the reference is the auditor's measurement."""
    return abs(other - reference) <= relative * abs(reference)


def relative_change(expected: float, actual: float) -> float | None:
    """``(actual - expected) / |expected|``; None when ``expected`` is 0."""
    return None if expected == 0 else (actual - expected) / abs(expected)
