"""``dynadesk eval`` and ``dynadesk runs list|show``: thin layers over dynadesk.orchestration."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import click

from dynadesk import defaults
from dynadesk.cli.common import RegistryChoice, RegistryHelpOption, echo_json, echo_table, json_option, pass_app
from dynadesk.evaluator.schema import BACKENDS, DEFAULT_BACKEND
from dynadesk.orchestration.evaluate import failure_line
from dynadesk.orchestration.runner_registry import runner_help, runner_names
from dynadesk.progress import ProgressEvent
from dynadesk.store.evaluations import EvaluationRecord

GIB = 1 << 30


def interrupted_line(store: Any, run_id: int | None) -> str:
    """What Ctrl-C kept and the command that finishes it (one line)."""
    if run_id is None:
        return "Interrupted before the run started: nothing was kept; run the same command again."
    rec = store.evaluations.get(run_id)
    return (f"Interrupted: run {run_id} is kept as '{rec.status}' with the outputs already written in {rec.run_dir};"
            f" finish only what is missing with 'dynadesk eval --resume {run_id}'.")


class _Bar:
    """A tqdm bar on stderr fed by the worker's progress events."""

    def __init__(self, enabled: bool):
        self.enabled = enabled
        self.bar: Any = None
        self.run_id: int | None = None  # the run the events are about, named if Ctrl-C stops it

    def __call__(self, event: ProgressEvent) -> None:
        if event.run is not None:
            self.run_id = event.run
        if not self.enabled:
            return
        from tqdm import tqdm

        phase = event.phase
        if phase == "predict" and event.done is not None and event.total:
            if self.bar is None:
                self.bar = tqdm(total=event.total, unit="ex", desc="predict",
                                file=click.get_text_stream("stderr"), dynamic_ncols=True)  # type: ignore[operator]
            self.bar.set_postfix_str(event.dataset or "", refresh=False)
            self.bar.update(event.done - self.bar.n)
        elif phase == "cleaned":
            click.echo(event.message, err=True)
        elif phase in ("load", "metrics", "profile"):
            if self.bar is not None:
                self.bar.set_description(phase)
            else:
                click.echo(f"{phase} ...", err=True)

    def close(self) -> None:
        if self.bar is not None:
            self.bar.close()


def _summary_rows(record) -> list[list]:
    by = {(m.dataset, m.metric): m for m in record.metrics}
    datasets = sorted({m.dataset for m in record.metrics})
    rows = []
    for ds in datasets:
        name = ds or "(whole run)"
        for metric in sorted({m.metric for m in record.metrics if m.dataset == ds}):
            m = by[(ds, metric)]
            rows.append([name, metric, f"{m.value:.4g}", m.unit, "yes" if m.deterministic else "no"])
    return rows


def _served(app: Any, record: EvaluationRecord) -> bool:
    """Whether the run's model answers from an endpoint (dynadesk/models/served.py): shown "served, not sandboxed"."""
    from dynadesk.errors import NotFoundError
    from dynadesk.models.served import is_served

    try:
        return is_served(app.store.models.get(record.model_name).kind)
    except NotFoundError:
        return False


def _show(record: EvaluationRecord, as_json: bool, served: bool = False) -> None:
    if as_json:
        echo_json(record.to_dict())
        return
    click.echo(f"run {record.id}: {record.model_name} on {record.task} - {record.status}"
               f"{f' ({record.verdict})' if record.verdict and record.verdict != 'ok' else ''}")
    where = ("served, " if served else "") + ("sandboxed" if record.sandboxed else "NOT sandboxed")
    click.echo(f"runner {record.runner} ({where})"
               f"{f', image {record.image_id[:19]}' if record.image_id else ''}")
    if record.remeasure_of is not None:
        click.echo(f"re-measurement of run {record.remeasure_of}: its predictions reused, only the timed"
                   " windows taken again")
    if record.purpose != "evaluation":
        click.echo(f"purpose: {record.purpose} (never a board entry)")
    queued = record.queue
    if queued is not None and queued.worker:
        click.echo(f"queued job {queued.job}: ran on worker {queued.worker} ({queued.host}), "
                   f"attempt {queued.attempt}")
    if record.error:
        click.echo(f"error: {record.error}")
    if record.predictions_digest:
        from dynadesk.orchestration.folder import RunFolder

        click.echo(f"predictions: {RunFolder(Path(record.run_dir or '')).predictions_file} "
                   f"({record.predictions_digest[:19]})")
    if record.metrics:
        echo_table(["dataset", "metric", "value", "unit", "deterministic"], _summary_rows(record))
    for note in record.profile.get("notes", []):
        click.echo(f"note: {note}")
    from dynadesk.audit.hardware import measurement_lines, weighed_lines  # hardware class, noise, weighed trials

    for line in measurement_lines(record.environment or {}) + weighed_lines(record.profile or {}):
        click.echo(line)


