"""Evaluate a registered model: build the spec, run it, store everything.

:func:`evaluate` takes one :class:`~dynadesk.orchestration.request.RunRequest`
and :func:`resume` a run id; both are the library API the CLI, the GUI, the demo
and the audit call. Both accept ``progress(event)`` (a :class:`~dynadesk.progress.ProgressEvent`:
the worker's phases with the examples done of the run's total) and a
``cancel`` :class:`~dynadesk.cancel.CancelToken`; cancelling it stops the run (status
``cancelled``). Ctrl-C marks the run ``interrupted``; a crash leaves it
``running`` with a dead pid, which the next call marks ``interrupted``.
Either can be finished with :func:`resume`, which replays the stored request and
reruns only missing datasets. Status changes go through the store's checked
transitions. Every run, local or collected from a queue worker, ends in
:func:`finish_run`.
"""

from __future__ import annotations

import contextlib
import json
import os
import socket
from dataclasses import replace
from pathlib import Path
from typing import TYPE_CHECKING, Any

from dynadesk.errors import ConfigError, EvaluationError, NotFoundError, RunFolderError, StoreError
from dynadesk.evaluator.backends import backend_problem
from dynadesk.evaluator.schema import (
    ENVIRONMENT_FILE,
    METRICS_FILE,
    PROFILE_FILE,
    DatasetSpec,
    Settings,
    Spec,
    SpecError,
    evaluator_version,
)
from dynadesk.orchestration.bounds import check_measured
from dynadesk.orchestration.folder import RunFolder, sha256_no_follow
from dynadesk.orchestration.recompute import ResultMismatch, verified_rows
from dynadesk.orchestration.request import RunRequest, default_limits
from dynadesk.orchestration.runner_base import Runner, RunOutcome
from dynadesk.orchestration.runner_registry import RUNNERS, runner_class
from dynadesk.orchestration.timed_accuracy import gold_labels
from dynadesk.progress import ProgressEvent
from dynadesk.store.datasets import now_iso
from dynadesk.store.evaluations import KEEP, EvaluationRecord, ImageBuild, MetricValue, RunChange, RunSetup
from dynadesk.store.reserve import keep_reserve, write_final_state
from dynadesk.tasks import get_task

if TYPE_CHECKING:
    from dynadesk.cancel import CancelToken
    from dynadesk.orchestration.daemon import DaemonStatus, DockerClient
    from dynadesk.progress import ProgressFn
    from dynadesk.store import Store
    from dynadesk.workspace import Workspace

__all__ = ["RUNNERS", "RunRequest", "default_limits", "evaluate", "failure_line", "finish_run", "gpu_status",
           "machine_runner", "make_runner", "runner_type",
           "recover_stale", "request_of", "resume", "select_datasets"]

MAX_DB_LOG = 1 << 20


def runner_type(name: str) -> type[Runner]:
    """The registered runner class ``name``, checked to be a :class:`Runner`."""
    cls = runner_class(name)
    if not (isinstance(cls, type) and issubclass(cls, Runner)):
        raise ConfigError(f"runner '{name}': {cls!r} is not a Runner")
    return cls


def make_runner(request: RunRequest, client: DockerClient | None = None) -> Runner:
    """The runner a request names, from the runner registry (``docker`` in its image, default: this evaluator
    version's tag)."""
    return runner_type(request.runner).for_request(request, client)


def machine_runner(name: str, client: DockerClient | None = None) -> Runner:
    """The runner ``name`` as a request without an image of its own gets it: what a machine offers (the queue
    worker's start-up check of its runner and image)."""
    return make_runner(RunRequest(model="(start-up check)", runner=name), client)


def gpu_status(runner: str, timeout: float = 3.0) -> DaemonStatus:
    """Can a run on ``runner`` get a GPU: asked of the registered runner class (``Runner.gpu_status``)."""
    return runner_type(runner).gpu_status(timeout)


def recover_stale(store: Store) -> list[int]:
    """Mark this host's runs whose process died as interrupted (resumable)."""
    from dynadesk.store.run_owner import interrupt_orphans

    return interrupt_orphans(store)


