"""Verdicts and the audit report: one :class:`Check` per field, in the order they were made."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

IDENTICAL = "identical"
WITHIN = "within tolerance"
DIFFERS = "differs"
NOT_COMPARABLE = "not comparable"
VERDICTS = (IDENTICAL, WITHIN, DIFFERS, NOT_COMPARABLE)

# What a field is; a "differs" fails the audit for integrity, input and deterministic fields, and a
# measured "differs" (same hardware class only) is "measured claims not reproduced", its own verdict.
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

    @property
    def unreproduced(self) -> bool:
        """A measured claim outside tolerance of the auditor's re-measurement on the same hardware class."""
        return self.verdict == DIFFERS and self.kind == MEASURED

    def to_dict(self) -> dict[str, Any]:
        return {**self.__dict__, "fails": self.fails, "unreproduced": self.unreproduced}


@dataclass
class AuditReport:
    bundle_id: str
    task: str
    model: str
    checks: list[Check] = field(default_factory=list)
    rerun_id: int | None = None
    notes: list[str] = field(default_factory=list)
    incomplete: bool = False  # a re-run was asked for but could not be made
    not_comparable: str = ""  # why measured fields were not judged (another hardware class, noisy re-measurement)
    not_comparable_what: str = "measured metrics"  # which: all of them, or only the timing ones (noise)

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
    def measured_failures(self) -> list[Check]:
        return [c for c in self.checks if c.unreproduced]

    @property
    def other_differences(self) -> list[Check]:
        """Fields that differ without failing the audit (the environment, the runner the re-run used): never
        silent, the headline names them."""
        return [c for c in self.checks if c.verdict == DIFFERS and not c.fails and not c.unreproduced]

    @property
    def ok(self) -> bool:
        return not self.failures and not self.measured_failures

    def verdict_lines(self) -> list[str]:
        """The verdict, most severe first; the first line also says when measured fields were not comparable."""
        lines = []
        if self.failures:
            lines.append("FAILED: " + ", ".join(c.field for c in self.failures))
        if self.measured_failures:
            lines.append("MEASURED CLAIMS NOT REPRODUCED: " + ", ".join(c.field for c in self.measured_failures)
                         + " (outside tolerance of the re-measurement, same hardware class)")
        if self.incomplete:
            lines.append("INCOMPLETE: the re-run could not be made")
        if not lines:
            lines.append("OK")
        others = self.other_differences
        if others:
            lines[0] += "; differs (not failing): " + ", ".join(
                f"{c.field}{f' ({c.note})' if c.note else ''}" for c in others)
        if self.not_comparable:
            lines[0] += f"; {self.not_comparable_what} not comparable: {self.not_comparable}"
        return lines

    def counts(self) -> dict[str, int]:
        return {v: sum(1 for c in self.checks if c.verdict == v) for v in VERDICTS}

    def to_dict(self) -> dict[str, Any]:
        return {"bundle_id": self.bundle_id, "task": self.task, "model": self.model, "ok": self.ok,
                "incomplete": self.incomplete, "rerun_id": self.rerun_id, "counts": self.counts(),
                "notes": list(self.notes),
                "failures": [c.field for c in self.failures],
                "measured_failures": [c.field for c in self.measured_failures],
                "other_differences": [c.field for c in self.other_differences],
                "not_comparable": self.not_comparable,
                "not_comparable_what": self.not_comparable_what if self.not_comparable else "",
                "verdict": "\n".join(self.verdict_lines()),
                "checks": [c.to_dict() for c in self.checks]}
