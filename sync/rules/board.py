"""Server boards: stored bundle metrics -> the shared :class:`~dynadesk.scoring.board.ScoreBoard` -> one page.

The server never re-implements scoring: :func:`prepare` builds the board's matrix once per
change of the stored board (the same object the CLI and the app score through), and each
query only parses its parameters and asks that board for one page.
"""

from __future__ import annotations

import threading
from collections import OrderedDict
from collections.abc import Callable, Hashable, Mapping
from dataclasses import dataclass, field, replace
from typing import Any

from dynadesk.errors import ValidationError
from dynadesk.scoring import bootstrap as _bootstrap
from dynadesk.scoring.board import SCORE_METRICS, BoardScore, ScoreBoard, Weighting
from dynadesk.scoring.dynascore import DEFAULT_MEMORY_BUDGET_GIB, rank_stability
from dynadesk.scoring.rank_basis import RankBasis, first_width
from dynadesk.sync.rules.board_facts import RowFilter

BOARD_METRICS = SCORE_METRICS


def board_metrics(bundle_metrics: list[dict[str, Any]]) -> dict[str, Any]:
    """Compact per-model form stored with each board row: values by dataset ('' = whole run) and units."""
    out: dict[str, Any] = {}
    for m in bundle_metrics:
        slot = out.setdefault(m["metric"], {"unit": m["unit"], "deterministic": m["deterministic"], "values": {}})
        slot["values"][m["dataset"]] = m["value"]
    return out


PAGE_PARAMS = {"limit": 100, "offset": 0}  # name: default (the board checks the bounds)
BUDGET_PARAM = "memory_budget"
FILTER_PARAMS = ("hardware_class", "runner", "sandboxed")
STABILITY_PARAM = "stability"
AUDIT_PARAM = "audit"
AUDIT_VALUES = ("all", "reproduced")  # audit=reproduced: only rows an auditor reproduced (none disputed)
_YES_NO = {"yes": True, "true": True, "1": True, "no": False, "false": False, "0": False}


def _yes_no(params: Mapping[str, str], name: str) -> bool | None:
    raw = params.get(name)
    if raw is None or raw == "":
        return None
    try:
        return _YES_NO[raw.lower()]
    except KeyError:
        raise ValidationError(f"query parameter '{name}' must be yes or no, got {raw!r:.40}") from None


def parse_filters(params: Mapping[str, str]) -> tuple[RowFilter, bool]:
    """``hardware_class`` (a class or 'all'), ``runner``, ``sandboxed=yes|no`` and ``stability=yes|no``."""
    hw = params.get("hardware_class") or None
    runner = params.get("runner") or None
    return RowFilter(hw, runner, _yes_no(params, "sandboxed")), bool(_yes_no(params, STABILITY_PARAM))


def parse_audit(params: Mapping[str, str]) -> str:
    """``audit=all|reproduced`` (default all): whether a board query ranks only reproduced rows."""
    raw = params.get(AUDIT_PARAM) or "all"
    if raw not in AUDIT_VALUES:
        raise ValidationError(f"query parameter '{AUDIT_PARAM}' must be one of {', '.join(AUDIT_VALUES)}, "
                              f"got {raw!r:.40}")
    return raw


NOISY_PARAM = "exclude_noisy"
RATES_PARAM = "rates"  # edition (default: the task's rate edition or provisional rates) | dynaboard


def parse_exclude_noisy(params: Mapping[str, str]) -> bool:
    """``exclude_noisy=yes|no`` (default no): rank without rows whose signed measurement summary flags their
    timed figures noisy (``dynadesk leaderboard --exclude-noisy`` on the public board)."""
    return bool(_yes_no(params, NOISY_PARAM))


def parse_page(params: Mapping[str, str]) -> tuple[int, int]:
    """``limit`` (rows, default 100) and ``offset`` of a board query, as integers."""
    out = []
    for name, default in PAGE_PARAMS.items():
        raw = params.get(name)
        if raw is None:
            out.append(default)
            continue
        try:
            out.append(int(raw))
        except ValueError:
            raise ValidationError(f"query parameter '{name}' must be an integer, got {raw!r:.40}") from None
    return out[0], out[1]


