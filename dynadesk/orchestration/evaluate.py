"""Evaluate a registered model: build the spec, run it, store everything.

:func:`evaluate` and :func:`resume` are the library API the CLI and the GUI
call. Both accept ``progress(event: dict)`` (worker events such as
``{"phase": "predict", "overall_done": n, "overall_total": N}``) and a
``cancel`` :class:`threading.Event`; setting it stops the run (status
``cancelled``). Ctrl-C marks the run ``interrupted``; a crash leaves it
``running`` with a dead pid, which the next call marks ``interrupted``.
Either can be finished with :func:`resume`, which reruns only missing datasets.
"""

from __future__ import annotations

import json
import math
import os
import shutil
import socket
import threading
from collections.abc import Callable, Iterable
from dataclasses import asdict
from pathlib import Path
from typing import TYPE_CHECKING, Any, cast

from dynadesk.canonical import file_sha256
from dynadesk.errors import ConfigError, EvaluationError, NotFoundError
from dynadesk.evaluator.schema import (
    ENVIRONMENT_FILE,
    METRICS_FILE,
    PREDICTIONS_FILE,
    PROFILE_FILE,
    SPEC_FILE,
    DatasetSpec,
    Settings,
    Spec,
    SpecError,
    evaluator_version,
    read_json,
)
from dynadesk.orchestration.runners import DockerRunner, Limits, LocalRunner, Runner, RunOutcome, RunPaths
from dynadesk.store.datasets import now_iso
from dynadesk.store.evaluations import EvaluationRecord, MetricValue
from dynadesk.tasks import Task, get_task

if TYPE_CHECKING:
    from dynadesk.store import Store
    from dynadesk.store.models import ModelRecord
    from dynadesk.workspace import Workspace

ProgressFn = Callable[[dict[str, Any]], None]
RUNNERS = ("docker", "local")
MAX_DB_LOG = 1 << 20


def default_limits(**overrides: Any) -> Limits:
    limits = Limits(cpus=float(min(os.cpu_count() or 1, 4)))
    for key, value in overrides.items():
        if value is not None:
            setattr(limits, key, value)
    return limits


def make_runner(kind: str | Runner, image: str | None = None, client: Any = None) -> Runner:
    """A runner by name (``docker``/``local``); a :class:`Runner` instance is used as is."""
    if isinstance(kind, Runner):
        return kind
    if kind == "docker":
        from dynadesk.orchestration.image import image_tag

        return DockerRunner(image or image_tag(), client=client)
    if kind == "local":
        return LocalRunner()
    raise ConfigError(f"unknown runner '{kind}' (use one of {', '.join(RUNNERS)})")


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
        return True
    except ProcessLookupError:
        return False
    except PermissionError:
        return True


def recover_stale(store: Store) -> list[int]:
    """Mark this host's runs whose process died as interrupted (resumable)."""
    return store.evaluations.mark_stale_running(host=socket.gethostname(), alive=_alive)


def select_datasets(store: Store, task: Task, names: list[str] | None) -> list[Any]:
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


def _write_dataset(path: Path, examples: Iterable[dict[str, Any]]) -> str:
    with open(path, "w", encoding="utf-8") as fh:
        for ex in examples:
            fh.write(json.dumps(ex, ensure_ascii=False, sort_keys=True) + "\n")
    os.chmod(path, 0o644)
    return file_sha256(path)


def prepare(store: Store, workspace: Workspace, run_id: int, model: ModelRecord, task: Task, datasets: list[Any],
            settings: Settings) -> Path:
    """Write ``runs/<id>/{spec/spec.json, data/*.jsonl, out/}``; returns the run folder."""
    run_dir = workspace.runs_dir / str(run_id)
    if run_dir.exists():
        shutil.rmtree(run_dir)
    (run_dir / "data").mkdir(parents=True)
    (run_dir / "spec").mkdir()
    (run_dir / "out").mkdir()
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
            sha = _write_dataset(run_dir / "data" / file, examples)
            entries.append(DatasetSpec(name=member.name, file=file, sha256=sha, size=len(examples), role=role,
                                       derived_from=ds.name if role == "perturbation" else None, kind=kind,
                                       suite=(derivation or {}).get("suite")))
    spec = Spec(task=task.to_dict(), model={"name": model.name, "digest": model.digest, "manifest": model.manifest},
                datasets=entries, settings=settings)
    spec.write(run_dir / "spec" / SPEC_FILE)
    for sub in ("data", "spec"):  # readable by the sandbox's unprivileged user
        os.chmod(run_dir / sub, 0o755)
    os.chmod(run_dir / "spec" / SPEC_FILE, 0o644)
    return run_dir


