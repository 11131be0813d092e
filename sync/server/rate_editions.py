"""A task's exchange rates as a published property of the board (issue 44, item 2): rate editions and provisional rates.

Every row of a task is scored with the task's **current rate edition**: rates the operator froze with ``dynadesk-server
rates freeze --task T``, signed by the server's log key, appended to the transparency log (a ``rates`` entry) and
numbered per task. No upload moves them. Until the first edition the board uses **provisional** rates made by the same
rule from the board's current reference rows, labelled provisional; where no rate can be made the board says why and
what the operator can do. Both come from the reference rows (:func:`reference_candidates`) by the bounded robust
estimator of :mod:`dynadesk.scoring.rates`. Dynaboard's own rule (rates from the rows in view) is the board view
``rates=dynaboard``.
"""

from __future__ import annotations

import hashlib
import threading
from collections.abc import Callable, Collection, Mapping
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey

from dynadesk.errors import NotFoundError, ValidationError
from dynadesk.scoring.dynascore import PERF
from dynadesk.scoring.rates import (
    DYNABOARD_ESTIMATOR,
    ESTIMATOR,
    MIN_ROWS,
    RATE_FACTOR,
    ROBUST,
    MetricRate,
    rates_from_tables,
)
from dynadesk.sync.format import keys as _keys
from dynadesk.sync.format.rate_edition import RateEdition, parse_edition, sign_edition
from dynadesk.sync.format.timestamps import utc_now_text
from dynadesk.sync.format.translog import entry_hash
from dynadesk.sync.server import reference as _reference
from dynadesk.sync.server import rows as _rows
from dynadesk.sync.server.db import ServerDB
from dynadesk.sync.server.versioned_cache import VersionedCache

__all__ = ["RATE_FACTOR", "RateBook", "RateSource", "derive", "reference_candidates"]
EDITION, PROVISIONAL, NONE, DYNABOARD = "edition", "provisional", "none", "dynaboard"
RATES_PARAM = "rates"
RATES_VIEWS = (EDITION, DYNABOARD)  # ?rates=edition (default): the task's rates; dynaboard: from the rows in view
PINNED_WHY = "pinned by the operator"
REPRODUCED_WHY = "reproduced by an auditor, sandboxed: its organisation's latest such row"


def what_to_do(task: str) -> str:
    return (f"the operator can pin at least {MIN_ROWS} reference rows ('dynadesk-server reference pin BUNDLE_ID') or"
            " have sandboxed rows of distinct organisations reproduced by an auditor, then freeze the rates"
            f" ('dynadesk-server rates freeze --task {task}')")


def reference_candidates(rows: list[dict[str, Any]], pinned: Collection[str], sandboxed: Callable[[str], bool],
                         organisation: Callable[[str], str], per_organisation: bool = True
                         ) -> list[tuple[dict[str, Any], str]]:
    """``(row, why)`` for each reference row among a task's board rows (as :func:`rows.identified` keys them): one
    row per organisation (its latest pinned row, else its latest row that an auditor reproduced and that ran
    sandboxed), so that no submitter sets the rates by having the operator pin its rows (:func:`same_organisation`
    names the pins that do not count); with ``per_organisation`` False (``rates freeze --single-organisation``) every
    pinned row. Never a baseline: the board view takes baselines out before rows reach here (``baseline_view.split``,
    over ``scoring.baselines.is_baseline``). The predicate other parts decide is :func:`reference.reproduced`;
    ``sandboxed(bundle_id)`` and ``organisation(key_fingerprint)`` are the row's facts."""
    out: dict[str, tuple[dict[str, Any], str]] = {}
    pins: dict[str, dict[str, Any]] = {}
    latest: dict[str, dict[str, Any]] = {}
    for r in rows:
        org = organisation(r["key_fingerprint"])
        if r["bundle_id"] in pinned:
            if not per_organisation:
                out[r["model"]] = (r, PINNED_WHY)
            elif org not in pins or _newer(r, pins[org]):
                pins[org] = r
        elif _reference.reproduced(r) and sandboxed(r["bundle_id"]):
            if org not in latest or _newer(r, latest[org]):
                latest[org] = r
    for r in pins.values():
        out[r["model"]] = (r, PINNED_WHY)
    taken = {organisation(r["key_fingerprint"]) for r, _ in out.values()}
    for org, r in latest.items():
        if org not in taken:
            out.setdefault(r["model"], (r, REPRODUCED_WHY))
    return sorted(out.values(), key=lambda rw: str(rw[0]["model"]))


