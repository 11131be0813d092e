"""Verdicts and the audit report: one :class:`Check` per field, in the order they were made."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

IDENTICAL = "identical"
WITHIN = "within tolerance"
DIFFERS = "differs"
NOT_COMPARABLE = "not comparable"
VERDICTS = (IDENTICAL, WITHIN, DIFFERS, NOT_COMPARABLE)

# What a field is; a "differs" fails the audit for every kind except measured and environment.
INTEGRITY = "integrity"  # signature, structure, transparency log
INPUT = "input"  # model folder, datasets: what was evaluated
ENVIRONMENT = "environment"  # evaluator image and code, hardware: where it was evaluated
DETERMINISTIC = "deterministic"  # predictions, Merkle root, performance, robustness, fairness
MEASURED = "measured"  # throughput, latency, memory
FAILING_KINDS = (INTEGRITY, INPUT, DETERMINISTIC)


@dataclass
class Check:
    """One field's verdict. ``expected`` is the bundle's value, ``actual`` what the audit found."""

    field: str
    kind: str
    verdict: str
    expected: Any = None
    actual: Any = None
    note: str = ""
    tolerance: float | None = None  # relative, for measured fields

    def __post_init__(self) -> None:
        if self.verdict not in VERDICTS:
            raise ValueError(f"unknown verdict {self.verdict!r}")

    @property
    def fails(self) -> bool:
        return self.verdict == DIFFERS and self.kind in FAILING_KINDS

    def to_dict(self) -> dict[str, Any]:
        return {**self.__dict__, "fails": self.fails}


@dataclass
class AuditReport:
    bundle_id: str
    task: str
    model: str
    checks: list[Check] = field(default_factory=list)
    rerun_id: int | None = None
    notes: list[str] = field(default_factory=list)
    incomplete: bool = False  # a re-run was asked for but could not be made

    def add(self, *checks: Check) -> None:
        self.checks.extend(checks)

    def get(self, field_name: str) -> Check:
        for c in self.checks:
            if c.field == field_name:
                return c
        raise KeyError(f"the audit made no check named {field_name!r}")

    @property
    def failures(self) -> list[Check]:
        return [c for c in self.checks if c.fails]

    @property
    def ok(self) -> bool:
        return not self.failures

    def counts(self) -> dict[str, int]:
        return {v: sum(1 for c in self.checks if c.verdict == v) for v in VERDICTS}

    def to_dict(self) -> dict[str, Any]:
        return {"bundle_id": self.bundle_id, "task": self.task, "model": self.model, "ok": self.ok,
                "incomplete": self.incomplete, "rerun_id": self.rerun_id, "counts": self.counts(),
                "notes": list(self.notes),
                "failures": [c.field for c in self.failures], "checks": [c.to_dict() for c in self.checks]}
