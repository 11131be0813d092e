"""``audit_bundle``: parse and verify a bundle, check what it names, optionally re-run it, compare.

Parsing comes first (a malformed bundle raises :class:`~dynadesk.errors.BundleFormatError`
and is never audited); every later finding is a :class:`~dynadesk.audit.report.Check`
in the returned :class:`~dynadesk.audit.report.AuditReport`.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from dynadesk.audit import inputs
from dynadesk.audit.compare import compare_results, hardware_difference, measured_comparability, results_from_record
from dynadesk.audit.described import rerun_checks, runner_words
from dynadesk.audit.intervals import compare_intervals
from dynadesk.audit.report import (
    DETERMINISTIC,
    DIFFERS,
    ENVIRONMENT,
    IDENTICAL,
    INTEGRITY,
    NOT_COMPARABLE,
    AuditReport,
    Check,
)
from dynadesk.errors import AuditError, BundleError
from dynadesk.sync.format.payload import Payload

if TYPE_CHECKING:
    from dynadesk.cancel import CancelToken
    from dynadesk.orchestration.daemon import DockerClient
    from dynadesk.progress import ProgressFn
    from dynadesk.store import Store
    from dynadesk.workspace import Workspace

def signature_check(bundle: Any) -> Check:
    from dynadesk.sync.format.envelope import verify_bundle

    try:
        verify_bundle(bundle)
    except BundleError as exc:
        return Check("signature", INTEGRITY, DIFFERS, bundle.key_fingerprint, None, f"{type(exc).__name__}: {exc}")
    return Check("signature", INTEGRITY, IDENTICAL, bundle.key_fingerprint, bundle.key_fingerprint,
                 "Ed25519 over the RFC 8785 payload verifies with the carried key (this says who signed, "
                 "not that the signer is trusted: use --server or compare the fingerprint)")


def runner_check(payload: Payload) -> Check:
    """The bundle's runner against this installation's runner registry: the format (a leaf) checks only the name's
    form, so here a sandbox claim the named runner cannot make fails, and a runner not registered here is said."""
    from dynadesk.orchestration.runner_registry import RUNNERS

    kind, claimed = payload.runner.kind, payload.runner.sandboxed
    spec = RUNNERS.get(kind)
    if spec is None:
        return Check("runner", ENVIRONMENT, NOT_COMPARABLE, claimed, None,
                     f"runner '{kind}' is not registered here (known: {', '.join(RUNNERS)}): its sandbox claim "
                     "cannot be checked and a re-run needs that runner")
    if spec.sandboxed != claimed:
        return Check("runner", INTEGRITY, DIFFERS, claimed, spec.sandboxed,
                     f"the bundle says its '{kind}' run was {'sandboxed' if claimed else 'not sandboxed'}, but the "
                     f"{kind} runner is {'sandboxed' if spec.sandboxed else 'not sandboxed'}")
    return Check("runner", ENVIRONMENT, IDENTICAL, claimed, spec.sandboxed,
                 f"the bundle's run: {runner_words(kind, claimed)}, a claim the {kind} runner can make "
                 "(how the audit's own run was made: the rerun.* rows)")


def host_recomputation(record: Any) -> Check | None:
    """The stored run's deterministic figures against the host's recomputation from its run folder
    (None for a folder without a spec, made before the run-folder layout: nothing to recompute from)."""
    from dynadesk.orchestration.recompute import ResultMismatch, has_spec, stored_rows_checked

    if not has_spec(record.run_dir):
        return None
    stored = [{"dataset": m.dataset, "metric": m.metric, "value": m.value, "unit": m.unit,
               "deterministic": m.deterministic} for m in record.metrics]
    try:
        stored_rows_checked(record.run_dir, stored)
    except ResultMismatch as exc:
        return Check("host_recomputation", DETERMINISTIC, DIFFERS, None, None, str(exc))
    return Check("host_recomputation", DETERMINISTIC, IDENTICAL, None, None,
                 f"run {record.id}'s stored figures are what its predictions and the host's gold labels give")


@dataclass(frozen=True)
class AuditOptions:
    """What an audit checks beyond the bundle itself, as the CLI's and the GUI's options give it: the model folder
    to hash (default: the registered one), whether to evaluate again (``rerun``, on ``runner``) or compare with
    stored run ``against``, and the ``server`` whose transparency log must hold the bundle (``server_key``: its
    pinned key). One value, so :func:`audit_bundle` takes the bytes, these choices and the live handles apart."""

    model_path: str | Path | None = None
    rerun: bool = False
    runner: str | None = None
    against: int | None = None
    server: str | None = None
    server_key: bytes | None = None


def audit_bundle(store: Store, workspace: Workspace, raw: bytes, options: AuditOptions | None = None, *,
                 where: str = "bundle", client: DockerClient | None = None, progress: ProgressFn | None = None,
                 cancel: CancelToken | None = None) -> AuditReport:
    """Audit one bundle's bytes (``where``: its name in messages); ``options.rerun`` evaluates again,
    ``options.against`` compares with a stored run instead (only the static checks when ``options`` is not given).

    cancelling ``cancel`` stops a re-run; the report is then ``incomplete``."""
    o = options or AuditOptions()
    model_path, rerun, runner, against, server, server_key = (o.model_path, o.rerun, o.runner, o.against, o.server,
                                                              o.server_key)
    from dynadesk.sync.format.envelope import parse_bundle

    bundle = parse_bundle(raw, where)
    p = bundle.payload
    report = AuditReport(bundle.id, p.task, p.model.name)
    report.add(Check("structure", INTEGRITY, IDENTICAL, None, None,
                     f"well-formed, RFC 8785 canonical, version {bundle.version}"),
               signature_check(bundle))
    declared = p.tolerances is not None
    report.notes.append("measured-metric tolerances: " + ("declared by the bundle (signed)" if declared else
                                                          "the bundle declares none; audit defaults apply"))
    if server:
        from dynadesk.audit.transparency import check_transparency

        report.add(*check_transparency(bundle, server, server_key))
    model_check, loc = inputs.check_model(store, p, model_path)
    if p.worker:
        report.notes.append(f"evaluated by queue worker {p.worker.name} (worker key {p.worker.key_fingerprint})")
    report.add(runner_check(p), model_check, *inputs.check_datasets(store, p), inputs.check_evaluator_code(p))
    report.add(inputs.check_image(p, client))
    record = None
    if against is not None:
        record = store.evaluations.get(against)
        if record.status != "succeeded":
            raise AuditError(f"run {against} is '{record.status}'; only a succeeded run can be compared")
        recomputed = host_recomputation(record)
        if recomputed is not None:
            report.add(recomputed)
    elif rerun:
        from dynadesk.audit.rerun import rerun as do_rerun

        try:
            record = do_rerun(store, workspace, p, loc, runner, client, progress, cancel)
        except AuditError as exc:
            report.add(Check("rerun", DETERMINISTIC, NOT_COMPARABLE, None, None, str(exc)))
            report.incomplete = True
    if record is not None:
        report.rerun_id = record.id
        report.notes.append(f"compared with run {record.id} ({record.runner}"
                            f"{', sandboxed' if record.sandboxed else ', not sandboxed'})")
        results = results_from_record(record)
        report.not_comparable = measured_comparability(p, results)
        if report.not_comparable and not hardware_difference(dict(p.environment), results.environment):
            report.not_comparable_what = "throughput and latency"  # memory does not depend on CPU load
        report.add(*rerun_checks(p, record, rerun and against is None))  # how the compared run was made
        report.add(*compare_results(p, results))
        if rerun and against is None:
            from dynadesk.audit.confirm import confirm_timed

            confirm_timed(store, workspace, p, report, record, client=client, progress=progress, cancel=cancel)
        report.add(*compare_intervals(p, record))
    elif not rerun:
        report.notes.append("predictions and metrics were not re-computed (use --rerun)")
    return report