def select_datasets(store: Store, task: Any, names: tuple[str, ...] | list[str] | None) -> list[Any]:
    """The test sets to run: the named ones, or every test-split dataset of the task."""
    if names:
        chosen = []
        for name in dict.fromkeys(names):
            ds = store.datasets.get(name)
            if ds.task != task.name:
                raise ConfigError(f"dataset '{name}' belongs to task '{ds.task}', the model to '{task.name}'")
            if ds.derived_from:
                raise ConfigError(f"dataset '{name}' is a perturbation set of '{ds.derived_from}'; evaluate "
                                  f"'{ds.derived_from}' (its perturbation sets are included)")
            chosen.append(ds)
        return chosen
    chosen = [d for d in store.datasets.list(task=task.name, include_derived=False) if d.split == "test"]
    if not chosen:
        raise NotFoundError(f"task '{task.name}' has no test-split dataset; import one or name it with --dataset")
    return chosen


def scored_by_squad_v2(store: Store, dataset: str) -> bool:
    """Whether the dataset holds examples scored by the SQuAD 2.0 rule (imported with ``--squad-v2``)."""
    from dynadesk.evaluator.answers import SQUAD_V2_KEY

    return any((ex.get("metadata") or {}).get(SQUAD_V2_KEY) is True for ex in store.datasets.examples(dataset))


def _write_dataset(path: Path, examples: list[dict[str, Any]]) -> str:
    with open(path, "w", encoding="utf-8") as fh:
        for ex in examples:
            fh.write(json.dumps(ex, ensure_ascii=False, sort_keys=True) + "\n")
    os.chmod(path, 0o644)
    return sha256_no_follow(path).split(":", 1)[1]


def prepare(store: Store, folder: RunFolder, model: Any, task: Any, datasets: list[Any], settings: Settings) -> None:
    """Write the run folder's spec and data (see :class:`RunFolder` for the layout)."""
    folder.create()
    entries: list[DatasetSpec] = []
    for ds in datasets:
        members = [(ds, "test", None)] + [(d, "perturbation", d.derivation or {})
                                          for d in store.datasets.derived(ds.name)]
        for member, role, derivation in members:
            kind = (derivation or {}).get("kind") if role == "perturbation" else None
            if role == "perturbation" and kind not in ("robustness", "fairness"):
                continue  # a derived set that is not a perturbation suite plays no part in scoring
            file = f"d{len(entries):03d}.jsonl"
            examples = store.datasets.examples(member.name)
            sha = _write_dataset(folder.data_dir / file, examples)
            entries.append(DatasetSpec(name=member.name, file=file, sha256=sha, size=len(examples), role=role,
                                       derived_from=ds.name if role == "perturbation" else None, kind=kind,
                                       suite=(derivation or {}).get("suite")))
    manifest = dict(model.manifest)
    if settings.null_threshold is not None:  # the run's SQuAD 2.0 abstention (signed in worker_settings too)
        manifest["null_threshold"] = settings.null_threshold
    spec = Spec(task=task.to_dict(), model={"name": model.name, "digest": model.digest, "manifest": manifest},
                datasets=entries, settings=settings)
    spec.write(folder.spec_file)
    folder.open_inputs()


def worker_settings(request: RunRequest, run: Runner, has_pickle: bool, runs_code: bool = False) -> Settings:
    """The spec's settings: the request's, plus what the runner decides (device, threads, sandbox facts).

    ``allow_pickle`` lets the worker run code from the model folder: pickle weights in the sandbox only, a
    handler model's ``handler.py`` (``runs_code``, already cleared by :func:`check_model_code`)."""
    s = request.settings
    settings = Settings(batch_size=s.batch_size, device=request.device, deterministic=s.deterministic, seed=s.seed,
                        threads=request.threads, latency_samples=s.latency_samples, warmup=s.warmup,
                        min_seconds=s.min_seconds, null_threshold=s.null_threshold, backend=s.backend,
                        allow_pickle=bool(has_pickle and run.sandboxed) or runs_code, dedicated_cgroup=run.sandboxed)
    try:
        settings.validate()
    except SpecError as exc:
        raise ConfigError(str(exc)) from exc
    return settings


