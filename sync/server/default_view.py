"""Which hardware class a board opens on, whether a class is confirmed or only declared, and which rows the
default view shows (issue 32 item 2; issue 44 item 5).

A row's hardware class is read from its own signed ``environment``: its submitter declares it. So the class a
board shows by default must follow what an auditor re-ran, then what many organisations ran in a sandbox, never
the number of rows one key can upload nor the spelling of a class name. The default is, in order:

1. the class the operator set for the task (``dynadesk-server board default-class``), when it has rows;
2. else, comparing the classes count by count (:data:`LEVELS`), the one with the most distinct organisations
   whose *sandboxed* rows an auditor reproduced on that class (the reproduced bundle's own signed environment is
   the class: an attestation binds the exact claim), then the most organisations with sandboxed rows, then the
   most organisations with rows, then the most recent reproduction (the server's receipt time), then the most
   sandboxed rows, then the most rows. A class whose rows are all unsandboxed therefore never wins over a class
   with sandboxed rows. Classes that tie on every count are not told apart by their names: the default view is
   then every class together (its measured metrics marked not comparable) until the operator sets one.

An organisation is a registered organisation (all its keys count once), or a key without one. A class with a
confirmed row (reproduced on its own class by an auditor, none disputing) is "confirmed"; else "declared".
The answer says which count decided (:attr:`DefaultClass.reason`).

Rows: once the view has a reproduced row, the default filter is ``audit=reproduced`` (``audit=all`` shows every
row); :func:`default_audit` says which and why. Reproduction is :func:`dynadesk.sync.server.reference.reproduced`,
the one predicate.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from typing import Any

from dynadesk.sync.format.timestamps import epoch_us, utc_now_text
from dynadesk.sync.rules.board_facts import ALL_CLASSES, RowFacts
from dynadesk.sync.server.reference import reproduced

CONFIRMED = "confirmed"
DECLARED = "declared"
OPERATOR = "operator"
AUTOMATIC = "automatic"
# (ClassStanding field, what it counts), compared in this order; the first that differs decides
LEVELS = (("reproduced_sandboxed", "organisations whose sandboxed rows an auditor reproduced on this class"),
          ("sandboxed_submitters", "organisations with sandboxed rows"),
          ("submitters", "organisations with rows"),
          ("latest_reproduction", "recent reproduction (server receipt time)"),
          ("sandboxed_models", "sandboxed rows"),
          ("models", "rows"))
RULE = ("the class with the most organisations whose sandboxed rows an auditor reproduced on that class, then the"
        " most organisations with sandboxed rows, then with rows, then the most recent reproduction, then the most"
        " sandboxed rows, then rows; classes tied on every count are shown together; never the class name")
TIED = ("the hardware classes tie on every count ({counts}), so none is preferred: every class is shown together"
        " (the operator can set a default: dynadesk-server board default-class)")
AUDIT_REPRODUCED = ("reproduced rows only: the default once this view has a row an auditor reproduced (none"
                    " disputing); audit=all shows every row")
AUDIT_ALL = "every row: no row of this view has been reproduced by an auditor yet"
AUDIT_ASKED = "as asked (audit={audit})"


def row_confirmed(row: dict[str, Any], hardware_class: str) -> bool:
    """Whether an auditor reproduced the row on the row's own class (and no auditor disputed it)."""
    return reproduced(row) and any(a.get("verdict") == "reproduced" and a.get("hardware_class") == hardware_class
                                   for a in row.get("attestations") or [])


def _received(row: dict[str, Any]) -> int:
    """The server's receipt time (µs) of the row's latest reproducing attestation; 0 when none."""
    times = [epoch_us(str(a["received_at"])) for a in row.get("attestations") or []
             if a.get("verdict") == "reproduced" and a.get("received_at")]
    return max(times, default=0)


@dataclass(frozen=True)
class ClassStanding:
    """One hardware class of a board: its rows and the organisations behind them, by kind (:data:`LEVELS`)."""

    hardware_class: str
    models: int
    submitters: int
    confirmed_submitters: int
    reproduced_sandboxed: int = 0
    sandboxed_submitters: int = 0
    sandboxed_models: int = 0
    latest_reproduction: int = 0   # µs since 1970 of the latest reproduction on this class; 0: none

    @property
    def status(self) -> str:
        return CONFIRMED if self.confirmed_submitters else DECLARED

    def key(self) -> tuple[int, ...]:
        return tuple(int(getattr(self, field)) for field, _ in LEVELS)


