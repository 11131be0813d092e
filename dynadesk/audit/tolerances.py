"""Tolerances for measured metrics, as a bundle declares them in its signed ``tolerances`` map.

Shape (optional payload field; absent in bundles made before it existed)::

    "tolerances": {"throughput": {"relative": 0.5}, "memory": {"relative": 0.25}, ...}

A re-measured value ``a`` matches the bundle's ``b`` when ``|a - b| <= relative * |b|``.
Deterministic metrics never get a tolerance: they must be identical bit for bit.
The bundle format (:mod:`dynadesk.sync.format.tolerances`) owns the field and its shape; this is how an audit applies it.
"""

from __future__ import annotations

from typing import Any

# The format's part (field name, defaults, shape check) lives with the bundle format.
from dynadesk.sync.format.tolerances import DEFAULTS, FALLBACK, FIELD, MAX_ENTRIES, check_tolerances, declare

__all__ = ["DEFAULTS", "FALLBACK", "FIELD", "MAX_ENTRIES", "check_tolerances", "declare", "relative_change",
           "tolerance_for", "within"]


def tolerance_for(payload: dict[str, Any], metric: str) -> tuple[float, str]:
    """``(relative tolerance, source)``; source is ``"declared"`` or ``"default"`` (bundle declares none)."""
    declared = payload.get(FIELD)
    if isinstance(declared, dict) and metric in declared:
        return float(declared[metric]["relative"]), "declared"
    return DEFAULTS.get(metric, FALLBACK), "default"


def within(expected: float, actual: float, relative: float) -> bool:
    """``|actual - expected| <= relative * |expected|``."""
    return abs(actual - expected) <= relative * abs(expected)


def relative_change(expected: float, actual: float) -> float | None:
    """``(actual - expected) / |expected|``; None when ``expected`` is 0."""
    return None if expected == 0 else (actual - expected) / abs(expected)