def _newer(a: dict[str, Any], b: dict[str, Any]) -> bool:
    return bool((a["created_at"], a["model"]) > (b["created_at"], b["model"]))


def same_organisation(rows: list[dict[str, Any]], organisation: Callable[[str], str]) -> dict[str, list[str]]:
    """``{organisation: [row ids]}`` for each organisation that holds more than one of ``rows`` (the operator's pins
    or chosen rows): reference rows must be of distinct organisations."""
    by_org: dict[str, list[str]] = {}
    for r in rows:
        by_org.setdefault(organisation(r["key_fingerprint"]), []).append(str(r["model"]))
    return {org: sorted(ids) for org, ids in sorted(by_org.items()) if len(ids) > 1}


def distinct_rule(dupes: Mapping[str, list[str]]) -> str:
    """The rule in words, with the organisations whose rows it counts once."""
    return ("reference rows must be of distinct organisations, so that no submitter sets the rates: "
            + "; ".join(f"organisation {org} holds {len(ids)} of them ({', '.join(ids)})"
                        for org, ids in dupes.items()))


def derive(chosen: list[tuple[dict[str, Any], str]], factor: float = RATE_FACTOR, rule: str = ROBUST
           ) -> dict[str, MetricRate]:
    """Each metric's rate over the chosen reference rows' values (equal dataset weights): bounded robust, or
    Dynaboard's own rule when the operator freezes with ``--rule dynaboard``."""
    return rates_from_tables({r["model"]: {name: slot["values"] for name, slot in r["metrics"].items()}
                              for r, _ in chosen}, factor, rule)


@dataclass
class RateSource:
    """The rates a board answer scores with, and what it says about them."""

    status: str                                  # edition | provisional | none | dynaboard
    amrs: dict[str, float | None] | None         # None: estimate from the rows in view (the Dynaboard view)
    rows: list[dict[str, Any]] = field(default_factory=list)   # {row_id, bundle_id, submitter, why}
    detail: dict[str, dict[str, Any]] = field(default_factory=dict)
    edition: RateEdition | None = None
    notes: list[str] = field(default_factory=list)

    def to_dict(self) -> dict[str, Any]:
        return {"status": self.status, **(self.edition.to_summary() if self.edition else {"edition": None}),
                "amrs": self.amrs, "estimator": self.edition.payload["estimator"] if self.edition else
                ESTIMATOR if self.status != DYNABOARD else
                "Dynaboard's AMRS: the mean over neighbouring pairs of the rows in view",
                "factor": self.edition.payload["factor"] if self.edition else RATE_FACTOR, "min_rows": MIN_ROWS,
                "metrics": self.detail, "notes": self.notes}


def _notes(task: str, status: str, rates: Mapping[str, MetricRate], n_rows: int) -> list[str]:
    others = {k: r for k, r in rates.items() if k != PERF}
    if status == PROVISIONAL and all(r.rate is None for r in others.values()):
        why = "no reference rows (no row is pinned by the operator, and no sandboxed row is reproduced by an " \
              "auditor)" if n_rows == 0 else "; ".join(f"{k}: {r.why}" for k, r in others.items())
        return [f"no exchange rates for '{task}': no rate edition has been frozen and none can be made from the"
                f" reference rows ({why}); only performance counts (other metrics convert to 0). To fix it, "
                + what_to_do(task)]
    notes = []
    if status == PROVISIONAL:
        notes.append(f"provisional exchange rates: no rate edition of '{task}' has been frozen yet; these come from"
                     f" {n_rows} reference rows by the robust estimator and change when the reference rows change"
                     f" (the operator freezes them with 'dynadesk-server rates freeze --task {task}')")
    for k, r in others.items():
        if r.rate is None:
            notes.append(f"metric '{k}' has no exchange rate ({r.why}): it converts to 0 for every row")
        elif r.rate == 0:
            notes.append(f"metric '{k}' has exchange rate 0 (its reference rows do not differ in it): it converts to"
                         " 0 for every row")
    return notes


@dataclass(frozen=True)
class FreezeChoice:
    """What the operator chose at ``rates freeze``: the rows (None: the reference rows), a note, the bound, the rule
    (:data:`scoring.rates.RULES`) and, when the rows need not be of distinct organisations, why (stated)."""

    bundle_ids: list[str] | None = None
    note: str = ""
    factor: float = RATE_FACTOR
    rule: str = ROBUST
    single_organisation: str = ""