def standings(rows: list[dict[str, Any]], facts: dict[str, RowFacts],
              submitter_of: Callable[[str], str]) -> dict[str, ClassStanding]:
    """Every class of ``rows``; ``submitter_of(key fingerprint)`` names who a key acts for (its organisation)."""
    models: dict[str, int] = {}
    sandboxed_models: dict[str, int] = {}
    sets: dict[str, dict[str, set[str]]] = {}
    latest: dict[str, int] = {}
    for r in rows:
        f = facts[r["bundle_id"]]
        cls = f.hardware_class
        models[cls] = models.get(cls, 0) + 1
        who = submitter_of(r["key_fingerprint"])
        mine = sets.setdefault(cls, {"all": set(), "confirmed": set(), "sandboxed": set(), "both": set()})
        mine["all"].add(who)
        if f.sandboxed:
            sandboxed_models[cls] = sandboxed_models.get(cls, 0) + 1
            mine["sandboxed"].add(who)
        if row_confirmed(r, cls):
            mine["confirmed"].add(who)
            latest[cls] = max(latest.get(cls, 0), _received(r))
            if f.sandboxed:
                mine["both"].add(who)
    return {c: ClassStanding(c, models[c], len(sets[c]["all"]), len(sets[c]["confirmed"]), len(sets[c]["both"]),
                             len(sets[c]["sandboxed"]), sandboxed_models.get(c, 0), latest.get(c, 0))
            for c in sorted(models)}


@dataclass(frozen=True)
class DefaultClass:
    hardware_class: str
    source: str           # "operator" or "automatic"
    note: str | None = None
    reason: str = ""      # why this class: the count that decided, with the figures

    def to_dict(self) -> dict[str, Any]:
        return {"class": self.hardware_class, "source": self.source,
                "rule": "set by the operator" if self.source == OPERATOR else RULE, "note": self.note,
                "reason": self.reason}


def _figure(field: str, value: int) -> str:
    if field == "latest_reproduction":
        return utc_now_text(datetime(1970, 1, 1, tzinfo=UTC) + timedelta(microseconds=value)) if value else "none"
    return str(value)


def choose(classes: dict[str, ClassStanding], operator_class: str | None) -> DefaultClass:
    """The default class of a board with ``classes`` (see the module docstring), with the reason."""
    note = None
    if operator_class is not None:
        if operator_class in classes:
            return DefaultClass(operator_class, OPERATOR, None, "set by the operator for this task")
        note = (f"the operator's default class {operator_class!r} has no rows on this board yet; the default is"
                " chosen automatically until it has")
    if not classes:
        return DefaultClass(ALL_CLASSES, AUTOMATIC, note, "no rows yet")
    if len(classes) == 1:
        return DefaultClass(next(iter(classes)), AUTOMATIC, note, "the only hardware class with rows")
    ranked = sorted(classes.values(), key=lambda s: s.key(), reverse=True)
    best, second = ranked[0], ranked[1]
    for i, (field, what) in enumerate(LEVELS):
        a, b = getattr(best, field), getattr(second, field)
        if a != b:
            same = "; ".join(f"{LEVELS[j][1]}: {_figure(LEVELS[j][0], getattr(best, LEVELS[j][0]))}"
                             for j in range(i))
            return DefaultClass(best.hardware_class, AUTOMATIC, note,
                                f"most {what}: {_figure(field, a)} (next class: {_figure(field, b)})"
                                + (f"; tied before that on {same}" if same else ""))
    counts = "; ".join(f"{what}: {_figure(field, getattr(best, field))}" for field, what in LEVELS)
    return DefaultClass(ALL_CLASSES, AUTOMATIC, note, TIED.format(counts=counts))


def default_audit(asked: str | None, rows: list[dict[str, Any]]) -> tuple[str, str]:
    """``(audit filter, why)`` of a view whose rows (after the class, runner and sandbox filters) are ``rows``:
    ``asked`` when the query names one, else ``reproduced`` once a row is reproduced, else ``all``."""
    if asked:
        return asked, AUDIT_ASKED.format(audit=asked)
    if any(reproduced(r) for r in rows):
        return "reproduced", AUDIT_REPRODUCED
    return "all", AUDIT_ALL