def check_model_code(model: Any, run: Runner, trust_model_code: bool) -> bool:
    """Whether the run executes the model folder's own code (a handler model); refused outside the sandbox unless
    the user trusts it (``--trust-model-code``, never stored in the request: an audit or a replay must not
    inherit it)."""
    from dynadesk.models.handler import HANDLER, SANDBOX_NOTE

    if model.kind != HANDLER:
        return False
    if not run.sandboxed and not trust_model_code:
        raise EvaluationError(f"model '{model.name}': {SANDBOX_NOTE}; refused on the {run.name} runner",
                              verdict="refused")
    return True


def create_run(store: Store, workspace: Workspace, request: RunRequest, run: Runner,
               trust_model_code: bool = False) -> tuple[int, RunFolder, Any]:
    """The run record (``queued``) and its prepared folder for ``request`` on ``run``: (run id, folder, model).

    The one start of every run, local or queued to another machine's worker: the model's files checked
    against its digest (what the run records must be what it reads), the datasets chosen, pickle weights
    refused outside the sandbox."""
    from dynadesk.models.registry import verify_model

    model = store.models.get(request.model)
    verify_model(model)
    task = get_task(model.task)
    chosen = select_datasets(store, task, request.datasets)
    from dynadesk.scoring.perturb import check_one_suite_set

    check_one_suite_set(store, [d.name for d in chosen])  # one robustness figure rests on one suite set
    if model.has_pickle and not run.sandboxed:
        raise EvaluationError(f"model '{model.name}' has pickle weights, which run code when loaded; only the "
                              "Docker sandbox may evaluate it (--runner docker)", verdict="refused")
    refused = backend_problem(request.settings.backend, model.name, model.kind)
    if refused:  # before a run record exists: nothing is half-started
        raise EvaluationError(refused, verdict="refused")
    if model.kind == "openai-served" and run.sandboxed:
        raise EvaluationError(f"model '{model.name}' is served at an endpoint, which the "
                              "sandbox (no network) cannot reach; evaluate it with --runner local (served, not "
                              "sandboxed)", verdict="refused")
    settings = worker_settings(request, run, bool(model.has_pickle), check_model_code(model, run, trust_model_code))
    if settings.null_threshold is None and model.manifest.get("kind") == "hf-question-answering" \
            and any(scored_by_squad_v2(store, d.name) for d in chosen):
        settings.null_threshold = 0.0  # SQuAD 2.0 data: the adapter abstains by the null score (default 0)
    run_id = store.evaluations.create(model.id, task.name, RunSetup(request=request.to_dict(), worker=settings,
                                                                    image_name=run.image_name()), runner=run.name,
                                      sandboxed=run.sandboxed, datasets=[d.name for d in chosen], status="queued")
    folder = RunFolder.of_run(workspace.runs_dir, run_id)
    try:
        prepare(store, folder, model, task, chosen, settings)
    except OSError as exc:  # a full disk, say: the run is failed, never left queued over a half-written folder
        why = f"cannot prepare run {run_id}'s folder {folder.root}: {exc.strerror or exc}"
        try:
            store.evaluations.transition(run_id, "failed", RunChange(verdict="error", finished_at=now_iso(), error=why))
        except StoreError as also:  # the database is on the same full disk: the run stays 'queued', never a result
            why += f" (and the run could not be marked failed: {also})"
        raise EvaluationError(why, verdict="error") from exc
    return run_id, folder, model


def evaluate(store: Store, workspace: Workspace, request: RunRequest, *, runner: Runner | None = None,
             client: DockerClient | None = None, progress: ProgressFn | None = None,
             cancel: CancelToken | None = None, trust_model_code: bool = False) -> EvaluationRecord:
    """Run ``request`` and store it; ``runner`` replaces the request's runner of the same kind (tests);
    ``trust_model_code`` lets a handler model's code run outside the sandbox (:func:`check_model_code`)."""
    recover_stale(store)
    run = runner or make_runner(request, client)
    if run.name != request.runner:
        raise ConfigError(f"the request names the {request.runner} runner, but a {run.name} runner was given")
    run.check_ready()  # e.g. no daemon: a clear error now, before a run record is created
    run_id, folder, _model = create_run(store, workspace, request, run, trust_model_code)
    store.evaluations.update(run_id, RunChange(run_dir=str(folder.root), evaluator_version=evaluator_version()))
    return _execute(store, run_id, run, request, progress, cancel, Path(workspace.images_dir))


