"""Run a bundle's evaluation again with the recorded settings and seeds (through dynadesk.orchestration).

The re-run replays the signed :class:`~dynadesk.orchestration.request.RunRequest`
and is stored with purpose ``audit`` (``dynadesk runs show ID``; never a board entry),
in the recorded image (looked up by its Id) or with the local runner when asked.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from dynadesk.cancel import CancelToken
    from dynadesk.orchestration.daemon import DockerClient
    from dynadesk.progress import ProgressFn
    from dynadesk.store import Store
    from dynadesk.store.evaluations import EvaluationRecord
    from dynadesk.workspace import Workspace

from dataclasses import replace
from pathlib import Path
from typing import Any

from dynadesk.audit.inputs import ModelLocation, rebuild_hint
from dynadesk.errors import AuditError, ConfigError, DynaDeskError
from dynadesk.orchestration.request import RunRequest, legacy_request, runner_image
from dynadesk.sync.format.payload import Payload


def recorded_request(payload: Payload, model_name: str, runner: str, image: str | None) -> RunRequest:
    """The request the bundle signed, replayed for ``model_name`` as an audit re-run (never a board entry).

    A version-2 bundle signs it as ``payload.request``; a version-1 bundle inside its ``settings``, or, made
    before requests were stored, only as the flat settings, which are read as such."""
    try:
        if payload.request is not None:
            signed = RunRequest.from_dict(payload.request.to_json())
        elif payload.settings is None:
            raise ConfigError("the bundle carries no run request (its run was recorded before requests, with "
                              "settings that do not allow rebuilding one)")
        elif "request" in payload.settings:  # version 1: its free settings object (raw JSON) held the request
            signed = RunRequest.from_dict(payload.settings["request"])
        else:
            signed = legacy_request(model_name, payload.dataset_names, runner, dict(payload.settings))
        seed = payload.seeds.get("seed", signed.settings.seed)
        return replace(signed, model=model_name, runner=runner, image=image, purpose="audit",
                       datasets=tuple(payload.dataset_names),
                       settings=replace(signed.settings, seed=seed))
    except ConfigError as exc:
        raise AuditError(f"the bundle's run request is not understood here: {exc}") from None


def model_for_rerun(store: Store, payload: Payload, loc: ModelLocation) -> str:
    """A registered model name for the audited folder (registered as ``<name>.audit-<digest>`` if needed)."""
    from dynadesk.models.registry import register_model

    if loc.folder is None or loc.digest is None:
        raise AuditError("no local model folder to re-run: pass --model PATH")
    for m in store.models.list(payload.task):
        if Path(m.path) == loc.folder and m.digest == loc.digest:
            return m.name
    name = f"{payload.model.name[:80]}.audit-{loc.digest.split(':')[-1][:12]}"
    return register_model(store, loc.folder, payload.task, name=name).name


def rerun(store: Store, workspace: Workspace, payload: Payload, loc: ModelLocation, runner: str | None = None,
          client: DockerClient | None = None, progress: ProgressFn | None = None,
          cancel: CancelToken | None = None) -> EvaluationRecord:
    """Evaluate again and return the stored run; raises :class:`AuditError` when it cannot be done.

    cancelling ``cancel`` stops the re-run; the run is stored ``cancelled``."""
    from dynadesk.orchestration.evaluate import evaluate

    kind = runner or payload.runner.kind
    try:
        image = runner_image(kind, payload.evaluator.image_digest)  # a runner in the image: the very one signed
    except ConfigError as exc:
        raise AuditError(f"cannot re-run here: {exc}") from exc
    if image is not None:
        _require_image(image, payload.evaluator.version, client, payload.evaluator.to_json())
    names = payload.dataset_names
    missing = [n for n in names if not store.datasets.exists(n)]
    if missing:
        raise AuditError(f"datasets {', '.join(missing)} are not in this workspace (see the datasets checks)")
    model_name = model_for_rerun(store, payload, loc)
    request = recorded_request(payload, model_name, kind, image)
    try:
        record = evaluate(store, workspace, request, client=client, progress=progress, cancel=cancel)
    except AuditError:
        raise
    except DynaDeskError as exc:
        raise AuditError(f"the re-run could not start: {exc}") from exc
    if record.status != "succeeded":
        raise AuditError(f"the re-run (run {record.id}) ended '{record.status}' ({record.verdict}): {record.error}")
    return record


def _require_image(image: str, version: str | None, client: DockerClient | None,
                   evaluator: dict[str, Any] | None = None) -> None:
    from dynadesk.orchestration.daemon import docker_client, has_image

    try:
        present = has_image(client or docker_client(), image)
    except DynaDeskError as exc:
        raise AuditError(f"cannot re-run in the recorded image: {exc}") from exc
    if not present:
        raise AuditError(f"the recorded evaluator image {image} is not in Docker: {rebuild_hint(version, evaluator)};"
                         " or re-run with --runner local")
