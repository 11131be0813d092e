"""One board query of the public board: filter rows (hardware class, runner, sandbox), score, describe.

Measured metrics compare only within one hardware class, so a query ranks one class (by
default the one with the most models; ``hardware_class=all`` ranks every row and says that
its measured metrics are not comparable), using the local board's helpers. Filters select the
rows *before* scoring: the Dynascore's exchange rates depend on every model ranked, so a
filtered view is the board of those rows, not a hidden subset of another board. Each prepared
board is kept until the stored board changes (the same list object from ``db.board_rows``).
"""

from __future__ import annotations

import threading
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from dynadesk.errors import NotFoundError
from dynadesk.scoring.leaderboard import noisy_left_off
from dynadesk.sync import board as _board
from dynadesk.sync.server import reference as _reference
from dynadesk.sync.server import rows as _rows
from dynadesk.sync.server.db import ServerDB
from dynadesk.sync.server.facts import ALL_CLASSES, NOT_COMPARABLE, FactsCache, RowFacts
from dynadesk.sync.server.values import MetricRule
from dynadesk.tasks import Task


@dataclass(frozen=True)
class _Prepared:
    """One filtered board, scored per query; what does not depend on the weights is worked out once."""

    by_id: dict[str, dict[str, Any]]
    shown: dict[str, str]
    board: _board.PreparedBoard
    units: dict[str, str]
    submitted: frozenset[str]   # datasets some row has a value for
    measured: list[str]         # metrics some row reports as measured (not deterministic)
    reference: list[str]        # row ids the exchange rates are estimated from
    reference_rule: str