def parse_budget(params: Mapping[str, str]) -> float:
    """``memory_budget`` (GiB, default 16) of a board query, as a number (the board checks its range)."""
    raw = params.get(BUDGET_PARAM)
    if raw is None:
        return DEFAULT_MEMORY_BUDGET_GIB
    try:
        return float(raw)
    except ValueError:
        raise ValidationError(f"query parameter '{BUDGET_PARAM}' must be a number of GiB, got {raw!r:.40}") from None


def parse_weights(params: Mapping[str, str]) -> tuple[dict[str, float], dict[str, float]]:
    """``weight.<metric>=w`` and ``dataset.<name>=w`` query parameters as numbers (the board checks their
    range); anything else is an error."""
    metric_w: dict[str, float] = {}
    dataset_w: dict[str, float] = {}
    for key, raw in params.items():
        if key in PAGE_PARAMS or key in FILTER_PARAMS or key in (BUDGET_PARAM, STABILITY_PARAM, AUDIT_PARAM,
                                                                 NOISY_PARAM, RATES_PARAM):
            continue
        kind, _, name = key.partition(".")
        if kind not in ("weight", "dataset") or not name:
            raise ValidationError(f"unknown query parameter '{key}' (use weight.<metric>=N or dataset.<name>=N)")
        try:
            value = float(raw)
        except ValueError:
            raise ValidationError(f"query parameter '{key}' must be a number, got {raw!r:.40}") from None
        if kind == "weight":
            if name not in BOARD_METRICS:
                raise ValidationError(f"unknown metric '{name}' in '{key}' (board metrics: {', '.join(BOARD_METRICS)})")
            metric_w[name] = value
        else:
            dataset_w[name] = value
    return metric_w, dataset_w


@dataclass(frozen=True)
class PreparedBoard:
    """Board rows and their scoring board; built once per change of the stored board, reused per query."""

    rows: dict[str, dict[str, Any]]    # label -> stored row
    units: dict[str, str]
    board: ScoreBoard
    # metric -> label -> the run's signed trial spread: the floor the AMRS noise note judges throughput by
    spreads: Mapping[str, Mapping[str, float]] = field(default_factory=dict)


def prepare(rows: list[dict[str, Any]], spreads: Mapping[str, Mapping[str, float]] | None = None) -> PreparedBoard:
    """Label rows (model name, plus the submitter where two submitters share a name), collect units, build the
    scoring board. ``spreads``: metric -> label -> the run's trial spread (:func:`board_facts.spreads_of`)."""
    counts: dict[str, int] = {}
    for r in rows:
        counts[r["model"]] = counts.get(r["model"], 0) + 1
    by_label = {(r["model"] if counts[r["model"]] == 1 else f"{r['model']} ({r['submitter']})"): r for r in rows}
    units: dict[str, str] = {}
    for r in rows:
        for name, slot in r["metrics"].items():
            units.setdefault(name, slot["unit"])
    tables = {k: {name: slot["values"] for name, slot in r["metrics"].items()} for k, r in by_label.items()}
    return PreparedBoard(by_label, units, ScoreBoard.from_tables(tables, BOARD_METRICS), dict(spreads or {}))


RANK_CACHE = 64  # rank intervals kept per prepared board (one per weight setting asked for)
INTERVALS_ABOUT = {"level": _bootstrap.LEVEL, "resamples": _bootstrap.RESAMPLES, "method": _bootstrap.METHOD,
                   "tied": "paired bootstrap of the task metric against the next row on every test set both were"
                           " scored on (same data digest): tied when each 95% interval of the difference contains 0",
                   "rank_interval": "central 95% of the row's rank over the shared resamples, measured metrics and"
                                    " exchange rates held fixed",
                   "rank_intervals_pending": "true when this answer's weight setting was new to the server: its rank"
                                             " intervals are being worked out off the request path (rows say"
                                             " null); ask again to get them"}


