"""Re-take a run's timed windows (``dynadesk eval --remeasure RUN``, issue 39): a noisy run made good.

A run measured while other processes used the cores is flagged noisy, and its throughput and latency
rest on a busy machine; its predictions and every deterministic figure do not. So a re-measurement
replays the run's own request (same model digest, same data bytes, same runner and, for Docker, the
same image Id: anything else is refused before a run is made) as a new run whose output folder starts
with the old run's finished predictions (``out/parts``, copied, never linked). The worker's resume path
keeps them, so the model only loads and the timed windows are taken again; the host recomputes every
deterministic figure from those same predictions, and they must equal the old run's (a difference is
reported, never hidden). Memory is not a timed window: the new run keeps the old run's memory figures
(a peak without the prediction pass would understate it), and says so in its profile. The new run
names the old one (``remeasure_of``), so the board's latest run of the model is the quiet one.
"""

from __future__ import annotations

import json
import os
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from dynadesk.errors import EvaluationError, RunFolderError
from dynadesk.evaluator.metric_registry import timed_metrics
from dynadesk.evaluator.schema import PARTS_DIR, evaluator_version
from dynadesk.orchestration.evaluate import _execute, create_run, make_runner, recover_stale, request_of
from dynadesk.orchestration.folder import RunFolder, read_no_follow
from dynadesk.orchestration.runner_base import Runner
from dynadesk.scoring.leaderboard import noisy_in_environment
from dynadesk.store.evaluations import EvaluationRecord, MetricValue, RunChange

if TYPE_CHECKING:
    from dynadesk.cancel import CancelToken
    from dynadesk.orchestration.daemon import DockerClient
    from dynadesk.progress import ProgressFn
    from dynadesk.store import Store
    from dynadesk.workspace import Workspace

TIMED_METRICS = timed_metrics()
"""The figures the timed windows give (dynadesk.evaluator.timing); everything else is kept or recomputed."""
MAX_PART_BYTES = 1 << 31


@dataclass(frozen=True)
class Remeasured:
    """The old run, the new one, and what a reader must know: deterministic differences (none expected), the
    noise verdicts before and after."""

    old: EvaluationRecord
    new: EvaluationRecord
    differences: list[str]
    noisy_before: list[str]
    noisy_after: list[str]

    def to_dict(self) -> dict[str, Any]:
        return {"old_run": self.old.id, "new_run": self.new.id, "status": self.new.status,
                "deterministic_identical": not self.differences, "differences": self.differences,
                "noisy_before": self.noisy_before, "noisy_after": self.noisy_after}


def _spec(folder: RunFolder) -> dict[str, Any]:
    return dict(json.loads(read_no_follow(folder.spec_file, 64 << 20)))


def _files(spec: dict[str, Any]) -> list[tuple[str, str]]:
    return [(str(d["name"]), str(d["sha256"])) for d in spec["datasets"]]


def _same_inputs(old: dict[str, Any], new: dict[str, Any], run_id: int) -> None:
    """The re-measurement reads exactly what the run read: model digest, every data file's bytes, settings."""
    if old["model"].get("digest") != new["model"].get("digest"):
        raise EvaluationError(f"run {run_id} evaluated model digest {old['model'].get('digest')}, but the model"
                              f" is now {new['model'].get('digest')}: a re-measurement must time the same model",
                              verdict="refused")
    was, now = _files(old), _files(new)
    if was != now:
        before, after = dict(was), dict(now)
        changed = sorted(n for n in set(before) | set(after) if before.get(n) != after.get(n)) or ["their order"]
        raise EvaluationError(f"run {run_id}'s data changed since it ran ({', '.join(changed)}): a re-measurement"
                              " must read the same bytes; evaluate again instead", verdict="refused")


def _copy_parts(old: RunFolder, new: RunFolder, run_id: int) -> int:
    """The old run's finished predictions into the new run's ``out/parts`` (copied; links are never followed)."""
    src = old.out_dir / PARTS_DIR
    if not src.is_dir() or src.is_symlink() or not any(src.iterdir()):
        raise RunFolderError(f"run {run_id} has no finished predictions in {src}: nothing to re-measure with"
                             " (evaluate the model again)")
    dst = new.out_dir / PARTS_DIR
    dst.mkdir(parents=True, exist_ok=True)
    n = 0
    for entry in sorted(os.scandir(src), key=lambda e: e.name):
        data = read_no_follow(Path(entry.path), MAX_PART_BYTES)
        (dst / entry.name).write_bytes(data)
        n += 1
    return n


