"""The public board's baselines and its breakdown reference (issue 44, items 4 and 7), beside board_view.

A row is a baseline by :func:`dynadesk.scoring.baselines.is_baseline`, the local board's own decision: its
signed per-example outcomes show constant predictions (``RowFacts.constant``, read from the bundle), or the task
file names the model a baseline. Baseline rows are taken out before anything is ranked or any reference row is
chosen, then scored at the exchange rates the answer publishes and listed apart (``answer["baselines"]``), with
the board's notes about them. Each ranked row also gets its contributions relative to a stated reference (the
baseline, else the lowest-ranked row), so a chart shows what separates the rows, not what they all share.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from dynadesk.scoring import baselines as _baselines
from dynadesk.scoring.board import score_input
from dynadesk.scoring.dynascore import MetricSpec
from dynadesk.sync.rules.board_facts import RowFacts
from dynadesk.sync.server.rows import audit_state

BASELINE_REFERENCE = "the baseline"
LOWEST_REFERENCE = "the lowest-ranked row"


def split(rows: list[dict[str, Any]], facts: Mapping[str, RowFacts], marked: tuple[str, ...]
          ) -> tuple[list[dict[str, Any]], dict[str, _baselines.Baseline]]:
    """``(rows to rank, {bundle id: why it is a baseline})``: baselines are never ranked nor reference rows."""
    found = {r["bundle_id"]: b for r in rows
             if (b := _baselines.is_baseline(r["model"], facts[r["bundle_id"]].constant, marked))}
    return [r for r in rows if r["bundle_id"] not in found], found


def rows_of(base: list[dict[str, Any]], found: Mapping[str, _baselines.Baseline], answer: dict[str, Any],
            labels: Mapping[str, str], facts: Mapping[str, RowFacts], dataset_weights: Mapping[str, float]
            ) -> list[dict[str, Any]]:
    """The baseline rows of an answer, scored at its published rates (``answer["metrics"]``, ``answer["amrs"]``);
    ``labels``: bundle id -> the label the board shows; adds the baseline notes to ``answer["notes"]``."""
    if not base:
        return []
    specs = {k: MetricSpec(m["direction"], m["offset"], m["weight"]) for k, m in answer["metrics"].items()}
    tables = {r["bundle_id"]: score_input({n: slot["values"] for n, slot in r["metrics"].items()}) for r in base}
    scored = {b.name: b for b in _baselines.score_at_rates(
        tables, specs, answer["amrs"], dataset_weights=dict(dataset_weights),
        known_datasets=[d["name"] for d in answer["datasets"]])}
    out = []
    for r in sorted(base, key=lambda r: labels[r["bundle_id"]]):
        bid = r["bundle_id"]
        s = scored[bid]
        out.append({"rank": None, "label": labels[bid], "model": r["model"], "row_id": f"{r['model']}@"
                    f"{r['key_fingerprint']}", "baseline": found[bid].to_dict(), "dynascore": s.dynascore,
                    "values": s.values, "converted": s.converted, "contributions": s.contributions,
                    "left_off": s.left_off, "submitter": r["submitter"], "key_fingerprint": r["key_fingerprint"],
                    "bundle_id": bid, "bundle_url": f"/api/bundles/{bid}", "model_url": f"/models/{bid}",
                    "audit": {"state": audit_state(r.get("attestations") or []),
                              "attestations": r.get("attestations") or []},
                    **facts[bid].to_dict()})
    answer["notes"] = [*answer["notes"], *_baselines.notes({labels[r["bundle_id"]]: found[r["bundle_id"]]
                                                            for r in base})]
    return out


def relative_breakdown(answer: dict[str, Any], base_rows: list[dict[str, Any]],
                       lowest: Mapping[str, Any] | None) -> None:
    """Each ranked row's ``relative_contributions`` and the answer's ``breakdown_reference`` (label, kind,
    contributions): the baseline (the first scored one) when the view has one, else ``lowest``, the lowest-ranked
    row of the whole view (``{"label", "contributions"}``, None on an empty board)."""
    scored = [b for b in base_rows if b["dynascore"] is not None]
    if scored:
        ref: dict[str, Any] | None = {"label": scored[0]["label"], "kind": BASELINE_REFERENCE,
                                      "contributions": scored[0]["contributions"]}
    elif lowest is not None:
        ref = {"label": lowest["label"], "kind": LOWEST_REFERENCE, "contributions": lowest["contributions"]}
    else:
        ref = None
    answer["breakdown_reference"] = ref
    for row in answer["rows"]:
        row["relative_contributions"] = ({k: v - ref["contributions"].get(k, 0.0)
                                          for k, v in row["contributions"].items()} if ref else None)