def request_of(record: EvaluationRecord) -> RunRequest:
    """The request a stored run was made from (for runs recorded before requests, the store's migration built it
    from their flat settings where those allowed it)."""
    if record.request:
        return RunRequest.from_dict(record.request)
    raise ConfigError(f"run {record.id} was recorded without a complete request (its settings lack the batch size, "
                      "seed, latency samples, warm-up or limits): the run cannot be repeated exactly")


def resume(store: Store, workspace: Workspace, run_id: int, *, runner: Runner | None = None,
           client: DockerClient | None = None, progress: ProgressFn | None = None,
           cancel: CancelToken | None = None, trust_model_code: bool = False) -> EvaluationRecord:
    """Finish an interrupted, cancelled or failed run by replaying its stored request: datasets already
    predicted are kept. Links and files the worker never writes are first removed from ``out/`` (and named)."""
    recover_stale(store)
    record = store.evaluations.get(run_id)
    if record.status == "succeeded":
        raise EvaluationError(f"run {run_id} already succeeded; nothing to resume", verdict="ok")
    if record.status == "running":
        raise EvaluationError(f"run {run_id} is still running (pid {record.pid} on {record.host})",
                              verdict="running")
    folder = RunFolder(Path(record.run_dir)) if record.run_dir else None
    if folder is None or not folder.has_spec():
        raise RunFolderError(f"run {run_id} has no run folder with a spec to resume from")
    folder.check_inputs()
    request = request_of(record)
    run = runner or make_runner(request, client)
    check_model_code(store.models.get_by_id(record.model_id), run, trust_model_code)
    run.check_ready()
    removed = folder.remove_strays()
    if removed and progress:
        progress(ProgressEvent("cleaned", run=run_id, message="removed from the run folder before resuming: "
                               + ", ".join(removed), detail={"removed": removed}))
    return _execute(store, run_id, run, request, progress, cancel, Path(workspace.images_dir),
                    notes=[f"removed from out/ before resuming (links or files the worker never writes): "
                           f"{', '.join(removed)}"] if removed else [])


def _execute(store: Store, run_id: int, run: Runner, request: RunRequest, progress: ProgressFn | None,
             cancel: CancelToken | None, images_dir: Path, notes: list[str] | None = None) -> EvaluationRecord:
    record = store.evaluations.get(run_id)
    model_dir = Path(store.models.get_by_id(record.model_id).path)
    folder = RunFolder.stored(record.run_dir, run_id)
    folder.out_dir.mkdir(exist_ok=True)
    image_id = run.image_id()
    build = image_build(images_dir, image_id) if image_id else None  # what rebuilds this Id (signed in the bundle)
    keep_reserve(store)  # room for this run's final state, whatever its worker does to the disk
    store.evaluations.transition(run_id, "running",
                                 RunChange(verdict=None, error=None, started_at=now_iso(), finished_at=None,
                                           pid=os.getpid(), host=socket.gethostname(), image_id=image_id,
                                           image_build=ImageBuild.from_dict(build) if build is not None else None))
    if not model_dir.is_dir():
        store.evaluations.transition(run_id, "failed", RunChange(verdict="error", finished_at=now_iso(),
                                                                 error=f"model folder {model_dir} is missing"))
        raise EvaluationError(f"model folder {model_dir} is missing", verdict="error")
    try:  # the model's view, cut again from data/ checked against the spec (a resumed older folder lacks one)
        folder.open_inputs()
    except RunFolderError as exc:
        final_state(store, run_id, "failed", RunChange(verdict="error", error=str(exc), finished_at=now_iso()))
        return store.evaluations.get(run_id)
    try:
        if progress:
            progress(ProgressEvent("start", run=run_id, message=f"run {run_id} started"))
        outcome = run.run(folder.paths(model_dir), request.limits, progress, cancel)
    except KeyboardInterrupt:
        final_state(store, run_id, "interrupted",
                    RunChange(verdict="interrupted", finished_at=now_iso(),
                              error=f"interrupted (Ctrl-C); finish it with 'dynadesk eval --resume {run_id}'"))
        raise
    except StoreError as exc:
        raise _store_failed(store, run_id, exc) from exc
    except BaseException as exc:  # recorded, then re-raised: the run must not stay 'running'
        final_state(store, run_id, "failed", RunChange(verdict="error", error=str(exc), finished_at=now_iso()))
        raise
    log = "".join(f"[dynadesk: {note}]\n" for note in notes or []) + outcome.log
    try:
        return finish_run(store, run_id, folder, outcome, log)
    except StoreError as exc:
        raise _store_failed(store, run_id, exc) from exc


