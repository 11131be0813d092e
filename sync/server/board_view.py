"""One board query of the public board: filter rows (hardware class, runner, sandbox), score, describe.

Measured metrics compare only within one hardware class, so a query ranks one class (by
default the operator's, else one chosen by distinct submitters, never by row count:
:mod:`~dynadesk.sync.server.default_view`; ``hardware_class=all`` ranks every row and says that
its measured metrics are not comparable), using the local board's helpers. Filters select the
rows *before* scoring: the Dynascore's exchange rates depend on every model ranked, so a
filtered view is the board of those rows, not a hidden subset of another board. Each prepared
board is kept until the stored board changes (the same list object from ``db.board_rows``).
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable, Mapping
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, replace
from typing import Any

from dynadesk.errors import NotFoundError
from dynadesk.scoring.baselines import marked_in
from dynadesk.scoring.board import Weighting
from dynadesk.scoring.classes import noisy_left_off
from dynadesk.sync.rules import board as _board
from dynadesk.sync.rules.board_facts import ALL_CLASSES, NOT_COMPARABLE, FactsCache, RowFacts, spreads_of
from dynadesk.sync.rules.board_stats import StatsCache
from dynadesk.sync.server import baseline_view as _baseline_view
from dynadesk.sync.server import default_view as _default
from dynadesk.sync.server import rate_editions as _rates
from dynadesk.sync.server import reference as _reference
from dynadesk.sync.server import rows as _rows
from dynadesk.sync.server.db import ServerDB
from dynadesk.sync.server.operator_view import OperatorView
from dynadesk.sync.server.values import MetricRule
from dynadesk.task_extras import board_weights
from dynadesk.tasks import Task

log = logging.getLogger("dynadesk.server")
ROW_RULE = ("a row is one model name of one submitter key: its latest bundle (by signed created_at), whose run"
            " (evaluation_id, bundle_id) it names; its Dynascore depends on that run, the weights and the rates"
            " named in 'rates' alone")


def rates_text(rates: Mapping[str, Any]) -> str:
    """The rates a board answer scored with, in words (the model page, the demo)."""
    if rates.get("status") == "edition":
        return f"rate edition {rates['edition']} ({str(rates['id'])[:12]}, frozen {rates['created_at']})"
    if rates.get("status") == "provisional":
        return "provisional rates (no rate edition frozen yet)"
    if rates.get("status") == "dynaboard":
        return "Dynaboard's rule (rates from the rows in view)"
    return "no exchange rates (only performance counts; see the board's notes)"


class OffRequestPath:
    """One background thread for the work a board answer need not wait for (rank intervals at a weight setting
    never asked before: :meth:`~dynadesk.sync.rules.board.BoardIntervals.rank_intervals`). At most ``limit`` jobs wait;
    beyond that a job is refused (the answer still says "pending" and a later ask schedules it again), so a
    flood of new settings costs a bounded queue, never the request threads."""

    def __init__(self, limit: int = 32) -> None:
        self.limit = limit
        self._pool = ThreadPoolExecutor(max_workers=1, thread_name_prefix="board-ranks")
        self._queued = 0
        self._lock = threading.Lock()

    def __call__(self, job: Callable[[], None]) -> bool:
        with self._lock:
            if self._queued >= self.limit:
                return False
            self._queued += 1

        def run() -> None:
            try:
                job()
            except Exception:  # a failed job leaves the setting pending: the next ask tries again
                log.exception("working out rank intervals failed")
            finally:
                with self._lock:
                    self._queued -= 1

        self._pool.submit(run)
        return True

    def drain(self, timeout: float = 60.0) -> None:
        """Wait until every job queued so far has run (benchmarks and tests)."""
        self._pool.submit(lambda: None).result(timeout)

    def shutdown(self) -> None:
        self._pool.shutdown(wait=False, cancel_futures=True)


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
    pinned: frozenset[str]      # bundle ids the operator pinned as references
    intervals: _board.BoardIntervals | None = None  # intervals, ties and rank intervals (issue 36)


class BoardView:
    """The server's boards: ``answer(task, query)`` is the JSON of ``/api/leaderboard/{task}``."""

    def __init__(self, db: ServerDB, tasks: Mapping[str, Task], rules: Mapping[str, dict[str, MetricRule]],
                 defer: Callable[[Callable[[], None]], bool] | None = None):
        """``defer``: where rank intervals at a new weight setting are worked out off the request path (the
        serving app's :class:`OffRequestPath`); without it (snapshots, scripts) every answer is complete."""
        self.db, self.tasks, self.rules, self.defer = db, tasks, rules, defer
        self.facts = FactsCache(db.bundle_raw)
        self.stats = StatsCache(db)
        self._prepared: dict[tuple[Any, ...], tuple[list[dict[str, Any]], _Prepared]] = {}
        # keyed by filter; a class or runner must be present to be asked for, so the keys stay few
        self._lock = threading.Lock()
        self.operator = OperatorView(db)
        self._classes: dict[str, tuple[list[dict[str, Any]], dict[str, _default.ClassStanding]]] = {}
        self.rates = _rates.RateBook(db)
        self._unbaselined: dict[str, tuple[list[dict[str, Any]], list[dict[str, Any]]]] = {}

    def check_task(self, task: str) -> Task:
        if task not in self.tasks:
            raise NotFoundError(f"no task '{task}' on this board (known: {', '.join(sorted(self.tasks))})")
        return self.tasks[task]

    def all_facts(self, task: str) -> tuple[list[dict[str, Any]], dict[str, RowFacts]]:
        rows = self.db.board_rows(task)
        return rows, self.facts.of_rows(rows)

    def _prepare(self, task: str, key: tuple[Any, ...], stored: list[dict[str, Any]],
                 kept: list[dict[str, Any]], pinned: frozenset[str]) -> _Prepared:
        with self._lock:
            cached = self._prepared.get(key)
        if cached is not None and cached[0] is stored and cached[1].pinned == pinned:
            return cached[1]
        keyed = _rows.identified(kept)
        ref_rows, ref_rule = _reference.reference_rows(keyed, pinned)
        shown = _rows.labels(_rows.identified(stored))  # look-alikes anywhere on the task's board are qualified
        prepared = _Prepared({r["model"]: r for r in keyed}, {r["model"]: shown[r["model"]] for r in keyed},
                             _board.prepare(keyed, spreads_of({r["model"]: self.facts.get(r["bundle_id"])
                                                               for r in keyed})),
                             self._units(task, kept),
                             frozenset(d for r in kept for slot in r["metrics"].values() for d in slot["values"] if d),
                             sorted({n for r in kept for n, slot in r["metrics"].items() if not slot["deterministic"]}),
                             [r["model"] for r in ref_rows], ref_rule, pinned, self._intervals(keyed))
        with self._lock:
            self._prepared[key] = (stored, prepared)
        return prepared

    def _intervals(self, keyed: list[dict[str, Any]]) -> _board.BoardIntervals:
        """The rows' intervals and shared resamples (stored at ingest), by row id."""
        stats = self.stats.of(r["bundle_id"] for r in keyed)
        return _board.BoardIntervals({r["model"]: stats[r["bundle_id"]].intervals for r in keyed},
                                     {r["model"]: stats[r["bundle_id"]].resampled for r in keyed},
                                     _rows.labels(keyed), defer=self.defer)

    def answer(self, task: str, params: Mapping[str, str], wait_ranks: bool = False) -> dict[str, Any]:
        """Parse every parameter (a clear ValidationError for a bad one), rank the selected rows, describe them
        (``wait_ranks``: with the rank intervals even at a weight setting new to the server)."""
        spec = self.check_task(task)
        mw, dw = _board.parse_weights(params)
        mw = board_weights(spec, mw)  # the task file's default weights under the query's
        limit, offset = _board.parse_page(params)
        budget = _board.parse_budget(params)
        row_filter, stability = _board.parse_filters(params)
        stored, facts = self.all_facts(task)
        asked_audit = _board.parse_audit(params) if params.get(_board.AUDIT_PARAM) else None
        settings = self.operator.settings(task)
        standings = self._standings(task, stored, facts)
        default = _default.choose(standings, settings.default_class)
        if row_filter.hardware_class is None:  # no class asked for: the operator's default, never the loudest key's
            row_filter = replace(row_filter, hardware_class=default.hardware_class)
        kept, chosen, classes = row_filter.select(stored, facts)
        kept, baselines = _baseline_view.split(kept, facts, marked_in(spec))  # never ranked nor reference rows
        base_rows = [r for r in stored if r["bundle_id"] in baselines]
        audit, audit_why = _default.default_audit(asked_audit, kept)
        audit_default = _default.default_audit(None, kept)[0]
        if audit == "reproduced":
            kept = [r for r in kept if _reference.reproduced(r)]
        exclude_noisy = _board.parse_exclude_noisy(params)
        noisy = [r for r in kept if facts[r["bundle_id"]].noisy] if exclude_noisy else []
        if noisy:
            kept = [r for r in kept if not facts[r["bundle_id"]].noisy]
        prep = self._prepare(task, (task, chosen, row_filter.runner, row_filter.sandboxed, audit, exclude_noisy),
                             stored, kept, frozenset(settings.pins))
        datasets = self.db.datasets(task)
        rates_view = _rates.parse_rates_view(params)
        source = (_rates.dynaboard_source() if rates_view == _rates.DYNABOARD
                  else self.rate_source(task, stored, facts, frozenset(settings.pins)))
        answer = _board.compute_board(task, prep.board, datasets, Weighting(mw, dw, budget, rates=source.amrs),
                                      _board.BoardView(limit, offset, stability,
                                                       None if source.amrs is None else prep.reference, wait_ranks),
                                      prep.intervals)
        left_rows = [{"row_id": rid, "label": prep.shown[rid], "bundle_id": prep.by_id[rid]["bundle_id"], "why": why}
                     for rid, why in answer["left_off"].items()]
        if noisy:  # the local board's rule and words (scoring.leaderboard), keyed by this board's row labels
            shown_all = _rows.labels(_rows.identified(stored))
            answer["left_off"] = {**answer.get("left_off", {}), **noisy_left_off(
                {shown_all[_rows.row_id(r["model"], r["key_fingerprint"])]: list(facts[r["bundle_id"]].noisy)
                 for r in noisy}, f"{_board.NOISY_PARAM}=yes")}
        every_label = _rows.labels(_rows.identified(stored))
        answer["reference"] = {"rule": source.status, "amrs": answer["amrs"], "rows": [
            {**r, "label": every_label.get(r["row_id"], r["row_id"])} for r in source.rows]
            if source.amrs is not None else [
            {"row_id": rid, "label": prep.shown[rid], "submitter": prep.by_id[rid]["submitter"],
             "bundle_id": prep.by_id[rid]["bundle_id"], "why": "a row in view (Dynaboard's rule)"}
            for rid in answer["reference"]]}
        answer["rates"] = source.to_dict()
        answer["notes"] = source.notes + answer["notes"]
        answer["row_rule"] = ROW_RULE
        answer = _rows.present(answer, prep.by_id, prep.shown, self.rules[task], self.db.dataset_versions(task))
        answer["left_off_rows"] = left_rows
        shown_all = _rows.labels(_rows.identified(stored))
        answer["baselines"] = _baseline_view.rows_of(
            base_rows, baselines, answer, {r["bundle_id"]: shown_all[_rows.row_id(r["model"], r["key_fingerprint"])]
                                           for r in base_rows}, facts, dw)
        _baseline_view.relative_breakdown(answer, answer["baselines"], self._lowest(
            answer, task, prep, datasets, (mw, dw, budget), source.amrs))
        for out in answer["rows"]:
            r = prep.by_id[out["row_id"]]
            out.update(facts[r["bundle_id"]].to_dict())
            out["per_dataset"] = {name: slot["values"] for name, slot in r["metrics"].items()}
            out["model_url"] = f"/models/{r['bundle_id']}"
            out["hardware_status"] = (_default.CONFIRMED if _default.row_confirmed(r, out["hardware_class"])
                                      else _default.DECLARED)
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
            "hardware_classes": [{"class": c, "label": labels.get(c, c), "models": n,
                                  "submitters": standings[c].submitters,
                                  "confirmed_submitters": standings[c].confirmed_submitters,
                                  "status": standings[c].status} for c, n in classes.items()],
            "default_class": default.to_dict(),
            "hardware_class_status": standings[chosen].status if chosen in standings else None,
            "runners": sorted({f.runner for f in facts.values()}),
            "filters": {"runner": row_filter.runner, "sandboxed": row_filter.sandboxed, "audit": audit,
                        "exclude_noisy": exclude_noisy, "rates": rates_view},
            "audit_default": {"audit": audit_default, "why": audit_why},
            "submissions": len(stored)})
        return answer

    @staticmethod
    def _lowest(answer: dict[str, Any], task: str, prep: _Prepared, datasets: list[dict[str, Any]],
                query: tuple[dict[str, float], dict[str, float], float], rates: Mapping[str, float | None] | None
                ) -> dict[str, Any] | None:
        """The lowest-ranked row of the whole view (label, contributions): the breakdown's reference when the view
        has no baseline; scored again (with the view's rates) only when it is not on this page."""
        if not answer["total"]:
            return None
        if answer["rows"] and answer["offset"] + len(answer["rows"]) >= answer["total"]:
            last = answer["rows"][-1]
            return {"label": last["label"], "contributions": last["contributions"]}
        mw, dw, budget = query
        row = _board.compute_board(task, prep.board, datasets, Weighting(mw, dw, budget, rates=rates),
                                   _board.BoardView(1, answer["total"] - 1,
                                                    reference=None if rates is not None else prep.reference)
                                   )["rows"][0]
        return {"label": prep.shown[row["model"]], "contributions": row["contributions"]}

    def rate_source(self, task: str, stored: list[dict[str, Any]], facts: dict[str, RowFacts],
                    pinned: frozenset[str]) -> _rates.RateSource:
        """The task's rates (its current edition, else provisional ones), whatever rows a query shows; baselines
        are never reference rows."""
        keys = self.db.upload_config().keys
        return self.rates.source(task, self._without_baselines(task, stored, facts), pinned,
                                 lambda bid: bool(facts[bid].sandboxed) if bid in facts else False,
                                 lambda fp: keys[fp].org if fp in keys and keys[fp].org else f"key:{fp}")

    def _without_baselines(self, task: str, stored: list[dict[str, Any]], facts: dict[str, RowFacts]
                           ) -> list[dict[str, Any]]:
        """The stored rows less the baselines, the same list object while ``stored`` is (the rate cache keys on it)."""
        with self._lock:
            cached = self._unbaselined.get(task)
        if cached is not None and cached[0] is stored:
            return cached[1]
        kept, _ = _baseline_view.split(stored, facts, marked_in(self.check_task(task)))
        with self._lock:
            self._unbaselined[task] = (stored, kept)
        return kept

    def freeze_rates(self, task: str, key: Any, choice: _rates.FreezeChoice | None = None) -> Any:
        """Freeze ``task``'s rates into its next signed, logged edition (``dynadesk-server rates freeze``)."""
        self.check_task(task)
        stored, facts = self.all_facts(task)
        stored, _ = _baseline_view.split(stored, facts, marked_in(self.check_task(task)))  # never reference rows
        keys = self.db.upload_config().keys
        return self.rates.freeze(task, key, stored, frozenset(self.operator.settings(task).pins),
                                 lambda bid: bool(facts[bid].sandboxed) if bid in facts else False,
                                 lambda fp: keys[fp].org if fp in keys and keys[fp].org else f"key:{fp}",
                                 choice)

    def _standings(self, task: str, stored: list[dict[str, Any]], facts: dict[str, RowFacts]
                   ) -> dict[str, _default.ClassStanding]:
        """Each hardware class's submitters and confirmed submitters, once per change of the stored board."""
        with self._lock:
            cached = self._classes.get(task)
        if cached is not None and cached[0] is stored:
            return cached[1]
        keys = self.db.upload_config().keys
        found = _default.standings(stored, facts, lambda fp: keys[fp].org if fp in keys else f"key:{fp}")
        with self._lock:
            self._classes[task] = (stored, found)
        return found

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
        answer = self.answer(task, {"hardware_class": hardware_class, "limit": "1000", "audit": "all"},
                             wait_ranks=True)
        for base in answer["baselines"]:  # a baseline has no rank (scoring.baselines)
            if base["bundle_id"] == bundle_id:
                return {"baseline": base["baseline"], "dynascore": base["dynascore"], "label": base["label"],
                        "contributions": base["contributions"], "total": answer["total"]}
        for row in answer["rows"]:
            if row["bundle_id"] == bundle_id:
                return {"rank": row["rank"], "total": answer["total"], "dynascore": row["dynascore"],
                        "contributions": row["contributions"], "label": row["label"],
                        "hardware_status": row["hardware_status"], "rank_interval": row.get("rank_interval"),
                        "tied_with": row.get("tied_with"), "paired_next": row.get("paired_next") or {},
                        "rates": answer["rates"], "rates_text": rates_text(answer["rates"])}
        return None

