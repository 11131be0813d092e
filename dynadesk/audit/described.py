"""The rows that say which re-run an audit actually made: its runner, its sandbox and its hardware class, beside
the bundle's.

Why: the ``runner`` row checks the bundle's own claim against the runner registry, and the environment rows compare
a few fields; neither said how the audit's re-run (or the run named with ``--against``) was made, so a local re-run
of a Docker bundle read "identical ... docker (sandboxed)" and a re-run on another hardware class read "same class"
while the headline named another class. These rows describe both runs, and any difference is named in the
headline (:meth:`~dynadesk.audit.report.AuditReport.verdict_lines`). They are environment rows: they never fail
the audit nor enter an attestation's fields (a re-run elsewhere is allowed; it must only be said).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from dynadesk.audit.report import DETERMINISTIC, DIFFERS, ENVIRONMENT, IDENTICAL, NOT_COMPARABLE, Check
from dynadesk.sync.format.payload import Payload

if TYPE_CHECKING:
    from dynadesk.store.evaluations import EvaluationRecord

__all__ = ["backend_check", "rerun_checks", "runner_words"]


def runner_words(kind: str, sandboxed: bool) -> str:
    """``docker (sandboxed)`` / ``local (not sandboxed)``: a runner as every report row writes it."""
    return f"{kind} ({'sandboxed' if sandboxed else 'not sandboxed'})"


def rerun_checks(payload: Payload, record: EvaluationRecord, rerun: bool) -> list[Check]:
    """``rerun.runner``, ``rerun.sandboxed`` and ``environment.hardware_class``: the bundle's run against the run the
    audit compared with (its own re-run, or the run named with ``--against``)."""
    from dynadesk.evaluator.environment import hardware_class_label, hardware_class_of

    what = f"the audit's re-run (run {record.id})" if rerun else f"the compared run {record.id}"
    kind, sandboxed = payload.runner.kind, payload.runner.sandboxed
    bundle_words, run_words = runner_words(kind, sandboxed), runner_words(record.runner, bool(record.sandboxed))
    same_runner = kind == record.runner
    checks = [
        Check("rerun.runner", ENVIRONMENT, IDENTICAL if same_runner else DIFFERS, kind, record.runner,
              f"{what} ran with the {record.runner} runner, as the bundle's run" if same_runner else
              f"{what} ran with the {record.runner} runner; the bundle's run with {kind}"),
        Check("rerun.sandboxed", ENVIRONMENT, IDENTICAL if sandboxed == bool(record.sandboxed) else DIFFERS,
              sandboxed, bool(record.sandboxed), f"bundle: {bundle_words}; {what}: {run_words}"),
    ]
    bundle_env, run_env = dict(payload.environment), record.environment or {}
    checks.append(backend_check(bundle_env, run_env, "the bundle's run", what))
    if not bundle_env or not run_env:
        checks.append(Check("environment.hardware_class", ENVIRONMENT, NOT_COMPARABLE, None, None,
                            f"{'the bundle' if not bundle_env else what} records no environment"))
        return checks
    a, b = hardware_class_of(bundle_env), hardware_class_of(run_env)
    label_a, label_b = hardware_class_label(bundle_env), hardware_class_label(run_env)
    checks.append(Check("environment.hardware_class", ENVIRONMENT, IDENTICAL if a == b else DIFFERS, a, b,
                        f"same class: {label_a}" if a == b else f"bundle: {label_a}; {what}: {label_b}"))
    return checks


def backend_check(expected_env: dict[str, Any], actual_env: dict[str, Any], expected_what: str,
                  actual_what: str, field: str = "rerun.backend") -> Check:
    """``rerun.backend``: the backend that made the expected side's predictions (the bundle's run) against the
    other's (absent: torch). A deterministic row, failing when they differ: onnxruntime's probabilities differ from
    torch's in the last digits, so two digests made by two backends are never "identical" evidence of one another
    (even when the bytes happen to agree); an audit re-run replays the signed backend, and a run compared with
    ``--against`` or ``eval --compare`` must have used the same one."""
    from dynadesk.evaluator.environment import backend_name

    a, b = backend_name(expected_env), backend_name(actual_env)
    if a == b:
        return Check(field, DETERMINISTIC, IDENTICAL, a, b, f"{actual_what} ran on {b}, as {expected_what}")
    return Check(field, DETERMINISTIC, DIFFERS, a, b,
                 f"the backend differs: {expected_what} ran on {a}, {actual_what} on {b}; predictions made by "
                 f"different backends are not compared (run it again with --backend {a})")
