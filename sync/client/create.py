"""Build a bundle payload from one evaluation run in the workspace database."""

from __future__ import annotations

from dataclasses import asdict
from datetime import datetime
from pathlib import Path
from typing import TYPE_CHECKING, Any

from dynadesk.canonical import file_sha256
from dynadesk.errors import BundleError, DigestMismatch, NotFoundError
from dynadesk.evaluator.metric_registry import tolerances
from dynadesk.orchestration.folder import RunFolder
from dynadesk.sync.format.merkle import read_predictions
from dynadesk.sync.format.timestamps import utc_now_text
from dynadesk.sync.format.tolerances import declare
from dynadesk.tasks import get_task, task_digest

if TYPE_CHECKING:
    from dynadesk.store import Store
    from dynadesk.store.evaluations import QueuePlacement
    from dynadesk.sync.format.envelope import Bundle
    from dynadesk.workspace import Workspace


def served_record(model: Any) -> dict[str, str]:
    """A served model's endpoint (as the submitter reached it), declared model and any weights digest."""
    from dynadesk.evaluator.openai_served import read_endpoint

    return {"endpoint": read_endpoint(Path(model.path), model.manifest), "model": model.manifest["model"],
            **({"weights_digest": model.manifest["weights_digest"]} if "weights_digest" in model.manifest else {})}


def _predictions(run_dir: str | None, recorded: str | None, evaluation_id: int) -> dict[str, Any]:
    if not run_dir:
        raise BundleError(f"evaluation {evaluation_id} has no run folder, so there are no predictions to bundle")
    folder = RunFolder(Path(run_dir))
    path = folder.kept_predictions()
    if path is None:
        raise BundleError(f"evaluation {evaluation_id}: predictions file {folder.predictions_file} is missing")
    sha = file_sha256(path)
    if recorded is not None and recorded.removeprefix("sha256:") != sha:
        raise DigestMismatch(f"evaluation {evaluation_id}: {path} has sha256:{sha}, but the run recorded {recorded}"
                             " (the file changed after the run)")
    tree = read_predictions(path)
    return {"digest": f"sha256:{sha}", "merkle_root": tree.root_hex, "count": tree.count}


def _signed_metrics(ev: Any, evaluation_id: int) -> list[dict[str, Any]]:
    """The metric rows a bundle signs: deterministic ones recomputed from the run folder, never the stored ones.

    An orchestration run folder (``spec/spec.json``, ``data/``, ``out/predictions.jsonl``) is scored again
    by the host (``dynadesk.orchestration.recompute``); a stored deterministic figure that differs from it
    (an edited ``metric_values`` row) refuses the bundle, naming the metric and both values. Measured
    figures are the stored ones (they were bounded at store time). A run whose folder cannot be re-scored
    (no ``spec/spec.json``, say) is refused, naming what is missing: nothing it stores could be checked."""
    from dynadesk.orchestration.recompute import ResultMismatch, has_spec, stored_rows_checked

    if not has_spec(ev.run_dir):
        where = f"{Path(ev.run_dir) / 'spec' / 'spec.json'} is missing" if ev.run_dir else "it has no run folder"
        raise BundleError(f"evaluation {evaluation_id}: refusing to sign: {where}, so the host cannot recompute "
                          "its metrics from its predictions (only runs made by 'dynadesk eval' can be bundled)")
    stored = [{"dataset": m.dataset, "metric": m.metric, "value": m.value, "unit": m.unit,
               "deterministic": m.deterministic} for m in ev.metrics]
    try:
        return stored_rows_checked(ev.run_dir, stored)
    except ResultMismatch as exc:
        raise BundleError(f"evaluation {evaluation_id}: refusing to sign: {exc}") from exc