@click.command("eval")
@click.argument("models", nargs=-1, metavar="[MODEL]...")
@click.option("--dataset", "datasets", multiple=True, help="Test set to run (repeatable; default: all the task's).")
@click.option("--runner", cls=RegistryHelpOption, type=RegistryChoice(runner_names), default="docker",
              show_default=True, help_from=runner_help)
@click.option("--gpus", default=None, help="'all' or device ids (e.g. '0,1') to give the run GPUs.")
@click.option("--batch-size", type=click.IntRange(1, 4096), default=defaults.BATCH_SIZE, show_default=True)
@click.option("--cpus", type=click.FloatRange(0.1, 512), default=None,
              help=f"CPU limit (default: this machine's cores, at most {defaults.MAX_DEFAULT_CPUS}).")
@click.option("--memory", "memory_gib", type=click.FloatRange(0.1, 4096), default=None,
              help=f"Memory limit in GiB (default {defaults.MEMORY_GIB:g}).")
@click.option("--timeout", "timeout_s", type=click.FloatRange(1, 7 * 86400), default=None,
              help=f"Wall-clock limit in seconds (default {defaults.TIMEOUT_S:g}).")
@click.option("--out-limit", "out_gib", type=click.FloatRange(0.001, 4096), default=None,
              help="Most GiB the run may write to its output folder (default 2); past it the verdict is 'disk'.")
@click.option("--image", default=None, help="Evaluator image (default: the one built for this evaluator version).")
@click.option("--null-threshold", "null_threshold", type=float, default=None,
              help="SQuAD 2.0: abstain when the null score beats the best span's by more than this (default 0).")
@click.option("--null-dev", "null_dev", default=None, metavar="DATASET",
              help="SQuAD 2.0: choose the null-score threshold on this dev set first (a calibration run).")
@click.option("--backend", type=click.Choice(BACKENDS), default=DEFAULT_BACKEND, show_default=True,
              help="What runs the forward passes: torch (eager), or onnxruntime on a graph the worker exports from "
                   "the loaded model (transformers classifiers and extractive QA; recorded, signed, and ranked in its "
                   "own class).")
@click.option("--resume", "resume_id", type=int, default=None, help="Finish an interrupted run (only what is missing).")
@click.option("--remeasure", "remeasure_id", type=int, default=None, metavar="RUN",
              help="Take RUN's timed windows again (same model, data, runner and image; its predictions reused) as a"
                   " new run, e.g. on a quiet machine after RUN was flagged noisy; exits 1 if a deterministic figure"
                   " differs.")
@click.option("--queue", "broker", default=None, metavar="URL",
              help="Queue one job per MODEL on this Redis broker (redis://:PASSWORD@HOST:6379/0) for 'dynadesk "
                   "worker' machines, instead of running here.")
@click.option("--wait/--no-wait", default=True, show_default=True,
              help="With --queue: wait for the jobs and store their runs (else print the job ids and return).")
@click.option("--trust-model-code", is_flag=True,
              help="Let a handler model's own code (handler.py) run outside the Docker sandbox, on this machine, "
                   "with your rights. Never stored with the run.")