class BoardView:
    """The server's boards: ``answer(task, query)`` is the JSON of ``/api/leaderboard/{task}``."""

    def __init__(self, db: ServerDB, tasks: Mapping[str, Task], rules: Mapping[str, dict[str, MetricRule]]):
        self.db, self.tasks, self.rules = db, tasks, rules
        self.facts = FactsCache(db.bundle_raw)
        self._prepared: dict[tuple[Any, ...], tuple[list[dict[str, Any]], _Prepared]] = {}
        # keyed by filter; a class or runner must be present to be asked for, so the keys stay few
        self._lock = threading.Lock()

    def check_task(self, task: str) -> Task:
        if task not in self.tasks:
            raise NotFoundError(f"no task '{task}' on this board (known: {', '.join(sorted(self.tasks))})")
        return self.tasks[task]

    def all_facts(self, task: str) -> tuple[list[dict[str, Any]], dict[str, RowFacts]]:
        rows = self.db.board_rows(task)
        return rows, self.facts.of_rows(rows)

    def _prepare(self, task: str, key: tuple[Any, ...], stored: list[dict[str, Any]],
                 kept: list[dict[str, Any]]) -> _Prepared:
        with self._lock:
            cached = self._prepared.get(key)
        if cached is not None and cached[0] is stored:
            return cached[1]
        keyed = _rows.identified(kept)
        ref_rows, ref_rule = _reference.reference_rows(keyed)
        prepared = _Prepared({r["model"]: r for r in keyed}, _rows.labels(keyed), _board.prepare(keyed),
                             self._units(task, kept),
                             frozenset(d for r in kept for slot in r["metrics"].values() for d in slot["values"] if d),
                             sorted({n for r in kept for n, slot in r["metrics"].items() if not slot["deterministic"]}),
                             [r["model"] for r in ref_rows], ref_rule)
        with self._lock:
            self._prepared[key] = (stored, prepared)
        return prepared

    def answer(self, task: str, params: Mapping[str, str]) -> dict[str, Any]:
        """Parse every parameter (a clear ValidationError for a bad one), rank the selected rows, describe them."""
        spec = self.check_task(task)
        mw, dw = _board.parse_weights(params)
        limit, offset = _board.parse_page(params)
        budget = _board.parse_budget(params)
        row_filter, stability = _board.parse_filters(params)
        stored, facts = self.all_facts(task)
        audit = _board.parse_audit(params)
        kept, chosen, classes = row_filter.select(stored, facts)
        if audit == "reproduced":
            kept = [r for r in kept if _reference.reproduced(r)]
        exclude_noisy = _board.parse_exclude_noisy(params)
        noisy = [r for r in kept if facts[r["bundle_id"]].noisy] if exclude_noisy else []
        if noisy:
            kept = [r for r in kept if not facts[r["bundle_id"]].noisy]
        prep = self._prepare(task, (task, chosen, row_filter.runner, row_filter.sandboxed, audit, exclude_noisy),
                             stored, kept)
        datasets = self.db.datasets(task)
        answer = _board.compute_board(task, prep.board, datasets, mw, dw, limit, offset, budget, stability,
                                      prep.reference)
        if noisy:  # the local board's rule and words (scoring.leaderboard), keyed by this board's row labels
            shown_all = _rows.labels(_rows.identified(stored))
            answer["left_off"] = {**answer.get("left_off", {}), **noisy_left_off(
                {shown_all[_rows.row_id(r["model"], r["key_fingerprint"])]: list(facts[r["bundle_id"]].noisy)
                 for r in noisy}, f"{_board.NOISY_PARAM}=yes")}
        answer["reference"] = {"rule": prep.reference_rule, "amrs": answer["amrs"], "rows": [
            {"row_id": rid, "label": prep.shown[rid], "submitter": prep.by_id[rid]["submitter"],
             "bundle_id": prep.by_id[rid]["bundle_id"]} for rid in answer["reference"]]}
        answer = _rows.present(answer, prep.by_id, prep.shown, self.rules[task], self.db.dataset_versions(task))
        for out in answer["rows"]:
            r = prep.by_id[out["row_id"]]
            out.update(facts[r["bundle_id"]].to_dict())
            out["per_dataset"] = {name: slot["values"] for name, slot in r["metrics"].items()}
            out["model_url"] = f"/models/{r['bundle_id']}"
        for d in answer["datasets"]:
            d["submitted"] = d["name"] in prep.submitted
        labels = {f.hardware_class: f.hardware_label for f in facts.values()}
        comparable = chosen != ALL_CLASSES or len(classes) <= 1
        if not comparable:
            answer["notes"].insert(0, NOT_COMPARABLE.format(n=len(classes)))
        answer.update({
            "units": prep.units, "measured_metrics": prep.measured,
            "perf_metric": {"metric": spec.metric, "unit": prep.units.get("perf", "")},
            "hardware_class": chosen, "comparable": comparable,
            "hardware_classes": [{"class": c, "label": labels.get(c, c), "models": n} for c, n in classes.items()],
            "runners": sorted({f.runner for f in facts.values()}),
            "filters": {"runner": row_filter.runner, "sandboxed": row_filter.sandboxed, "audit": audit,
                        "exclude_noisy": exclude_noisy},
            "submissions": len(stored)})
        return answer

    def _units(self, task: str, rows: list[dict[str, Any]]) -> dict[str, str]:
        """Every metric's unit: the task's registry where it names one, else the one stored with the value."""
        units: dict[str, str] = {}
        for r in rows:
            for name, slot in r["metrics"].items():
                units.setdefault(name, slot["unit"])
        for name, rule in self.rules[task].items():
            if name in units:
                units[name] = rule.unit
        return dict(sorted(units.items()))

    def standing(self, task: str, bundle_id: str, hardware_class: str) -> dict[str, Any] | None:
        """The row of ``bundle_id`` on its hardware class's default board (rank, total), or None when the bundle
        is not a board row any more (a newer bundle of the same model and submitter replaced it)."""
        answer = self.answer(task, {"hardware_class": hardware_class, "limit": "1000"})
        for row in answer["rows"]:
            if row["bundle_id"] == bundle_id:
                return {"rank": row["rank"], "total": answer["total"], "dynascore": row["dynascore"],
                        "contributions": row["contributions"]}
        return None
