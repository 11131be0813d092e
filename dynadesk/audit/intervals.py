"""The audit's check of a bundle's signed bootstrap intervals against the re-run's (bit for bit).

Why: an interval is a deterministic function of the predictions, the data and the documented seed
(:mod:`dynadesk.scoring.bootstrap`); a re-run that writes the same predictions must give the same bits,
so any difference means the signed interval was not computed as documented.
"""

from __future__ import annotations

from typing import Any

from dynadesk.audit.report import DETERMINISTIC, DIFFERS, IDENTICAL, NOT_COMPARABLE, Check
from dynadesk.sync.format.payload import Payload

COMPARED = ("metric", "low", "high", "level", "resamples", "seed", "method")


def _bits(value: Any) -> Any:
    return float(value).hex() if isinstance(value, (int, float)) and not isinstance(value, bool) else value


def compare_intervals(payload: Payload, record: Any) -> list[Check]:
    """One check per signed interval (``intervals.<dataset>``); none for bundles made before intervals."""
    signed = [iv.to_json() for iv in payload.intervals or ()]  # compared field by field with the re-run's
    stored = (record.profile or {}).get("intervals") or {}
    checks = []
    for iv in signed:
        name = f"intervals.{iv['dataset']}"
        expected = {k: iv[k] for k in COMPARED}
        again = stored.get(iv["dataset"])
        if not isinstance(again, dict):
            checks.append(Check(name, DETERMINISTIC, NOT_COMPARABLE, expected, None,
                                f"run {record.id} has no interval for this dataset"))
            continue
        actual = {k: again.get(k) for k in COMPARED}
        differing = [k for k in COMPARED if _bits(expected[k]) != _bits(actual[k])]
        if differing:
            checks.append(Check(name, DETERMINISTIC, DIFFERS, expected, actual,
                                f"the re-computed bootstrap differs in {', '.join(differing)}"))
        else:
            checks.append(Check(name, DETERMINISTIC, IDENTICAL, expected, actual, "reproduced bit for bit"))
    return checks + compare_outcomes(payload, record)


def compare_outcomes(payload: Payload, record: Any) -> list[Check]:
    """One check per signed compact outcome (``outcomes.<dataset>``): re-derived from the re-run's predictions,
    which the bundle's Merkle root commits to (the root itself is checked by compare_predictions)."""
    stored = (record.profile or {}).get("outcomes") or {}
    checks = []
    for o in (signed.to_json() for signed in payload.outcomes or ()):
        name = f"outcomes.{o['dataset']}"
        expected = {k: v for k, v in o.items() if k != "dataset"}
        actual = stored.get(o["dataset"])
        if not isinstance(actual, dict):
            checks.append(Check(name, DETERMINISTIC, NOT_COMPARABLE, expected["data_sha256"], None,
                                f"run {record.id} has no outcomes for this dataset"))
        elif actual == expected:
            checks.append(Check(name, DETERMINISTIC, IDENTICAL, expected["data_sha256"], actual["data_sha256"],
                                "per-example outcomes re-derived identically"))
        else:
            differing = sorted(k for k in set(expected) | set(actual) if expected.get(k) != actual.get(k))
            checks.append(Check(name, DETERMINISTIC, DIFFERS, expected["data_sha256"], actual.get("data_sha256"),
                                f"the re-derived per-example outcomes differ in {', '.join(differing)}"))
    return checks
