"""Confirm a timed dispute before it is signed: the auditor's re-run takes its timed windows once more.

A measured "differs" is a public accusation ("measured claims not reproduced"), and one re-measurement can be
slowed by what the noise check cannot see (a busy hyperthread sibling, a frequency drop). So when timed claims
lie outside tolerance of the re-run, the audit re-takes that run's timed windows
(:func:`dynadesk.orchestration.remeasure.remeasure`: same model digest, data bytes, runner and image; the model
loads and only the windows run again, so it costs seconds) and a claim stays disputed only when it lies outside
tolerance of **both** of the auditor's measurements. A forger gains at most the auditor's own run-to-run spread,
which the tolerance already spans; a confirmation that was itself noisy, or could not be made, clears nothing.
Memory is not timed (the re-measurement keeps the re-run's figure), so a memory dispute is never re-judged here.
"""

from __future__ import annotations

from dataclasses import replace
from typing import TYPE_CHECKING

from dynadesk.audit.compare import TIMED, compare_metric, measured_comparability, metric_field, results_from_record
from dynadesk.audit.report import DIFFERS, MEASURED, AuditReport, Check
from dynadesk.errors import DynaDeskError
from dynadesk.sync.format.payload import Payload

if TYPE_CHECKING:
    from dynadesk.cancel import CancelToken
    from dynadesk.orchestration.daemon import DockerClient
    from dynadesk.progress import ProgressFn
    from dynadesk.store import Store
    from dynadesk.store.evaluations import EvaluationRecord
    from dynadesk.workspace import Workspace


def timed_disputes(payload: Payload, checks: list[Check]) -> dict[str, Check]:
    """Field -> check, for the timed claims outside tolerance of the re-run (what a confirmation may clear)."""
    timed = {metric_field(m.dataset, m.metric) for m in payload.metrics if m.metric in TIMED}
    return {c.field: c for c in checks if c.kind == MEASURED and c.verdict == DIFFERS and c.field in timed}


def confirm_timed(store: Store, workspace: Workspace, payload: Payload, report: AuditReport,
                  record: EvaluationRecord, *, client: DockerClient | None = None, progress: ProgressFn | None = None,
                  cancel: CancelToken | None = None) -> None:
    """Re-judge ``report``'s timed disputes against a second measurement of re-run ``record`` (in place)."""
    from dynadesk.orchestration.remeasure import remeasure

    disputed = timed_disputes(payload, report.checks)
    if not disputed:
        return
    try:
        second = remeasure(store, workspace, record.id, client=client, progress=progress, cancel=cancel).new
    except DynaDeskError as exc:
        report.notes.append(f"timed claims outside tolerance were not confirmed (a second measurement of run "
                            f"{record.id} could not be made: {exc}); they stay disputed")
        return
    if second.status != "succeeded":
        report.notes.append(f"the second measurement (run {second.id}) ended '{second.status}': the timed claims "
                            "outside tolerance stay disputed")
        return
    results = results_from_record(second)
    noisy = measured_comparability(payload, results)
    if noisy:
        report.notes.append(f"the second measurement (run {second.id}) cannot confirm or clear: {noisy}")
        return
    metrics = {metric_field(m.dataset, m.metric): m for m in payload.metrics}
    cleared = 0
    for i, check in enumerate(report.checks):
        if check.field not in disputed:
            continue
        m = metrics[check.field]
        again = compare_metric(payload, m, results.metrics.get((m.dataset, m.metric)), "", results.source)
        if again.verdict == DIFFERS:
            report.checks[i] = replace(check, note=f"{check.note}; confirmed by run {second.id}'s second "
                                                   f"measurement ({again.actual:.6g})")
        else:
            cleared += 1
            report.checks[i] = replace(again, note=f"{again.note}; outside tolerance of run {record.id}'s "
                                                   f"measurement ({check.actual:.6g}), within run {second.id}'s: a "
                                                   "claim is disputed only outside both of the auditor's")
    report.notes.append(f"timed claims outside tolerance of run {record.id} were measured again (run {second.id}): "
                        f"{len(disputed) - cleared} confirmed, {cleared} within tolerance of the second measurement")
