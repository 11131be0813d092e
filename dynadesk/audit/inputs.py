"""What was evaluated and where: the local model folder, datasets and evaluator image against a bundle.

Each function returns :class:`~dynadesk.audit.report.Check` rows; a difference
names both digests and says how to obtain the right artefact.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from dynadesk.audit.report import DIFFERS, ENVIRONMENT, IDENTICAL, INPUT, NOT_COMPARABLE, Check
from dynadesk.errors import DynaDeskError, ModelError, NotFoundError
from dynadesk.sync.format.parts import Dataset
from dynadesk.sync.format.payload import Payload

if TYPE_CHECKING:
    from dynadesk.orchestration.daemon import DockerClient
    from dynadesk.store import Store

DEFAULT_DATA_PREFIX = "vader-"  # datasets the bundled recipe recreates


@dataclass
class ModelLocation:
    """The local folder the audit compared (None when there is none) and its digest."""

    folder: Path | None
    digest: str | None


def locate_model(store: Store, payload: Payload, model_path: str | Path | None) -> tuple[ModelLocation, str]:
    """The folder to audit: ``model_path``, else the workspace's model of the bundle's name."""
    if model_path is not None:
        return ModelLocation(Path(model_path).expanduser().resolve(), None), "given with --model"
    name = payload.model.name
    try:
        record = store.models.get(name)
    except NotFoundError:
        return ModelLocation(None, None), f"no model named '{name}' in this workspace"
    return ModelLocation(Path(record.path), None), f"the workspace's model '{name}'"


def check_model(store: Store, payload: Payload, model_path: str | Path | None) -> tuple[Check, ModelLocation]:
    """Tree digest of the local model folder against ``payload.model.digest``."""
    from dynadesk.models.registry import tree_digest

    expected = payload.model.digest
    loc, source = locate_model(store, payload, model_path)
    if loc.folder is None:
        return Check("model.digest", INPUT, NOT_COMPARABLE, expected, None,
                     f"{source}: pass --model PATH, the folder the submitter evaluated (ask them for it)"), loc
    try:
        loc.digest = tree_digest(loc.folder)
    except ModelError as exc:
        return Check("model.digest", INPUT, NOT_COMPARABLE, expected, None, f"{source}: {exc}"), loc
    if loc.digest == expected:
        return Check("model.digest", INPUT, IDENTICAL, expected, loc.digest, f"{loc.folder} ({source})"), loc
    return Check("model.digest", INPUT, DIFFERS, expected, loc.digest,
                 f"the files in {loc.folder} ({source}) are not the ones evaluated: some file was added, removed or "
                 "changed; get the exact folder from the submitter and compare with 'dynadesk models show'"), loc


def _how_to_get(d: Dataset, task: str) -> str:
    if d.name.startswith(DEFAULT_DATA_PREFIX):
        return "recreate the bundled sentiment data with 'dynadesk data fetch-default'"
    return (f"ask the submitter for the file and run 'dynadesk data import FILE --task {task} --name {d.name}"
            f" --split {d.split}'")


def check_datasets(store: Store, payload: Payload) -> list[Check]:
    """Each bundle dataset by name and digest in the workspace; says which are missing and how to get them."""
    task = payload.task
    by_digest: dict[str, str] | None = None
    checks = []
    for d in payload.datasets:
        field = f"datasets[{d.name}].digest"
        try:
            local = store.datasets.get(d.name)
        except NotFoundError:
            if by_digest is None:
                by_digest = {s.digest: s.name for s in store.datasets.list()}
            other = by_digest.get(d.digest)
            note = (f"missing here, but '{other}' has the same digest: a re-run needs it under the name "
                    f"'{d.name}' (predictions carry the dataset name)" if other else
                    f"missing from this workspace: {_how_to_get(d, task)}")
            checks.append(Check(field, INPUT, NOT_COMPARABLE, d.digest, None, note))
            continue
        if local.digest == d.digest and local.size == d.size:
            checks.append(Check(field, INPUT, IDENTICAL, d.digest, local.digest, f"{local.size} examples"))
        else:
            checks.append(Check(field, INPUT, DIFFERS, d.digest, local.digest,
                                f"the workspace's '{d.name}' ({local.size} examples; the bundle says {d.size})"
                                f" is another version of the data: {_how_to_get(d, task)} (under another name)"))
    return checks


def check_evaluator_code(payload: Payload) -> Check:
    """The recorded evaluator code version against this host's (what a local re-run runs)."""
    from dynadesk.evaluator.schema import evaluator_version

    expected, actual = payload.evaluator.version, evaluator_version()
    if expected is None:
        return Check("evaluator.version", ENVIRONMENT, NOT_COMPARABLE, None, actual, "the bundle records none")
    if expected == actual:
        return Check("evaluator.version", ENVIRONMENT, IDENTICAL, expected, actual, "this host's evaluator code")
    return Check("evaluator.version", ENVIRONMENT, DIFFERS, expected, actual,
                 "this host's evaluator code differs: a local re-run runs other code (check out the recorded version)")


