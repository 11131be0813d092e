"""Server boards: bundle metrics -> the shared Dynascore function -> ranked rows.

The board never re-implements scoring: it shapes each model's latest bundle
into ``{metric: value | {dataset: value}}`` and calls
:func:`dynadesk.scoring.dynascore.compute`.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from dynadesk.errors import ValidationError
from dynadesk.scoring import dynascore
from dynadesk.sync.board_fast import BoardMatrix, Scored

BOARD_METRICS = tuple(dynascore.default_metrics())  # perf, throughput, memory, robustness, fairness


def board_metrics(bundle_metrics: list[dict[str, Any]]) -> dict[str, Any]:
    """Compact per-model form stored with each board row: values by dataset ('' = whole run) and units."""
    out: dict[str, Any] = {}
    for m in bundle_metrics:
        slot = out.setdefault(m["metric"], {"unit": m["unit"], "deterministic": m["deterministic"], "values": {}})
        slot["values"][m["dataset"]] = m["value"]
    return out


PAGE_PARAMS = {"limit": (100, 1, 1000), "offset": (0, 0, 10 ** 9)}  # name: (default, min, max)


def parse_page(params: Mapping[str, str]) -> tuple[int, int]:
    """``limit`` (rows, default 100, at most 1000) and ``offset`` of a board query."""
    out = []
    for name, (default, lo, hi) in PAGE_PARAMS.items():
        raw = params.get(name)
        if raw is None:
            out.append(default)
            continue
        try:
            value = int(raw)
        except ValueError:
            raise ValidationError(f"query parameter '{name}' must be an integer, got {raw!r:.40}") from None
        if not lo <= value <= hi:
            raise ValidationError(f"query parameter '{name}' must be between {lo} and {hi}, got {value}")
        out.append(value)
    return out[0], out[1]


def parse_weights(params: Mapping[str, str]) -> tuple[dict[str, float], dict[str, float]]:
    """``weight.<metric>=w`` and ``dataset.<name>=w`` query parameters; anything else is an error."""
    metric_w, dataset_w = {}, {}
    for key, raw in params.items():
        if key in PAGE_PARAMS:
            continue
        kind, _, name = key.partition(".")
        if kind not in ("weight", "dataset") or not name:
            raise ValidationError(f"unknown query parameter '{key}' (use weight.<metric>=N or dataset.<name>=N)")
        try:
            value = float(raw)
        except ValueError:
            raise ValidationError(f"query parameter '{key}' must be a number, got {raw!r:.40}") from None
        if not math.isfinite(value) or value < 0:
            raise ValidationError(f"query parameter '{key}' must be a finite number >= 0, got {raw!r:.40}")
        if kind == "weight":
            if name not in BOARD_METRICS:
                raise ValidationError(f"unknown metric '{name}' in '{key}' (board metrics: {', '.join(BOARD_METRICS)})")
            metric_w[name] = value
        else:
            dataset_w[name] = value
    return metric_w, dataset_w


def _model_values(metrics: dict[str, Any]) -> dict[str, Any]:
    vals = {}
    for name in BOARD_METRICS:
        slot = metrics.get(name)
        if not slot:
            continue
        per_ds = {d: v for d, v in slot["values"].items() if d}
        vals[name] = per_ds if per_ds else slot["values"].get("")
    return {k: v for k, v in vals.items() if v is not None}


@dataclass(frozen=True)
class PreparedBoard:
    """Board rows shaped for scoring; built once per change of the stored board, reused per query."""

    models: dict[str, dict[str, Any]]  # label -> {metric: value | {dataset: value}}
    rows: dict[str, dict[str, Any]]    # label -> stored row
    units: dict[str, str]
    matrix: BoardMatrix | None = None  # the same values as arrays, for the fast path of compute_board


def prepare(rows: list[dict[str, Any]]) -> PreparedBoard:
    """Label rows (model name, plus the submitter where two submitters share a name) and collect units."""
    counts: dict[str, int] = {}
    for r in rows:
        counts[r["model"]] = counts.get(r["model"], 0) + 1
    by_label = {(r["model"] if counts[r["model"]] == 1 else f"{r['model']} ({r['submitter']})"): r for r in rows}
    units: dict[str, str] = {}
    for r in rows:
        for name, slot in r["metrics"].items():
            units.setdefault(name, slot["unit"])
    models = {k: _model_values(r["metrics"]) for k, r in by_label.items()}
    return PreparedBoard(models, by_label, units, BoardMatrix.build(models, list(BOARD_METRICS)))


def _score(board: PreparedBoard, specs: dict[str, dynascore.MetricSpec], dw: dict[str, float] | None,
           limit: int, offset: int) -> Scored:
    """Score every model, answer one page: the matrix fast path, else ``dynascore.compute`` itself."""
    if board.matrix is not None and list(specs) == list(BOARD_METRICS):
        fast = board.matrix.score(specs, dynascore.PERF, dw, offset, limit)
        if fast is not None:
            return fast
    result = dynascore.compute(board.models, specs, dynascore.PERF, dw)
    return Scored(len(result.models), result.amrs, result.left_off, result.notes,
                  result.models[offset:offset + limit])


def compute_board(task: str, board: PreparedBoard, datasets: list[dict[str, Any]],
                  metric_weights: dict[str, float], dataset_weights: dict[str, float],
                  limit: int = 100, offset: int = 0) -> dict[str, Any]:
    """The JSON a board query answers: ranked rows (one page) with raw values, units, Dynascore and
    bundle links. Every model is scored (the exchange rates depend on all of them); only the page is sent."""
    known = {d["name"] for d in datasets}
    unknown = set(dataset_weights) - known
    if unknown:
        raise ValidationError(f"task '{task}' has no dataset(s) {', '.join(sorted(unknown))} on this board")
    specs = dynascore.default_metrics()
    for name, w in metric_weights.items():
        specs[name] = dynascore.MetricSpec(specs[name].direction, specs[name].offset, w)
    dw = {d["name"]: dataset_weights.get(d["name"], 1.0) for d in datasets}
    result = _score(board, specs, dw or None, limit, offset)
    out_rows = []
    for m in result.page:
        r = board.rows[m.name]
        out_rows.append({"rank": m.rank, "model": m.name, "dynascore": m.dynascore, "values": m.values,
                         "converted": m.converted, "submitter": r["submitter"], "key_fingerprint": r["key_fingerprint"],
                         "model_digest": r["model_digest"], "created_at": r["created_at"], "bundle_id": r["bundle_id"],
                         "bundle_url": f"/api/bundles/{r['bundle_id']}"})
    return {"task": task,
            "metrics": {k: {"unit": board.units.get(k, ""), "weight": s.weight, "direction": s.direction}
                        for k, s in specs.items()},
            "datasets": [{"name": d["name"], "split": d["split"], "digest": d["digest"], "weight": dw[d["name"]]}
                         for d in datasets],
            "amrs": result.amrs, "total": result.total, "offset": offset, "rows": out_rows,
            "left_off": result.left_off, "notes": result.notes}
