"""Run a bundle's evaluation again with the recorded settings and seeds (through dynadesk.orchestration).

The re-run is an ordinary stored evaluation run (``dynadesk runs show ID``), in
the recorded image (looked up by its Id) or with the local runner when asked.
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any

from dynadesk.audit.inputs import ModelLocation, rebuild_hint
from dynadesk.errors import AuditError, DynaDeskError

if TYPE_CHECKING:
    from dynadesk.store import Store
    from dynadesk.store.evaluations import EvaluationRecord
    from dynadesk.workspace import Workspace

REQUIRED_SETTINGS = ("batch_size", "seed", "latency_samples", "warmup", "limits")


def recorded_settings(payload: dict[str, Any]) -> dict[str, Any]:
    """The keyword arguments of :func:`dynadesk.orchestration.evaluate.evaluate` the bundle pins."""
    from dynadesk.orchestration.runners import Limits

    s = payload["settings"]
    missing = [k for k in REQUIRED_SETTINGS if k not in s]
    if missing:
        raise AuditError(f"the bundle's settings lack {', '.join(missing)}: its run cannot be repeated exactly")
    try:
        limits = Limits(**s["limits"])
    except TypeError as exc:
        raise AuditError(f"the bundle's settings.limits are not understood here ({exc})") from None
    seed = payload["seeds"].get("seed", s["seed"])
    return {"batch_size": s["batch_size"], "seed": seed, "latency_samples": s["latency_samples"],
            "warmup": s["warmup"], "limits": limits}


def model_for_rerun(store: Store, payload: dict[str, Any], loc: ModelLocation) -> str:
    """A registered model name for the audited folder (registered as ``<name>.audit-<digest>`` if needed)."""
    from dynadesk.models.registry import register_model

    if loc.folder is None or loc.digest is None:
        raise AuditError("no local model folder to re-run: pass --model PATH")
    for m in store.models.list(payload["task"]):
        if Path(m.path) == loc.folder and m.digest == loc.digest:
            return m.name
    name = f"{payload['model']['name'][:80]}.audit-{loc.digest.split(':')[-1][:12]}"
    return register_model(store, loc.folder, payload["task"], name=name).name


def rerun(store: Store, workspace: Workspace, payload: dict[str, Any], loc: ModelLocation, runner: str | None = None,
          client: Any = None, progress: Callable[[dict[str, Any]], None] | None = None,
          cancel: threading.Event | None = None) -> EvaluationRecord:
    """Evaluate again and return the stored run; raises :class:`AuditError` when it cannot be done.

    ``cancel`` (a :class:`threading.Event`) stops the re-run; the run is stored ``cancelled``."""
    from dynadesk.orchestration.evaluate import evaluate

    kind = runner or payload["runner"]["kind"]
    image = payload["evaluator"]["image_digest"] if kind == "docker" else None
    if kind == "docker" and image is not None:
        _require_image(image, payload["evaluator"]["version"], client, payload["evaluator"])
    names = [d["name"] for d in payload["datasets"]]
    missing = [n for n in names if not store.datasets.exists(n)]
    if missing:
        raise AuditError(f"datasets {', '.join(missing)} are not in this workspace (see the datasets checks)")
    model_name = model_for_rerun(store, payload, loc)
    try:
        record = evaluate(store, workspace, model_name, names, runner=kind, image=image, client=client,
                          progress=progress, cancel=cancel, **recorded_settings(payload))
    except AuditError:
        raise
    except DynaDeskError as exc:
        raise AuditError(f"the re-run could not start: {exc}") from exc
    if record.status != "succeeded":
        raise AuditError(f"the re-run (run {record.id}) ended '{record.status}' ({record.verdict}): {record.error}")
    return record


def _require_image(image: str, version: str | None, client: Any, evaluator: dict[str, Any] | None = None) -> None:
    from dynadesk.orchestration.runners import docker_client

    try:
        import docker

        (client or docker_client()).images.get(image)
    except docker.errors.ImageNotFound:
        raise AuditError(f"the recorded evaluator image {image} is not in Docker: {rebuild_hint(version, evaluator)};"
                         " or re-run with --runner local") from None
    except DynaDeskError as exc:
        raise AuditError(f"cannot re-run in the recorded image: {exc}") from exc