def rebuild_command(evaluator: dict[str, Any]) -> str:
    """The build command that reproduces the recorded image Id: the epoch is baked into the image config."""
    epoch = evaluator.get("source_date_epoch")
    return "dynadesk image build" + (f" --epoch {epoch}" if isinstance(epoch, int) and not isinstance(epoch, bool)
                                     else "")


def rebuild_hint(version: str | None, evaluator: dict[str, Any] | None = None) -> str:
    """How an auditor rebuilds the recorded image; ``evaluator`` is the payload's (its build epoch and inputs)."""
    evaluator = evaluator or {}
    command = rebuild_command(evaluator)
    hint = f"rebuild it with '{command}' from a checkout whose evaluator version is {version}"
    if "--epoch" in command:
        inputs = evaluator.get("input_digest")
        return (hint + " (the build is reproducible: the same inputs" + (f" — input digest {inputs}, shown by "
                "'dynadesk image show' —" if inputs else "") + " and the recorded SOURCE_DATE_EPOCH give the same "
                "image Id) and compare the Id")
    return (hint + " (the build is reproducible, but this bundle does not record the build's SOURCE_DATE_EPOCH, "
            "which is baked into the image config: without the same --epoch the Id differs) and compare the Id")


def check_image(payload: Payload, client: DockerClient | None = None) -> Check:
    """Is the evaluator image with the recorded Id in Docker; if not, which Id does the local one have?"""
    from dynadesk.orchestration.daemon import docker_client, has_image, image_id_of
    from dynadesk.orchestration.image import image_tag

    expected, version = payload.evaluator.image_digest, payload.evaluator.version
    evaluator = payload.evaluator.to_json()
    if expected is None:
        return Check("evaluator.image_digest", ENVIRONMENT, NOT_COMPARABLE, None, None,
                     f"the run used the {payload.runner.kind} runner, not an image")
    try:
        client = client or docker_client()
        if has_image(client, expected):
            return Check("evaluator.image_digest", ENVIRONMENT, IDENTICAL, expected, expected,
                         "an image with this Id (the digest of its config) is loaded in Docker")
        tag = image_tag(version) if version else None
        local = image_id_of(client, tag) if tag else None
    except DynaDeskError as exc:
        return Check("evaluator.image_digest", ENVIRONMENT, NOT_COMPARABLE, expected, None,
                     f"Docker is not usable here ({str(exc)[:200]}); {rebuild_hint(version, evaluator)}")
    if local is not None:
        return Check("evaluator.image_digest", ENVIRONMENT, DIFFERS, expected, local,
                     f"the local image {tag} has another Id; {rebuild_hint(version, evaluator)}")
    return Check("evaluator.image_digest", ENVIRONMENT, NOT_COMPARABLE, expected, None,
                 f"no image with this Id here; {rebuild_hint(version, evaluator)}")