PAIR_FIELDS = ("delta", "low", "high", "p_value", "tied")  # what an answer says of a paired test
DIGITS = 4  # the answer's intervals and tests in points to 4 decimals (the exact signed ones are in the bundle)


def _short(v: Any) -> Any:
    return round(v, DIGITS) if isinstance(v, float) else v


@dataclass
class BoardIntervals:
    """A prepared board's intervals and shared resamples by row id, with what queries work out from them kept: a
    pair's paired test (weights never change it) and, per weight setting (LRU), the rank intervals and each page's
    annotations, so a repeated or cached view costs a dictionary update per row. ``labels``: row id -> the label an
    answer names a neighbour by (default: the row id)."""

    intervals: dict[str, dict[str, Any]]                       # row id -> dataset -> signed interval
    resampled: dict[str, dict[str, _bootstrap.Resampled]]      # row id -> dataset -> shared resamples
    labels: dict[str, str] = field(default_factory=dict)
    pairs: dict[tuple[Hashable, Hashable, str], dict[str, Any] | None] = field(default_factory=dict)
    ranks: OrderedDict[Hashable, dict[str, list[int]]] = field(default_factory=OrderedDict)
    pages: OrderedDict[Hashable, list[dict[str, Any]]] = field(default_factory=OrderedDict)
    bases: dict[int, RankBasis] = field(default_factory=dict)  # resample count -> the rows' rank basis
    shown: dict[str, dict[str, dict[str, Any]]] = field(default_factory=dict)  # row -> its rounded intervals
    shown_pairs: dict[tuple[str, str | None], dict[str, dict[str, Any]]] = field(default_factory=dict)
    lock: threading.Lock = field(default_factory=threading.Lock)
    defer: Callable[[Callable[[], None]], bool] | None = None  # runs work off the request path (False: not now)
    pending: set[Hashable] = field(default_factory=set)  # weight settings whose rank intervals are under way

    def _cached(self, cache: OrderedDict[Hashable, Any], key: Hashable) -> Any:
        with self.lock:
            found = cache.get(key)
            if found is not None:
                cache.move_to_end(key)
            return found

    def _keep(self, cache: OrderedDict[Hashable, Any], key: Hashable, value: Any) -> None:
        with self.lock:
            cache[key] = value
            while len(cache) > RANK_CACHE:
                cache.popitem(last=False)

    def rank_intervals(self, key: Hashable, scored: BoardScore, board: PreparedBoard,
                       dataset_weights: Mapping[str, float], wait: bool = False) -> dict[str, list[int]] | None:
        """The rows' rank intervals at this weight setting (``bootstrap.rank_intervals``' values), from the board's
        kept :class:`RankBasis`: a new weight setting costs a few vectorised operations, not a bootstrap loop.

        With ``defer`` (the server), a setting not seen before is worked out off the request path and None says
        so: the answer is not held up by it, and the next ask finds it (``wait``, a snapshot and the local board,
        which has no ``defer``, always wait for it)."""
        found: dict[str, list[int]] | None = self._cached(self.ranks, key)
        if found is not None:
            return found
        nothing_to_resample = len(scored.names) < 2 or first_width(
            [self.resampled.get(n, {}) for n in scored.names]) is None  # no outcomes: nothing to wait for
        if self.defer is None or wait or nothing_to_resample:
            return self._work_out_ranks(key, scored, board, dataset_weights)
        with self.lock:
            if key in self.pending:
                return None
            self.pending.add(key)

        def job() -> None:
            try:
                self._work_out_ranks(key, scored, board, dataset_weights)
            finally:
                with self.lock:
                    self.pending.discard(key)

        if not self.defer(job):
            with self.lock:
                self.pending.discard(key)
        return None

    def _work_out_ranks(self, key: Hashable, scored: BoardScore, board: PreparedBoard,
                        dataset_weights: Mapping[str, float]) -> dict[str, list[int]]:
        names = scored.names
        width = first_width([self.resampled.get(n, {}) for n in names])
        got = None if len(names) < 2 or width is None else self._basis(width, board).intervals(
            names, scored.scores.tolist(), dataset_weights, scored.weights.get("perf", 0.0))
        found = dict(zip(names, got or []))
        self._keep(self.ranks, key, found)
        return found

    def _basis(self, width: int, board: PreparedBoard) -> RankBasis:
        """The weight-free part of the rank intervals of every row of ``board`` (built once per resample count)."""
        with self.lock:
            found = self.bases.get(width)
            if found is None:
                names = list(board.rows)
                found = RankBasis.build(names, [board.rows[n]["metrics"].get("perf", {}).get("values", {})
                                                for n in names], [self.resampled.get(n, {}) for n in names], width)
                self.bases[width] = found
            return found

    def annotate(self, rows: list[dict[str, Any]], scored: BoardScore, board: PreparedBoard, offset: int,
                 key: Hashable, dataset_weights: Mapping[str, float], wait: bool = False) -> bool:
        """Each page row's ``intervals`` (low, high by dataset), ``paired_next`` (by dataset: the test against the
        next row, ``with`` its label), ``tied_with`` (the next row's label, when tied) and ``rank_interval`` (None
        where no row has outcomes, or while it is worked out); numbers to :data:`DIGITS` decimals (the answer stays
        small). True when the rank intervals are still being worked out (:meth:`rank_intervals`)."""
        page_key = (key, offset, len(rows))
        found: list[dict[str, Any]] | None = self._cached(self.pages, page_key)
        pending = False
        if found is None:
            ranks = self.rank_intervals(key, scored, board, dataset_weights, wait)
            pending = ranks is None
            found = self._annotations(scored, offset, len(rows), ranks or {})
            if not pending:  # a page without its rank intervals is never kept
                self._keep(self.pages, page_key, found)
        for out, extra in zip(rows, found):
            out.update(extra)
        return pending

    def _annotations(self, scored: BoardScore, offset: int, count: int,
                     ranks: Mapping[str, list[int]]) -> list[dict[str, Any]]:
        positions = range(offset, offset + count)
        with self.lock:
            tests = _bootstrap.neighbour_tests(scored.names, self.resampled, self.pairs, positions)
        out = []
        for i in positions:
            name = scored.names[i]
            after = scored.names[i + 1] if i + 1 < len(scored.names) else None
            shown = self.labels.get(after, after) if after else None
            found, tied = tests.get(name, ({}, False))
            out.append({"intervals": self._shown_intervals(name),
                        "paired_next": self._shown_pair(name, after, shown, found),
                        "tied_with": shown if tied else None, "rank_interval": ranks.get(name)})
        return out

    def _shown_intervals(self, name: str) -> dict[str, dict[str, Any]]:
        """A row's intervals as answers show them (rounded), worked out once per row: no weight changes them."""
        with self.lock:
            found = self.shown.get(name)
        if found is None:
            found = {d: {"low": _short(iv["low"]), "high": _short(iv["high"])}
                     for d, iv in self.intervals.get(name, {}).items()}
            with self.lock:
                self.shown[name] = found
        return found

    def _shown_pair(self, name: str, after: str | None, label: str | None,
                    tests: Mapping[str, Mapping[str, Any]]) -> dict[str, dict[str, Any]]:
        """A row's paired tests against the next row as answers show them, kept per pair (a new weight setting
        mostly reorders rows whose pairs were shown before)."""
        key = (name, after)
        with self.lock:
            found = self.shown_pairs.get(key)
        if found is None:
            found = {d: {**{k: _short(t[k]) for k in PAIR_FIELDS}, "with": label} for d, t in tests.items()}
            with self.lock:
                self.shown_pairs[key] = found
        return found


