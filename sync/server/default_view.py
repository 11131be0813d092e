"""Which hardware class a board opens on, and whether a class is confirmed or only declared (issue 32, item 2).

A row's hardware class is read from its own signed ``environment``: its submitter declares it. So
the class a board shows by default must not follow the number of rows (five bundles naming an
invented machine would take over the view). The default is, in order:

1. the class the operator set for the task (``dynadesk-server board default-class``), when it has rows;
2. else the class with the most distinct submitters whose rows an auditor reproduced *on that class*
   (a reproduced attestation whose own ``hardware_class`` is the row's), then the most distinct
   submitters with rows in it, then the class text in code-point order (the documented tie-break);
   a submitter is a registered organisation (all its keys count once), or a key without one.

Row counts never decide. A class with at least one such confirmed row is marked "confirmed"; a class
whose rows only their submitters vouch for is marked "declared" (docs/board.md).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from dynadesk.sync.board_facts import ALL_CLASSES, RowFacts
from dynadesk.sync.server.reference import reproduced

CONFIRMED = "confirmed"
DECLARED = "declared"
OPERATOR = "operator"
AUTOMATIC = "automatic"
RULE = ("the class with the most distinct submitters whose rows an auditor reproduced on that class, then the most"
        " distinct submitters, then the class name; never the number of rows")


def row_confirmed(row: dict[str, Any], hardware_class: str) -> bool:
    """Whether an auditor reproduced the row on the row's own class (and no auditor disputed it)."""
    return reproduced(row) and any(a.get("verdict") == "reproduced" and a.get("hardware_class") == hardware_class
                                   for a in row.get("attestations") or [])


@dataclass(frozen=True)
class ClassStanding:
    """One hardware class of a board: its rows, distinct submitters, and submitters with confirmed rows."""

    hardware_class: str
    models: int
    submitters: int
    confirmed_submitters: int

    @property
    def status(self) -> str:
        return CONFIRMED if self.confirmed_submitters else DECLARED


def standings(rows: list[dict[str, Any]], facts: dict[str, RowFacts],
              submitter_of: Callable[[str], str]) -> dict[str, ClassStanding]:
    """Every class of ``rows``; ``submitter_of(key fingerprint)`` names who a key acts for (its organisation)."""
    models: dict[str, int] = {}
    who: dict[str, set[str]] = {}
    confirmed: dict[str, set[str]] = {}
    for r in rows:
        cls = facts[r["bundle_id"]].hardware_class
        models[cls] = models.get(cls, 0) + 1
        submitter = submitter_of(r["key_fingerprint"])
        who.setdefault(cls, set()).add(submitter)
        if row_confirmed(r, cls):
            confirmed.setdefault(cls, set()).add(submitter)
    return {c: ClassStanding(c, models[c], len(who[c]), len(confirmed.get(c, ()))) for c in sorted(models)}


@dataclass(frozen=True)
class DefaultClass:
    hardware_class: str
    source: str           # "operator" or "automatic"
    note: str | None = None

    def to_dict(self) -> dict[str, Any]:
        return {"class": self.hardware_class, "source": self.source,
                "rule": "set by the operator" if self.source == OPERATOR else RULE, "note": self.note}


def choose(classes: dict[str, ClassStanding], operator_class: str | None) -> DefaultClass:
    """The default class of a board with ``classes`` (see the module docstring)."""
    note = None
    if operator_class is not None:
        if operator_class in classes:
            return DefaultClass(operator_class, OPERATOR)
        note = (f"the operator's default class {operator_class!r} has no rows on this board yet; the default is"
                " chosen automatically until it has")
    if not classes:
        return DefaultClass(ALL_CLASSES, AUTOMATIC, note)
    best = min(classes.values(), key=lambda s: (-s.confirmed_submitters, -s.submitters, s.hardware_class))
    return DefaultClass(best.hardware_class, AUTOMATIC, note)
