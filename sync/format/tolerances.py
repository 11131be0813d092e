"""Tolerances for measured metrics, as a bundle declares them in its signed ``tolerances`` map.

Shape (optional payload field; absent in bundles made before it existed)::

    "tolerances": {"throughput": {"relative": 0.5}, "memory": {"relative": 0.25}, ...}

Deterministic metrics never get a tolerance: they must be identical bit for bit. How an audit
applies a tolerance lives in :mod:`dynadesk.audit.tolerances`; this module is the format's part.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from typing import Any

from dynadesk.errors import BundleFormatError

FIELD = "tolerances"
# The defaults per metric are the metric registry's (dynadesk.evaluator.metric_registry.tolerances()): a leaf
# cannot import it, so the bundle's maker hands them to declare().
FALLBACK = 0.5  # a measured metric with no declared and no default tolerance
MAX_ENTRIES = 64


def declare(measured_metrics: list[str], defaults: Mapping[str, float]) -> dict[str, dict[str, float]]:
    """The ``tolerances`` map a new bundle signs: the default (``defaults``, the metric registry's) of each
    measured metric it carries."""
    return {m: {"relative": defaults.get(m, FALLBACK)} for m in sorted(set(measured_metrics))}


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
