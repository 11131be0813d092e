"""Which rows set the public board's exchange rates (AMRS): a reference set no single key can steer.

Dynaboard estimates each metric's exchange rate from every ranked model. On a public board that
lets one registered key move everybody's converted figures: its own low-performance rows with
identical throughput and memory shrink the rates (20 such rows reversed four honest rows). So the
rates come from a reference set (docs/board.md):

1. rows with a reproduced attestation (an auditor re-ran them and every audit agrees), when at
   least two such rows are on the board being ranked;
2. otherwise one row per submitter key: that key's most recently signed row (ties by row id), so a
   key's extra rows add nothing to the rates.

Where every row is a reference row (each key has one row, or every row is reproduced) the rates
are exactly Dynaboard's.
"""

from __future__ import annotations

from typing import Any

from dynadesk.sync.server.rows import audit_state

REPRODUCED = "reproduced"
PER_KEY = "one row per submitter key"


def reproduced(row: dict[str, Any]) -> bool:
    """Whether an auditor reproduced the row and no auditor disputed it."""
    return audit_state(row.get("attestations") or []).startswith("reproduced")


def reference_rows(rows: list[dict[str, Any]]) -> tuple[list[dict[str, Any]], str]:
    """``(reference rows, rule used)`` for the rows a board ranks (as :func:`rows.identified` keys them)."""
    attested = [r for r in rows if reproduced(r)]
    if len(attested) >= 2:
        return attested, REPRODUCED
    latest: dict[str, dict[str, Any]] = {}
    for r in rows:
        best = latest.get(r["key_fingerprint"])
        if best is None or (r["created_at"], r["model"]) > (best["created_at"], best["model"]):
            latest[r["key_fingerprint"]] = r
    return sorted(latest.values(), key=lambda r: str(r["model"])), PER_KEY