def _store_failed(store: Store, run_id: int, exc: StoreError) -> StoreError:
    """The database failed during a run or while storing its results (its disk filled, say): the run is marked
    failed where the kept room allows (never left 'running'), and the error names the run (a suite run saw a bare
    "the disk holding ... is full" when the database filled before the worker's own writes did)."""
    if f"run {run_id}" in str(exc):
        return exc
    why = f"run {run_id} failed: {exc}"
    try:
        final_state(store, run_id, "failed", RunChange(verdict="error", error=why, finished_at=now_iso()))
    except StoreError as also:
        why += f" (and the run could not be marked failed: {also})"
    return StoreError(why)


def finish_run(store: Store, run_id: int, folder: RunFolder, outcome: RunOutcome, log: str) -> EvaluationRecord:
    """The one end of every run that got as far as its worker, local or a queue worker's: the log kept in the run
    folder; a failed or cancelled outcome recorded as such; a finished one's results checked and stored
    (:func:`store_results`); a full disk fails the run naming it (:func:`_disk_full`)."""
    if not outcome.ok and DISK_FULL in outcome.log + outcome.message:
        _disk_full(store, run_id, folder, outcome.message.strip().splitlines()[-1] if outcome.message else DISK_FULL,
                   log)
    try:
        folder.log_file.write_text(log, encoding="utf-8")
    except OSError as exc:
        _disk_full(store, run_id, folder, f"writing {folder.log_file.name}: {exc.strerror or exc}", log)
    if not outcome.ok:
        status = "cancelled" if outcome.verdict == "cancelled" else "failed"
        final_state(store, run_id, status, RunChange(verdict=outcome.verdict, error=outcome.message,
                                                     log=log[-MAX_DB_LOG:], finished_at=now_iso()))
        return store.evaluations.get(run_id)
    return store_results(store, run_id, folder, outcome, log)


DISK_FULL = "No space left on device"


def _disk_full(store: Store, run_id: int, folder: RunFolder, what: str, log: str) -> None:
    """The run's outputs could not be written (the disk is full): its half-written outputs are removed (which
    also frees room for the record), the run is marked failed, and an :class:`EvaluationError` names it."""
    why = (f"run {run_id} could not write its results to {folder.out_dir} ({what}): the disk is full; its partial"
           " outputs were removed, free space and evaluate again")
    with contextlib.suppress(OSError):
        folder.clear_out()
    try:
        final_state(store, run_id, "failed", RunChange(verdict="error", error=why, log=log[-MAX_DB_LOG:],
                                                       finished_at=now_iso()))
    except StoreError as also:  # the database is on the same full disk, and its reserve did not make room
        why += f" (and the run could not be marked failed: {also})"
    raise EvaluationError(why, verdict="error")


def final_state(store: Store, run_id: int, status: str, change: RunChange) -> None:
    """A run's last transition, written with the room kept for it (:mod:`dynadesk.store.reserve`); on a disk still
    too full it is written again without its log, which is also kept in the run folder when there was room."""
    def full() -> None:
        store.evaluations.transition(run_id, status, change)

    def small() -> None:
        store.evaluations.transition(run_id, status, replace(change, log=KEEP))

    write_final_state(store, full, small)