def build_payload(store: Store, evaluation_id: int, key_fingerprint: str,
                  now: datetime | None = None) -> dict[str, Any]:
    """Collect every signed field from the store and the run folder (raises if the run is not bundleable)."""
    ev = store.evaluations.get(evaluation_id)
    if ev.status != "succeeded":
        raise BundleError(f"evaluation {evaluation_id} is '{ev.status}'; only succeeded runs can be bundled")
    if not ev.metrics:
        raise BundleError(f"evaluation {evaluation_id} has no metric values")
    model = store.models.get_by_id(ev.model_id)
    datasets = []
    for name in ev.datasets:
        try:
            ds = store.datasets.get(name)
        except NotFoundError:
            raise BundleError(f"evaluation {evaluation_id} used dataset '{name}', which is no longer in the"
                              " workspace, so its digest cannot be stated") from None
        datasets.append({"name": ds.name, "split": ds.split, "digest": ds.digest, "size": ds.size,
                         **dataset_labels(store, ds)})
    predictions = _predictions(ev.run_dir, ev.predictions_digest, evaluation_id)  # the recorded file, before re-scoring
    evaluator: dict[str, Any] = {"image_digest": ev.image_id, "version": ev.evaluator_version}
    if ev.image_id and ev.image_build is not None:  # Docker runs: what rebuilds the image Id (image build --epoch)
        evaluator.update(ev.image_build.to_dict())
    return {
        "created_at": utc_now_text(now),
        "task": ev.task,
        "model": {"name": model.name, "digest": model.digest,
                  **({"lineage": model.manifest["lineage"]} if model.manifest.get("lineage") else {}),
                  **({"served": served_record(model)} if model.kind == "openai-served" else {})},
        "datasets": datasets,
        "evaluator": evaluator,
        "runner": {"kind": ev.runner, "sandboxed": ev.sandboxed},
        "environment": ev.environment,
        "seeds": {"seed": ev.worker.seed},
        # what the worker was given (the request: below, once); a SQuAD 2.0 run's null threshold only when set, the
        # backend only when not torch (absent means torch: a torch run's bundle keeps the bytes it always had)
        "worker_settings": {k: v for k, v in asdict(ev.worker).items() if (k != "null_threshold" or v is not None)
                            and (k != "backend" or v != "torch")},
        "metrics": _signed_metrics(ev, evaluation_id),
        "predictions": predictions,
        "submitter": {"key_fingerprint": key_fingerprint},
        "evaluation_id": ev.id,
        "tolerances": declare([m.metric for m in ev.metrics if not m.deterministic], tolerances()),
        "task_digest": task_digest(get_task(ev.task)),  # which definition of the task these scores are for
        **({"request": ev.request} if ev.request else {}),  # what an audit re-run replays
        **signed_intervals(ev.profile),
        **_worker(ev.queue),
    }


def dataset_labels(store: Store, ds: Any) -> dict[str, Any]:
    """The optional labels of a dataset entry: ``answerable_only`` (imported without its unanswerable questions,
    so not SQuAD 2.0 as published) and ``robustness_suites`` (the suite set(s) its robustness rests on:
    ``dynadesk``, DynaDesk's own, or ``dynaboard-augly``, the reference's). Absent when they do not apply."""
    from dynadesk.scoring.perturb import robustness_suite_sets

    out: dict[str, Any] = {}
    if getattr(ds, "answerable_only", False):
        out["answerable_only"] = True
    suites = robustness_suite_sets(store, ds.name)
    if suites:
        out["robustness_suites"] = suites
    return out


def signed_intervals(profile: dict[str, Any]) -> dict[str, Any]:
    """``{"intervals": [...], "outcomes": [...]}`` from the run's host-computed bootstrap (none for older runs)."""
    out: dict[str, Any] = {}
    for key in ("intervals", "outcomes"):  # outcomes: the compact per-example results a paired test reads
        stored = profile.get(key) if isinstance(profile, dict) else None
        if isinstance(stored, dict) and stored:
            out[key] = [{"dataset": name, **stored[name]} for name in sorted(stored)]
    if sum(len(str(o.get("data", ""))) for o in out.get("outcomes", [])) > MAX_OUTCOME_CHARS:
        del out["outcomes"]  # test sets too large to carry within the bundle's 1 MiB limit: no paired tests
    return out


MAX_OUTCOME_CHARS = 512 * 1024  # about 190,000 examples over all test sets


def _worker(queue: QueuePlacement | None) -> dict[str, Any]:
    """``{"worker": {name, key_fingerprint}}`` for a queued run (the key that signed its result), else nothing."""
    if queue is None or not queue.worker_key:
        return {}
    return {"worker": {"name": str(queue.worker or "?"), "key_fingerprint": queue.worker_key}}


def create_bundle(workspace: Workspace, store: Store, evaluation_id: int, passphrase: str | None = None,
                  out: str | Path | None = None, now: datetime | None = None) -> Bundle:
    """Sign the run's bundle with the workspace key, write it to ``bundles/`` (and ``out``) and queue it."""
    from dynadesk.sync.format.envelope import sign_payload
    from dynadesk.sync.format.keys import PRIVATE_NAME, key_info, load_private_key

    info = key_info(workspace.keys_dir)
    key = load_private_key(Path(workspace.keys_dir) / PRIVATE_NAME, passphrase)
    bundle = sign_payload(build_payload(store, evaluation_id, info.fingerprint, now), key)
    path = Path(workspace.bundles_dir) / f"{bundle.id}.json"
    for target in [path] + ([Path(out)] if out is not None else []):
        try:
            target.parent.mkdir(parents=True, exist_ok=True)
            target.write_bytes(bundle.raw)
        except OSError as exc:
            raise BundleError(f"cannot write bundle file {target}: {exc}") from exc
    store.bundles.add(bundle.id, bundle.raw, evaluation_id=evaluation_id, task=bundle.task,
                      model_name=bundle.model_name, key_fingerprint=bundle.key_fingerprint,
                      created_at=bundle.payload.created_at, path=str(path))
    return bundle