@json_option
@pass_app
def eval_cmd(app: Any, models: tuple[str, ...], datasets: tuple[str, ...], runner: str, gpus: str | None,
             batch_size: int, cpus: float | None, memory_gib: float | None, timeout_s: float | None,
             out_gib: float | None, image: str | None, resume_id: int | None, remeasure_id: int | None,
             broker: str | None, wait: bool, as_json: bool, null_threshold: float | None = None,
             null_dev: str | None = None, trust_model_code: bool = False, backend: str = DEFAULT_BACKEND) -> None:
    """Evaluate MODEL on its task's test sets (plus their perturbation sets) and store the run.

    With --queue, each MODEL becomes one job that some 'dynadesk worker' takes; the results are stored
    here as ordinary runs (see docs/queue.md).
    """
    from dynadesk.orchestration.evaluate import evaluate, resume
    from dynadesk.orchestration.request import RunRequest, RunSettings, default_limits

    def request_for(model: str) -> RunRequest:
        limits = default_limits(cpus=cpus, memory_bytes=int(memory_gib * GIB) if memory_gib else None,
                                timeout_s=timeout_s, out_bytes=int(out_gib * GIB) if out_gib else None, gpus=gpus)
        return RunRequest(model=model, datasets=tuple(datasets), runner=runner, image=image, limits=limits,
                          settings=RunSettings(batch_size=batch_size, null_threshold=null_threshold,
                                               backend=backend))

    if null_dev is not None and (null_threshold is not None or broker is not None or resume_id is not None):
        raise click.UsageError("--null-dev chooses the threshold: give no --null-threshold, --queue or --resume")

    if broker is not None:
        from dynadesk.cli.queue_cmd import enqueue_and_wait

        if resume_id is not None:
            raise click.UsageError("--resume runs here; it cannot be combined with --queue")
        if not models:
            raise click.UsageError("missing MODEL")
        enqueue_and_wait(app, broker, [request_for(m) for m in models], wait, as_json)
        return
    if len(models) > 1:
        raise click.UsageError("several MODELs need --queue; evaluate one model at a time here")
    if remeasure_id is not None:
        if models or resume_id is not None or broker is not None:
            raise click.UsageError("--remeasure RUN replays RUN's own request: give no MODEL, --resume or --queue")
        _remeasure(app, remeasure_id, as_json)
        return
    model = models[0] if models else None
    bar = _Bar(enabled=not as_json)
    try:
        if resume_id is not None:
            if model:
                raise click.UsageError("give either MODEL or --resume RUN, not both")
            record = resume(app.store, app.workspace, resume_id, progress=bar, trust_model_code=trust_model_code)
        else:
            if not model:
                raise click.UsageError("missing MODEL (or --resume RUN)")
            request = request_for(model)
            if null_dev is not None:
                from dynadesk.orchestration.squad_dev import calibrate, with_dev_threshold

                threshold, dev_run = calibrate(app.store, app.workspace, request, null_dev, progress=bar)
                click.echo(f"null-score threshold {threshold:.6g}, chosen on '{null_dev}' (calibration run "
                           f"{dev_run})", err=True)
                request = with_dev_threshold(request, threshold, null_dev)
            record = evaluate(app.store, app.workspace, request, progress=bar, trust_model_code=trust_model_code)
    except KeyboardInterrupt:
        bar.close()
        click.echo(interrupted_line(app.store, bar.run_id if resume_id is None else resume_id), err=True)
        raise SystemExit(130) from None
    finally:
        bar.close()
    if record.status != "succeeded" and not as_json:
        click.echo(failure_line(record), err=True)
        raise SystemExit(1)  # click.exceptions.Exit is swallowed by main()'s standalone_mode=False
    _show(record, as_json, _served(app, record))
    if record.status != "succeeded":
        raise SystemExit(1)


def _remeasure(app: Any, run_id: int, as_json: bool) -> None:
    """``eval --remeasure RUN``: the new run, its deterministic figures against RUN's, the noise verdicts."""
    import os

    from dynadesk.orchestration.remeasure import remeasure

    if not as_json:
        click.echo(f"re-measuring run {run_id} (load average {os.getloadavg()[0]:.2f}; the timed windows want a quiet"
                   " machine)", err=True)
    bar = _Bar(enabled=not as_json)
    try:
        result = remeasure(app.store, app.workspace, run_id, progress=bar)
    finally:
        bar.close()
    new = result.new
    if as_json:
        echo_json({**result.to_dict(), "run": new.to_dict()})
    elif new.status != "succeeded":
        click.echo(failure_line(new), err=True)
    else:
        _show(new, as_json, _served(app, new))
        click.echo(f"run {new.id} re-measures run {run_id}: "
                   + ("every deterministic figure identical (same predictions digest)" if not result.differences
                      else "deterministic figures DIFFER: " + "; ".join(result.differences)))
        before = "noisy (" + "; ".join(result.noisy_before) + ")" if result.noisy_before else "quiet"
        after = "still NOISY (" + "; ".join(result.noisy_after) + "): re-measure when the machine is idle" \
            if result.noisy_after else "quiet"
        click.echo(f"timed windows: run {run_id} {before}; run {new.id} {after}")
    if new.status != "succeeded" or result.differences:
        raise SystemExit(1)