def _deterministic(record: EvaluationRecord) -> dict[tuple[str, str], float]:
    return {(m.dataset, m.metric): m.value for m in record.metrics if m.deterministic}


def differences(old: EvaluationRecord, new: EvaluationRecord) -> list[str]:
    """Each deterministic figure (and the predictions digest) that is not identical in the two runs."""
    a, b = _deterministic(old), _deterministic(new)
    out = [f"{ds or 'whole run'} {metric}: {a.get((ds, metric))} in run {old.id}, {b.get((ds, metric))} in run"
           f" {new.id}" for ds, metric in sorted(set(a) | set(b)) if a.get((ds, metric)) != b.get((ds, metric))]
    if old.predictions_digest != new.predictions_digest:
        out.insert(0, f"predictions digest {old.predictions_digest} in run {old.id}, {new.predictions_digest} in run"
                      f" {new.id}")
    return out


def _keep_untimed(store: Store, old: EvaluationRecord, new: EvaluationRecord) -> EvaluationRecord:
    """The new run's measured figures: its own timed windows, the old run's memory (not re-taken)."""
    kept = [m for m in old.metrics if not m.deterministic and m.metric not in TIMED_METRICS]
    values = [m for m in new.metrics if m.deterministic or m.metric in TIMED_METRICS] + kept
    profile = dict(new.profile or {})
    if "memory" in (old.profile or {}):
        profile["memory"] = old.profile["memory"]
    profile["remeasure"] = {"of_run": old.id, "timed_metrics": sorted(TIMED_METRICS),
                            "kept_from_old_run": sorted({m.metric for m in kept}),
                            "note": f"only the timed windows were taken again; memory figures are run {old.id}'s"
                                    " (its peak includes the prediction pass, which this run reused)"}
    store.evaluations.set_metrics(new.id, [MetricValue(m.dataset, m.metric, m.value, m.unit, m.deterministic)
                                           for m in values], RunChange(profile=profile))
    return store.evaluations.get(new.id)


def remeasure(store: Store, workspace: Workspace, run_id: int, *, runner: Runner | None = None,
              client: DockerClient | None = None, progress: ProgressFn | None = None,
              cancel: CancelToken | None = None) -> Remeasured:
    """Re-take run ``run_id``'s timed windows as a new run (see the module docstring)."""
    recover_stale(store)
    old = store.evaluations.get(run_id)
    if old.status != "succeeded":
        raise EvaluationError(f"run {run_id} is {old.status}: only a succeeded run's timed windows can be taken"
                              f" again (finish it with 'dynadesk eval --resume {run_id}')", verdict="refused")
    old_folder = RunFolder(Path(old.run_dir)) if old.run_dir else None
    if old_folder is None or not old_folder.has_spec():
        raise RunFolderError(f"run {run_id} has no run folder with a spec: nothing to re-measure with")
    request = request_of(old)
    request = request.with_image(old.image_id)  # the very image, by Id, not the tag it had
    run = runner or make_runner(request, client)
    run.check_ready()
    image = run.image_id()
    if old.image_id and image != old.image_id:
        raise EvaluationError(f"run {run_id} ran in evaluator image {old.image_id}, but this runner has {image}:"
                              " a re-measurement must use the same image", verdict="refused")
    if old.evaluator_version and old.evaluator_version != evaluator_version():
        raise EvaluationError(f"run {run_id} ran evaluator {old.evaluator_version[:19]}, this installation has"
                              f" {evaluator_version()[:19]}: a re-measurement must use the same evaluator",
                              verdict="refused")
    new_id, folder, _model = create_run(store, workspace, request, run)
    try:
        _same_inputs(_spec(old_folder), _spec(folder), run_id)
        _copy_parts(old_folder, folder, run_id)
    except (EvaluationError, RunFolderError) as exc:
        store.evaluations.transition(new_id, "failed", RunChange(verdict="refused", error=str(exc)))
        raise
    store.evaluations.update(new_id, RunChange(run_dir=str(folder.root), evaluator_version=evaluator_version(),
                                               remeasure_of=run_id))
    new = _execute(store, new_id, run, request, progress, cancel, Path(workspace.images_dir),
                   notes=[f"re-measurement of run {run_id}: its predictions are reused, only the timed windows are"
                          " taken again"])
    if new.status == "succeeded":
        new = _keep_untimed(store, old, new)
    return Remeasured(old, new, differences(old, new) if new.status == "succeeded" else [],
                      noisy_in_environment(old.environment), noisy_in_environment(new.environment))