@dataclass(frozen=True)
class BoardView:
    """What a board query shows of the scored board: one page (``limit`` rows from ``offset``), each row's best
    and worst rank when one weight varies (``stability``), the rows the exchange rates are estimated from
    (``reference``; None: every row) and whether the rank intervals are waited for (``wait_ranks``). One value,
    so :func:`compute_board` takes what is scored (a :class:`~dynadesk.scoring.board.Weighting`) and what is
    shown as two things, not eight loose options."""

    limit: int = 100
    offset: int = 0
    stability: bool = False
    reference: list[str] | None = None
    wait_ranks: bool = False


def compute_board(task: str, board: PreparedBoard, datasets: list[dict[str, Any]], weighting: Weighting,
                  view: BoardView | None = None, intervals: BoardIntervals | None = None) -> dict[str, Any]:
    """The JSON a board query answers: ranked rows (one page) with raw values, units, Dynascore and
    bundle links. Every model is scored (the exchange rates depend on all of them) under ``weighting``; only the
    page ``view`` names is sent (:class:`BoardView`'s defaults unless given).

    Each row's ``contributions`` (normalised weight x converted value per metric) sum to its Dynascore, so a
    chart of them needs no scoring of its own; ``stability`` adds each row's best and worst rank when one
    weight varies (:func:`~dynadesk.scoring.dynascore.rank_stability`). ``reference``: the board labels the
    exchange rates are estimated from (default: every row, Dynaboard's definition); the answer's ``reference``
    names the rows that set them. ``intervals`` adds each row's intervals, paired test against the next row,
    "tied with" mark and Dynascore rank interval (:class:`BoardIntervals`; ``wait_ranks``: never leave the rank
    intervals pending). ``rates``: fixed exchange rates (a rate edition, :meth:`ScoreBoard.score`) instead of
    rates estimated from ``reference``."""
    view = view or BoardView()
    limit, offset, stability, reference, wait_ranks = (view.limit, view.offset, view.stability, view.reference,
                                                       view.wait_ranks)
    metric_weights, dataset_weights = dict(weighting.weights or {}), dict(weighting.dataset_weights or {})
    memory_budget_gib, rates = weighting.memory_budget_gib, weighting.rates
    scored = board.board.score(weighting=replace(weighting, weights=metric_weights, dataset_weights=dataset_weights),
                               offset=offset, limit=limit, known_datasets=[d["name"] for d in datasets],
                               reference=reference, spreads=board.spreads)
    stab = rank_stability(scored.to_result()) if stability else {}
    out_rows = []
    for m in scored.page():
        r = board.rows[m.name]
        out_rows.append({"rank": m.rank, "model": m.name, "dynascore": m.dynascore, "values": m.values,
                         "converted": m.converted,
                         "contributions": {k: scored.weights[k] * v for k, v in m.converted.items()},
                         **({"stability": stab.get(m.name)} if stability else {}),
                         "submitter": r["submitter"], "key_fingerprint": r["key_fingerprint"],
                         "model_digest": r["model_digest"], "created_at": r["created_at"], "bundle_id": r["bundle_id"],
                         "bundle_url": f"/api/bundles/{r['bundle_id']}"})
    pending = False
    if intervals is not None:
        key = (tuple(sorted(metric_weights.items())), tuple(sorted(dataset_weights.items())), memory_budget_gib,
               None if rates is None else tuple(sorted(rates.items())))  # the rates change scores, so ranks
        pending = intervals.annotate(out_rows, scored, board, offset, key, dataset_weights, wait_ranks)
    return {"task": task,
            **({"intervals": INTERVALS_ABOUT, "rank_intervals_pending": pending} if intervals is not None else {}),
            "metrics": {k: {"unit": board.units.get(k, ""), "weight": s.weight, "direction": s.direction,
                            "offset": s.offset}
                        for k, s in scored.metrics.items()},
            "datasets": [{"name": d["name"], "split": d["split"], "digest": d["digest"],
                          "weight": float(dataset_weights.get(d["name"], 1.0))} for d in datasets],
            "amrs": scored.amrs,
            "reference": list(scored.reference) if scored.reference is not None else list(scored.names),
            "total": scored.total, "offset": offset, "rows": out_rows,
            "left_off": scored.left_off, "notes": scored.notes}