def evaluate(store: Store, workspace: Workspace, model_name: str, datasets: list[str] | None = None, *,
             runner: str | Runner = "docker",
             batch_size: int = 32, gpus: str | None = None, limits: Limits | None = None, image: str | None = None,
             latency_samples: int = 64, warmup: int = 8, seed: int = 0, client: Any = None,
             progress: ProgressFn | None = None, cancel: threading.Event | None = None) -> EvaluationRecord:
    """Evaluate ``model_name`` on test sets (default: all of its task's) and store the run."""
    from dynadesk.models.registry import verify_model

    recover_stale(store)
    model = store.models.get(model_name)
    verify_model(model)  # the digest the run records must be the files the run reads
    task = get_task(model.task)
    chosen = select_datasets(store, task, datasets)
    run = make_runner(runner, image, client)
    limits = limits or default_limits()
    limits.gpus = gpus or limits.gpus
    if isinstance(run, DockerRunner):
        _ = run.client  # no daemon: a clear error now, before a run record is created
    if model.has_pickle and not run.sandboxed:
        raise EvaluationError(f"model '{model.name}' has pickle weights, which run code when loaded; only the "
                              "Docker sandbox may evaluate it (--runner docker)", verdict="refused")
    settings = Settings(batch_size=batch_size, device="cuda" if limits.gpus else "cpu", seed=seed,
                        threads=max(1, math.ceil(limits.cpus)), latency_samples=latency_samples, warmup=warmup,
                        allow_pickle=bool(model.has_pickle and run.sandboxed), dedicated_cgroup=run.sandboxed)
    try:
        settings.validate()
    except SpecError as exc:
        raise ConfigError(str(exc)) from exc
    run_id = store.evaluations.create(
        model.id, task.name, run.name, run.sandboxed,
        {**asdict(settings), "limits": limits.to_dict(), **run.describe()}, [d.name for d in chosen], status="queued")
    run_dir = prepare(store, workspace, run_id, model, task, chosen, settings)
    store.evaluations.update(run_id, run_dir=str(run_dir), evaluator_version=evaluator_version())
    return _execute(store, run_id, Path(model.path), run, limits, progress, cancel, Path(workspace.images_dir))


def resume(store: Store, workspace: Workspace, run_id: int, *, client: Any = None, progress: ProgressFn | None = None,
           cancel: threading.Event | None = None) -> EvaluationRecord:
    """Finish an interrupted, cancelled or failed run: datasets already predicted are kept."""
    recover_stale(store)
    record = store.evaluations.get(run_id)
    if record.status == "succeeded":
        raise EvaluationError(f"run {run_id} already succeeded; nothing to resume", verdict="ok")
    if record.status == "running":
        raise EvaluationError(f"run {run_id} is still running (pid {record.pid} on {record.host})",
                              verdict="running")
    if not record.run_dir or not (Path(record.run_dir) / "spec" / SPEC_FILE).is_file():
        raise EvaluationError(f"run {run_id} has no run folder with a spec to resume from", verdict="error")
    model = store.models.get_by_id(record.model_id)
    run = make_runner(record.runner, record.settings.get("image"), client)
    limits = Limits(**record.settings.get("limits", {}))
    return _execute(store, run_id, Path(model.path), run, limits, progress, cancel, Path(workspace.images_dir))