def store_results(store: Store, run_id: int, folder: RunFolder, outcome: RunOutcome, log: str) -> EvaluationRecord:
    try:
        strays = folder.strays()
        if strays:
            raise RunFolderError(f"the worker left links or files it never writes in out/: {', '.join(strays)}; "
                                 "the host does not read them")
        metrics = json.loads(folder.read_out(METRICS_FILE))
        profile = json.loads(folder.read_out(PROFILE_FILE))
        environment = json.loads(folder.read_out(ENVIRONMENT_FILE))
        digest = sha256_no_follow(folder.predictions_file)
        if "sha256:" + metrics.get("predictions_sha256", "") != digest:
            raise SpecError(f"{folder.predictions_file} does not match the digest the worker recorded")
        worker_rows = metrics["values"]
        if not isinstance(worker_rows, list):
            raise SpecError("metrics.json 'values' is not a list")
        host = verified_rows(folder.spec_file, folder.data_dir, folder.predictions_file, worker_rows)
        rows = host.rows
        bounded = check_measured(rows, outcome.observed, spec_test_sets(folder), folder.predictions_file,
                                 gold_labels(Spec.read(folder.spec_file), folder.data_dir))
        values = [MetricValue(v["dataset"], v["metric"], float(v["value"]), v["unit"], bool(v["deterministic"]))
                  for v in rows]
        bootstrap = host_bootstrap(folder, digest)  # on the verified predictions only
    except ResultMismatch as exc:  # the host's own figures disagree with the worker's: never stored
        store.evaluations.transition(run_id, "failed",
                                     RunChange(verdict=exc.verdict, finished_at=now_iso(),
                                               error=f"the worker's results do not match the host's: {exc}"
                                               if exc.verdict == "mismatch" else "the worker's results are past what "
                                               f"the host observed of the run: {exc}", log=log[-MAX_DB_LOG:]))
        return store.evaluations.get(run_id)
    except (RunFolderError, SpecError, OSError, KeyError, TypeError, ValueError, AttributeError) as exc:
        store.evaluations.transition(run_id, "failed", RunChange(verdict="error", finished_at=now_iso(),
                                                                 error=f"the worker's results are unreadable: {exc}",
                                                                 log=log[-MAX_DB_LOG:]))
        return store.evaluations.get(run_id)
    profile["notes"] = host.notes  # the host's, like every deterministic figure (verified_rows)
    profile["tags"] = host.tags
    profile["host_bounds"] = bounded  # what the host observed of the run, and the bounds it checked
    profile["wall_seconds"] = outcome.seconds
    profile.update(bootstrap)  # "intervals" and "outcomes" (dynadesk.scoring.bootstrap)
    store.evaluations.set_metrics(run_id, values, RunChange(verdict="ok", predictions_digest=digest, profile=profile,
                                                            environment=environment, log=log[-MAX_DB_LOG:],
                                                            finished_at=now_iso(),
                                                            evaluator_version=metrics.get("evaluator_version")),
                                  status="succeeded")
    return store.evaluations.get(run_id)


def spec_test_sets(folder: RunFolder) -> list[str]:
    """The run's test sets, from the spec the host wrote."""
    return [d.name for d in Spec.read(folder.spec_file).datasets if d.role == "test"]


def host_bootstrap(folder: RunFolder, digest: str) -> dict[str, Any]:
    """The seeded bootstrap interval of the task metric per test set and the compact per-example outcomes,
    computed here on the host from the run's own files (:mod:`dynadesk.scoring.bootstrap`); stored in the
    profile; the intervals are signed in the bundle."""
    from dynadesk.scoring.bootstrap import run_bootstrap

    return run_bootstrap(folder.spec_file, folder.data_dir, folder.predictions_file, digest)


def image_build(images_dir: Path | None, image_id: str | None) -> dict[str, Any] | None:
    """The build epoch and input digest of the image with this Id, from the workspace's image records."""
    from dynadesk.orchestration.image import build_inputs

    return build_inputs(images_dir, image_id) if images_dir is not None else None


def failure_line(record: EvaluationRecord) -> str:
    """One line for a run that did not succeed: which run, its verdict, the cause and the fix."""
    error = (record.error or "").strip()
    first = error.splitlines()[0] if error else "no message"
    more = f" (full log: dynadesk runs show {record.id} --log)" if "\n" in error or record.log else ""
    return f"run {record.id} {record.status} ({record.verdict}): {first}{more}"
