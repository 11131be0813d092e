"""Tolerances for measured metrics, as a bundle declares them in its signed ``tolerances`` map.

Shape (optional payload field; absent in bundles made before it existed)::

    "tolerances": {"throughput": {"relative": 0.5}, "memory": {"relative": 0.25}, ...}

The bundle's claim ``b`` matches the auditor's re-measurement ``a`` when ``|b - a| <= relative * |a|``:
the tolerance is judged against what the auditor measured, never against the claim, and a declared
tolerance above the policy maximum (:data:`POLICY_MAX`) is capped to it, so a submitter cannot buy
room by claiming big numbers or declaring wide tolerances.
Deterministic metrics never get a tolerance: they must be identical bit for bit.
This module imports only the error hierarchy, so the bundle schema (``dynadesk.sync``) can use it.
"""

from __future__ import annotations

import math
from typing import Any

from dynadesk.errors import BundleFormatError

FIELD = "tolerances"
DEFAULTS: dict[str, float] = {
    "throughput": 0.5, "throughput_batched": 0.5,
    "latency_p50_ms": 0.5, "latency_p90_ms": 0.5, "latency_p99_ms": 0.5,
    "memory": 0.25, "gpu_memory": 0.25,
}
FALLBACK = 0.5  # a measured metric with no declared and no default tolerance
# The widest tolerance an audit applies, whatever a bundle declares (docs/audit.md): the defaults.
POLICY_MAX: dict[str, float] = dict(DEFAULTS)
MAX_ENTRIES = 64


def declare(measured_metrics: list[str]) -> dict[str, dict[str, float]]:
    """The ``tolerances`` map a new bundle signs: a default for each measured metric it carries."""
    return {m: {"relative": DEFAULTS.get(m, FALLBACK)} for m in sorted(set(measured_metrics))}


def check_tolerances(value: Any, where: str = "payload.tolerances") -> dict[str, dict[str, float]]:
    """Raise :class:`BundleFormatError` unless ``value`` is a well-formed tolerances map."""
    if not isinstance(value, dict):
        raise BundleFormatError(f"bundle {where}: must be an object, got {type(value).__name__}")
    if len(value) > MAX_ENTRIES:
        raise BundleFormatError(f"bundle {where}: more than {MAX_ENTRIES} entries")
    for metric, tol in value.items():
        w = f"{where}.{metric}"
        if not metric or len(metric) > 64:
            raise BundleFormatError(f"bundle {w}: a metric name must have 1-64 characters")
        if not isinstance(tol, dict) or set(tol) != {"relative"}:
            raise BundleFormatError(f"bundle {w}: must be an object with exactly the field 'relative'")
        rel = tol["relative"]
        if isinstance(rel, bool) or not isinstance(rel, (int, float)) or not math.isfinite(rel) or not 0 <= rel <= 10:
            raise BundleFormatError(f"bundle {w}.relative: must be a number from 0 to 10, got {rel!r:.40}")
    return value


def tolerance_for(payload: dict[str, Any], metric: str) -> tuple[float, str]:
    """``(relative tolerance, source)``: the declared one capped at the policy maximum, else the default."""
    cap = POLICY_MAX.get(metric, FALLBACK)
    declared = payload.get(FIELD)
    if isinstance(declared, dict) and metric in declared:
        rel = float(declared[metric]["relative"])
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