def _execute(store: Store, run_id: int, model_dir: Path, run: Runner, limits: Limits, progress: ProgressFn | None,
             cancel: threading.Event | None, images_dir: Path | None = None) -> EvaluationRecord:
    record = store.evaluations.get(run_id)
    run_dir = Path(str(record.run_dir))
    paths = RunPaths(spec_dir=run_dir / "spec", data_dir=run_dir / "data", model_dir=model_dir,
                     out_dir=run_dir / "out")
    paths.out_dir.mkdir(exist_ok=True)
    if not model_dir.is_dir():
        store.evaluations.update(run_id, status="failed", verdict="error", finished_at=now_iso(),
                                 error=f"model folder {model_dir} is missing")
        raise EvaluationError(f"model folder {model_dir} is missing", verdict="error")
    image_id, extra = None, {}
    if isinstance(run, DockerRunner):
        image_id = _image_id(run)
        settings = {k: v for k, v in record.settings.items() if k != "image_build"}
        build = image_build(images_dir, image_id)
        if build is not None:  # the epoch and inputs that rebuild this Id (signed into the bundle)
            settings["image_build"] = build
        if settings != record.settings:
            extra["settings"] = settings
    store.evaluations.update(run_id, **extra, status="running", verdict=None, error=None, started_at=now_iso(),
                             finished_at=None, pid=os.getpid(), host=socket.gethostname(), image_id=image_id)
    if progress:
        progress({"phase": "start", "run": run_id})
    try:
        outcome = run.run(paths, limits, progress, cancel)
    except KeyboardInterrupt:
        store.evaluations.update(run_id, status="interrupted", verdict="interrupted", finished_at=now_iso(),
                                 error="interrupted (Ctrl-C); finish it with 'dynadesk eval --resume "
                                       f"{run_id}'")
        raise
    except Exception as exc:
        store.evaluations.update(run_id, status="failed", verdict="error", error=str(exc), finished_at=now_iso())
        raise
    (run_dir / "run.log").write_text(outcome.log, encoding="utf-8")
    if not outcome.ok:
        status = "cancelled" if outcome.verdict == "cancelled" else "failed"
        store.evaluations.update(run_id, status=status, verdict=outcome.verdict, error=outcome.message,
                                 log=outcome.log[-MAX_DB_LOG:], finished_at=now_iso())
        return store.evaluations.get(run_id)
    return _store_results(store, run_id, paths.out_dir, outcome)


def _store_results(store: Store, run_id: int, out: Path, outcome: RunOutcome) -> EvaluationRecord:
    try:
        metrics = read_json(out / METRICS_FILE, "metrics file")
        profile = read_json(out / PROFILE_FILE, "profile file")
        environment = read_json(out / ENVIRONMENT_FILE, "environment file")
        predictions = out / PREDICTIONS_FILE
        digest = "sha256:" + file_sha256(predictions)
        if "sha256:" + metrics.get("predictions_sha256", "") != digest:
            raise SpecError(f"{predictions} does not match the digest the worker recorded")
        values = [MetricValue(v["dataset"], v["metric"], float(v["value"]), v["unit"], bool(v["deterministic"]))
                  for v in metrics["values"]]
    except (SpecError, OSError, KeyError, TypeError, ValueError) as exc:
        store.evaluations.update(run_id, status="failed", verdict="error", finished_at=now_iso(),
                                 error=f"the worker's results are unreadable: {exc}", log=outcome.log[-MAX_DB_LOG:])
        return store.evaluations.get(run_id)
    profile["notes"] = metrics.get("notes", [])
    profile["wall_seconds"] = outcome.seconds
    store.evaluations.set_metrics(run_id, values, status="succeeded", verdict="ok", predictions_digest=digest,
                                  profile=profile, environment=environment, log=outcome.log[-MAX_DB_LOG:],
                                  finished_at=now_iso(), evaluator_version=metrics.get("evaluator_version"))
    return store.evaluations.get(run_id)


def image_build(images_dir: Path | None, image_id: str | None) -> dict[str, Any] | None:
    """The build epoch and input digest of the image with this Id, from the workspace's image records."""
    from dynadesk.orchestration.image import build_inputs

    return build_inputs(images_dir, image_id) if images_dir is not None else None


def _image_id(run: DockerRunner) -> str | None:
    import docker

    try:
        return cast(str, run.client.images.get(run.image).id)
    except docker.errors.ImageNotFound:
        return None
    except docker.errors.DockerException as exc:
        raise EvaluationError(f"Docker is not usable: {exc}") from exc
