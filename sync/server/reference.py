"""Which rows set the public board's exchange rates (AMRS): a reference set no single key can steer.

Dynaboard estimates each metric's exchange rate from every ranked model. On a public board that
lets one registered key move everybody's converted figures: its own low-performance rows with
identical throughput and memory shrink the rates (20 such rows reversed four honest rows). So the
rates come from a reference set (docs/board.md):

1. rows with a reproduced attestation (an auditor re-ran them and every audit agrees) and rows the
   operator pinned (``dynadesk-server reference pin BUNDLE_ID``), when at least two such rows are on
   the board being ranked;
2. otherwise one row per submitter key: that key's most recently signed row (ties by row id), so a
   key's extra rows add nothing to the rates.

Where every row is a reference row (each key has one row, or every row is reproduced) the rates
are exactly Dynaboard's.
"""

from __future__ import annotations

from collections.abc import Collection
from typing import Any

from dynadesk.sync.rules.claims import is_reproduced

REPRODUCED = "reproduced"
PINNED = "pinned by the operator"
BOTH = "reproduced or pinned by the operator"
PER_KEY = "one row per submitter key"
LATEST = "latest row of its submitter key"


def reproduced(row: dict[str, Any]) -> bool:
    """Whether an auditor reproduced the row's exact claim and no dispute of its results stands
    (:func:`~dynadesk.sync.rules.claims.is_reproduced`, the one predicate)."""
    return is_reproduced(row)


def reference_rows(rows: list[dict[str, Any]], pinned: Collection[str] = ()) -> tuple[list[dict[str, Any]], str]:
    """``(reference rows, rule used)`` for the rows a board ranks (as :func:`rows.identified` keys them);
    ``pinned``: the bundle ids the operator pinned."""
    chosen = [r for r in rows if reproduced(r) or r["bundle_id"] in pinned]
    if len(chosen) >= 2:
        kinds = {why(r, pinned) for r in chosen}
        return chosen, (kinds.pop() if len(kinds) == 1 else BOTH)
    latest: dict[str, dict[str, Any]] = {}
    for r in rows:
        best = latest.get(r["key_fingerprint"])
        if best is None or (r["created_at"], r["model"]) > (best["created_at"], best["model"]):
            latest[r["key_fingerprint"]] = r
    return sorted(latest.values(), key=lambda r: str(r["model"])), PER_KEY


def why(row: dict[str, Any], pinned: Collection[str], rule: str | None = None) -> str:
    """Why ``row`` is a reference row: reproduced, pinned by the operator, or (per-key rule) its key's latest."""
    if rule == PER_KEY:
        return LATEST
    return PINNED if row["bundle_id"] in pinned else REPRODUCED