class RateBook:
    """The server's rate editions (stored, logged) and each task's current rate source, cached per board version."""

    def __init__(self, db: ServerDB):
        self.db = db
        self._lock = threading.Lock()
        self._cache: VersionedCache[str, RateEdition | None] = VersionedCache()
        self._sources: dict[tuple[str, Any], tuple[Any, RateSource]] = {}

    # ------------------------------------------------------------------ stored editions
    def current(self, task: str) -> RateEdition | None:
        """The task's latest edition (None before the first), cached until the database changes."""
        return self._cache.get(task, self.db.board_version(), lambda: self._read_current(task))

    def _read_current(self, task: str) -> RateEdition | None:
        with self.db.lock:
            row = self.db.conn.execute("SELECT raw FROM rate_editions WHERE task = ? ORDER BY edition DESC LIMIT 1",
                                       [task]).fetchone()
        return parse_edition(bytes(row[0])) if row else None

    def get(self, task: str, number: int) -> RateEdition:
        with self.db.lock:
            row = self.db.conn.execute("SELECT raw FROM rate_editions WHERE task = ? AND edition = ?",
                                       [task, number]).fetchone()
        if row is None:
            raise NotFoundError(f"no rate edition {number} of '{task}' (list them: dynadesk-server rates list)")
        return parse_edition(bytes(row[0]))

    def listing(self, task: str | None = None) -> list[dict[str, Any]]:
        cols = ("task", "edition", "id", "seq", "created_at")
        with self.db.lock:
            rows = self.db.conn.execute(
                "SELECT task, edition, id, seq, created_at FROM rate_editions"
                " WHERE CAST(? AS TEXT) IS NULL OR task = ? ORDER BY task, edition", [task, task]).fetchall()
        return [dict(zip(cols, r)) for r in rows]

    def add(self, edition: RateEdition) -> dict[str, Any]:
        """Store an edition and append it to the log, atomically; its number must follow the task's last one."""
        with self.db.tx() as c:
            last = c.execute("SELECT MAX(edition) FROM rate_editions WHERE task = ?", [edition.task]).fetchone()
            want = int(last[0] or 0) + 1 if last else 1
            if edition.number != want:
                raise ValidationError(f"rate edition {edition.number} of '{edition.task}': the next edition is {want}")
            seq, entry, received = ServerDB._append_log(c, entry_hash, edition.id,
                                                        hashlib.sha256(edition.raw).hexdigest(), "rates")
            c.execute("INSERT INTO rate_editions(id, seq, task, edition, created_at, raw) VALUES (?,?,?,?,?,?)",
                      [edition.id, seq, edition.task, edition.number, edition.payload["created_at"], edition.raw])
        return {"id": edition.id, "seq": seq, "entry_hash": entry, "received_at": received}

    # ------------------------------------------------------------------ what a board scores with
    def source(self, task: str, stored: list[dict[str, Any]], pinned: Collection[str],
               sandboxed: Callable[[str], bool], organisation: Callable[[str], str]) -> RateSource:
        """The current edition's rates, else provisional rates from the reference rows (cached per stored board)."""
        edition = self.current(task)
        key = (task, edition.id if edition else None)
        with self._lock:
            cached = self._sources.get(key)
        if edition is None and cached is not None and cached[0][0] is stored and cached[0][1] == frozenset(pinned):
            return cached[1]
        if edition is not None:
            if cached is not None:
                return cached[1]
            p = edition.payload
            found = RateSource(EDITION, edition.amrs, list(p["reference"]), dict(p["rates"]), edition,
                               [f"exchange rates: {edition.describe()}, frozen {p['created_at']}: every row is scored"
                                " with them"] + edition.notes())
        else:
            keyed = _rows.identified(stored)
            chosen = reference_candidates(keyed, pinned, sandboxed, organisation)
            rates = derive(chosen)
            dupes = same_organisation([r for r in keyed if r["bundle_id"] in pinned], organisation)
            found = RateSource(PROVISIONAL, {k: r.rate for k, r in rates.items()}, _described(chosen, organisation),
                               {k: r.to_dict() for k, r in rates.items()}, None,
                               _notes(task, PROVISIONAL, rates, len(chosen)) + (
                                   [f"pinned rows counted once per organisation: {distinct_rule(dupes)} (each"
                                    " organisation's latest pin is its reference row)"] if dupes else []))
            if all(v is None for k, v in (found.amrs or {}).items() if k != PERF):
                found.status = NONE
        with self._lock:
            self._sources[key] = ((stored, frozenset(pinned)), found)  # the list itself: its id is never reused
        return found

    def freeze(self, task: str, key: Ed25519PrivateKey, stored: list[dict[str, Any]], pinned: Collection[str],
               sandboxed: Callable[[str], bool], organisation: Callable[[str], str],
               choice: FreezeChoice | None = None, now: datetime | None = None) -> RateEdition:
        """Freeze ``task``'s rates into the next signed, logged edition, from the reference rows (or exactly the rows
        the operator's ``choice`` names), by its rule (bounded by its factor; both stated in the edition). Refused,
        saying why and what to do, when no rate can be made or when the chosen rows hold two rows of one
        organisation, unless the operator states why (``single_organisation``, kept in the edition)."""
        choice = choice or FreezeChoice()
        bundle_ids, note, factor, rule = choice.bundle_ids, choice.note, choice.factor, choice.rule
        single_organisation = choice.single_organisation
        keyed = _rows.identified(stored)
        if bundle_ids:
            by_bundle = {r["bundle_id"]: r for r in keyed}
            missing = [b for b in bundle_ids if b not in by_bundle]
            if missing:
                raise ValidationError(f"--bundle {missing[0]}: not a row of the '{task}' board (a replaced or unknown"
                                      " bundle; 'dynadesk-server reference list' and the board show the rows)")
            picked = [by_bundle[b] for b in dict.fromkeys(bundle_ids)]
            chosen = [(r, "chosen by the operator at freeze") for r in picked]
        else:
            picked = [r for r in keyed if r["bundle_id"] in pinned]
            chosen = reference_candidates(keyed, pinned, sandboxed, organisation, not single_organisation)
        dupes = same_organisation(picked, organisation)
        if dupes and not single_organisation:
            raise ValidationError(
                f"rates of '{task}' not frozen: {distinct_rule(dupes)}. Unpin all but one row of each such organisation"
                " ('dynadesk-server reference unpin BUNDLE_ID'), or choose one row per organisation with --bundle; a"
                " board whose rows are all one lab's can freeze them with --single-organisation 'why' (stated in the"
                " signed edition and on every board scored with it)")
        if not factor > 1:
            raise ValidationError(f"--factor {factor:g}: the bound must be a factor above 1")
        rates = derive(chosen, factor, rule)
        if all(r.rate is None for k, r in rates.items() if k != PERF):
            raise ValidationError(f"no exchange rate of '{task}' can be made from {len(chosen)} reference row(s): "
                                  + "; ".join(f"{k}: {r.why}" for k, r in rates.items() if k != PERF)
                                  + ". " + what_to_do(task)[0].upper() + what_to_do(task)[1:])
        reference = _described(chosen, organisation)
        if single_organisation:
            for r in reference:
                r["operator_word"] = single_organisation
        last = self.current(task)
        payload = {"task": task, "edition": (last.number + 1) if last else 1, "previous": last.id if last else None,
                   "created_at": utc_now_text(now), "server": {"key_fingerprint": _keys.fingerprint(
                       _keys.public_raw(key))}, "perf_metric": PERF,
                   "amrs": {k: r.rate for k, r in rates.items()}, "rates": {k: r.to_dict() for k, r in rates.items()},
                   "reference": reference, "estimator": ESTIMATOR if rule == ROBUST else DYNABOARD_ESTIMATOR,
                   "factor": factor if rule == ROBUST else None,
                   "min_rows": MIN_ROWS, "note": note}
        edition = sign_edition(payload, key)
        self.add(edition)
        self._cache.forget(task)
        return edition


def _described(chosen: list[tuple[dict[str, Any], str]], organisation: Callable[[str], str]
               ) -> list[dict[str, Any]]:
    return [{"row_id": r["model"], "bundle_id": r["bundle_id"], "submitter": r["submitter"],
             "organisation": organisation(r["key_fingerprint"]), "why": why} for r, why in chosen]


def dynaboard_source() -> RateSource:
    return RateSource(DYNABOARD, None, notes=["exchange rates by Dynaboard's rule (rates=dynaboard): estimated from the"
                                              " rows in view, so they change with the rows shown; the task's own"
                                              " rates are the default view"])


def parse_rates_view(params: Mapping[str, str]) -> str:
    raw = params.get(RATES_PARAM) or EDITION
    if raw not in RATES_VIEWS:
        raise ValidationError(f"query parameter '{RATES_PARAM}' must be one of {', '.join(RATES_VIEWS)}, got"
                              f" {raw!r:.40}")
    return raw