@click.group()
def runs():
    """Evaluation runs stored in the workspace."""


@runs.command("list")
@click.option("--task", default=None)
@click.option("--model", default=None)
@click.option("--status", default=None)
@click.option("--limit", type=int, default=50, show_default=True)
@json_option
@pass_app
def runs_list(app: Any, task: str | None, model: str | None, status: str | None, limit: int,
              as_json: bool) -> None:
    """List runs, newest first."""
    records = app.store.evaluations.list(task=task, model=model, status=status, limit=limit)
    if as_json:
        echo_json([{k: v for k, v in r.to_dict().items() if k not in ("log", "environment", "profile")}
                   for r in records])
        return
    from dynadesk.models.served import runner_text, served_names

    served = served_names(app.store)
    rows = []
    for r in records:
        perf = next((m.value for m in r.metrics if m.dataset == "" and m.metric == "perf"), None)
        runner = runner_text(r.runner, r.sandboxed, r.model_name in served)  # "served, not sandboxed" marked
        rows.append([r.id, r.model_name, r.task, runner, r.purpose, r.status, r.verdict or "", len(r.datasets),
                     f"{perf:.2f}" if perf is not None else "", (r.finished_at or r.created_at)[:19]])
    echo_table(["id", "model", "task", "runner", "purpose", "status", "verdict", "datasets", "perf", "time"], rows)


@runs.command("show")
@click.argument("run_id", type=int)
@click.option("--log", "show_log", is_flag=True, help="Print the worker log too.")
@json_option
@pass_app
def runs_show(app: Any, run_id: int, show_log: bool, as_json: bool) -> None:
    """Show a run: status, verdict, every metric and profile figure."""
    record = app.store.evaluations.get(run_id)
    _show(record, as_json, _served(app, record))
    if show_log and not as_json:
        click.echo(record.log)


@runs.command("compare")
@click.argument("run_a", type=int)
@click.argument("run_b", type=int)
@json_option
@pass_app
def runs_compare(app, run_a, run_b, as_json):
    """Compare two runs field by field (e.g. --runner docker vs --runner local).

    Exits 1 when the predictions or any deterministic metric differ.
    """
    from dynadesk.audit.compare import compare_runs, results_from_record
    from dynadesk.cli.audit_cmd import _short

    records = [app.store.evaluations.get(run_a), app.store.evaluations.get(run_b)]
    for rec in records:
        if rec.status != "succeeded":
            raise click.ClickException(f"run {rec.id} is {rec.status}, not succeeded: nothing to compare")
    a, b = (results_from_record(rec) for rec in records)
    checks = compare_runs(a, b, records[0].datasets, records[1].datasets)
    failures = [c.field for c in checks if c.fails]
    if as_json:
        echo_json({"a": run_a, "b": run_b, "ok": not failures, "failures": failures,
                   "checks": [c.to_dict() for c in checks]})
    else:
        a, b = records
        click.echo(f"A: run {a.id} ({a.model_name}, {a.runner})   B: run {b.id} ({b.model_name}, {b.runner})")
        echo_table(["field", "kind", "verdict", "A", "B", "note"],
                   [[c.field, c.kind, c.verdict, _short(c.expected), _short(c.actual), c.note] for c in checks])
        same = sum(1 for c in checks if c.kind == "deterministic" and c.verdict == "identical")
        click.echo(f"{same} deterministic fields identical; " +
                   ("DIFFERS: " + ", ".join(failures) if failures else "OK"))
    if failures:
        raise SystemExit(1)
