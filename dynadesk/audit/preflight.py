"""Determinism pre-flight: before a run is signed, do its deterministic fields reproduce?

The run's worker is started again on the run's own spec and data folder, with
the same runner and limits: twice at the recorded batch size and once at a
second one (profiling cut to the minimum; nothing is stored). Every
deterministic field must equal the recorded value in each repeat, and each
deterministic metric and every predicted label must also be the same at the
second batch size. The prediction bytes (probabilities) may legitimately change
in the last digits with the batch size; the bundle pins the batch size, so that is
reported, not refused. :func:`require_reproducible` raises
:class:`~dynadesk.errors.NotReproducibleError` naming each field that did not reproduce.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from dynadesk.orchestration.daemon import DockerClient
    from dynadesk.store import Store
    from dynadesk.workspace import Workspace

import json
import shutil
from collections.abc import Callable
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import TYPE_CHECKING, Any

from dynadesk.audit.compare import RunResults, metric_field, results_from_out, results_from_record
from dynadesk.audit.report import DETERMINISTIC, DIFFERS, ENVIRONMENT, IDENTICAL, Check
from dynadesk.errors import AuditError, NotReproducibleError

if TYPE_CHECKING:
    from dynadesk.orchestration.runner_base import Limits, Runner
    from dynadesk.store.evaluations import EvaluationRecord

REPEATS = 2
StepFn = Callable[[str], None]


@dataclass
class PreflightReport:
    evaluation_id: int
    batch_size: int
    second_batch_size: int
    runs: list[str] = field(default_factory=list)
    checks: list[Check] = field(default_factory=list)

    @property
    def refused(self) -> list[str]:
        return [c.field for c in self.checks if c.fails]

    def to_dict(self) -> dict[str, Any]:
        return {"evaluation_id": self.evaluation_id, "batch_size": self.batch_size,
                "second_batch_size": self.second_batch_size, "runs": self.runs, "refused": self.refused,
                "checks": [c.to_dict() for c in self.checks]}


def second_batch_size(batch_size: int) -> int:
    return batch_size // 2 if batch_size > 1 else 2


def _repeat(runner: Runner, record: EvaluationRecord, model_dir: Path, batch_size: int, work: Path, label: str,
            limits: Limits) -> RunResults:
    from dynadesk.evaluator.schema import METRICS_FILE, Spec, read_json
    from dynadesk.orchestration.folder import RunFolder
    from dynadesk.orchestration.model_view import write_model_view
    from dynadesk.orchestration.recompute import ResultMismatch, verified_rows

    source = RunFolder(Path(record.run_dir or ''))
    spec = json.loads(source.spec_file.read_text(encoding="utf-8"))
    # only determinism is checked here: the shortest timing the worker allows (one call per window, no retries)
    spec["settings"].update(batch_size=batch_size, latency_samples=1, warmup=0, min_seconds=0, trials=1,
                            batched_queries=1, noise_retries=0)
    repeat = RunFolder(work / label.replace(" ", "-"))
    repeat.spec_dir.mkdir(parents=True)
    repeat.out_dir.mkdir()
    repeat.spec_file.write_text(json.dumps(spec, indent=2, sort_keys=True), encoding="utf-8")
    for p in (work, repeat.root, repeat.spec_dir):
        p.chmod(0o755)
    repeat.spec_file.chmod(0o644)
    write_model_view(Spec.read(repeat.spec_file), source.data_dir, repeat.inputs_dir)  # never the gold itself
    outcome = runner.run(repeat.paths(model_dir), limits)
    if not outcome.ok:
        raise AuditError(f"pre-flight run '{label}' of evaluation {record.id} failed ({outcome.verdict}): "
                         f"{outcome.message}")
    strays = repeat.strays()
    if strays:  # the host never reads through what the worker's code may have planted
        raise AuditError(f"pre-flight run '{label}' of evaluation {record.id} left links or files the worker never "
                         f"writes in out/: {', '.join(strays)}")
    try:  # the deterministic figures are the host's, from the repeat's predictions and the run's own data
        rows = verified_rows(repeat.spec_file, source.data_dir, repeat.predictions_file,
                             read_json(repeat.out_dir / METRICS_FILE, "metrics file")["values"]).rows
    except ResultMismatch as exc:
        raise AuditError(f"pre-flight run '{label}' of evaluation {record.id}: {exc}") from exc
    return results_from_out(repeat.out_dir, label, rows)


def _fields(r: RunResults) -> dict[str, Any]:
    return {"predictions.digest": r.predictions_digest, "predictions.merkle_root": r.merkle_root,
            "predictions.count": r.count, "predictions.labels": r.labels_digest}


def preflight(store: Store, workspace: Workspace, evaluation_id: int, *, runner: Runner | None = None,
              client: DockerClient | None = None,
              repeats: int = REPEATS,
              step: StepFn | None = None, keep: bool = False) -> PreflightReport:
    """Repeat the run's deterministic part and compare field by field (see the module docstring)."""
    from dynadesk.evaluator.schema import METRIC_UNITS
    from dynadesk.models.registry import tree_digest
    from dynadesk.orchestration.evaluate import make_runner, request_of
    from dynadesk.orchestration.folder import RunFolder

    step = step or (lambda s: None)
    record = store.evaluations.get(evaluation_id)
    if record.status != "succeeded" or not record.run_dir or not RunFolder(Path(record.run_dir)).has_spec():
        raise AuditError(f"evaluation {evaluation_id} is '{record.status}' or has no run folder: nothing to repeat")
    model = store.models.get_by_id(record.model_id)
    if tree_digest(Path(model.path)) != model.digest:
        raise AuditError(f"model '{model.name}': files in {model.path} changed since the run; the pre-flight would "
                         "test another model")
    request = request_of(record)
    if record.image_id:  # repeat in the very image the run used
        request = replace(request, image=record.image_id)
    runner = runner or make_runner(request, client)
    limits = request.limits
    bs = request.settings.batch_size
    report = PreflightReport(evaluation_id, bs, second_batch_size(bs))
    base = results_from_record(record)
    work = Path(workspace.runs_dir) / f"preflight-{evaluation_id}"
    shutil.rmtree(work, ignore_errors=True)
    try:
        plan = [(f"repeat {i + 1}", bs) for i in range(repeats)] + [(f"batch size {report.second_batch_size}",
                                                                     report.second_batch_size)]
        results = []
        for label, size in plan:
            step(label)
            results.append(_repeat(runner, record, Path(model.path), size, work, label, limits))
            report.runs.append(label)
    finally:
        if not keep:
            shutil.rmtree(work, ignore_errors=True)
    repeats_r, other = results[:-1], results[-1]
    base_fields = _fields(base)
    for name, expected in base_fields.items():
        bad = [r.source for r in repeats_r if _fields(r)[name] != expected]
        if name == "predictions.labels":
            bad += [other.source] if _fields(other)[name] != expected else []
        report.checks.append(_verdict(name, expected, bad, DETERMINISTIC))
    for (ds, metric), expected in sorted(base.metrics.items()):
        if not METRIC_UNITS.get(metric, (None, False))[1]:
            continue
        bad = [r.source for r in results if float(r.metrics.get((ds, metric), float("nan"))).hex() != expected.hex()]
        report.checks.append(_verdict(metric_field(ds, metric), expected, bad, DETERMINISTIC))
    same_bytes = other.predictions_digest == base.predictions_digest
    report.checks.append(Check(f"predictions.digest@batch_size={report.second_batch_size}", ENVIRONMENT,
                               IDENTICAL if same_bytes else DIFFERS, base.predictions_digest,
                               other.predictions_digest, "" if same_bytes else
                               f"the prediction bytes depend on the batch size (the bundle pins batch size {bs})"))
    return report


def _verdict(name: str, expected: Any, bad: list[str], kind: str) -> Check:
    if not bad:
        return Check(name, kind, IDENTICAL, expected, expected, "reproduced in every pre-flight run")
    return Check(name, kind, DIFFERS, expected, None, "did not reproduce in " + ", ".join(bad))


def require_reproducible(report: PreflightReport) -> PreflightReport:
    """Raise :class:`NotReproducibleError` naming every field that did not reproduce."""
    bad = [c for c in report.checks if c.fails]
    if bad:
        lines = "\n".join(f"  - {c.field}: {c.note}" for c in bad)
        raise NotReproducibleError(f"evaluation {report.evaluation_id}: refusing to sign {len(bad)} field(s) that "
                                   f"did not reproduce:\n{lines}", [c.field for c in bad])
    return report
