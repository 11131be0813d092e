"""Registering a model served at an OpenAI-compatible endpoint (``dynadesk models add --served URL --model NAME``).

The registration probes the endpoint (``GET /v1/models``) and refuses a model name it does not list, then
writes a folder under the workspace's models folder holding only the manifest (evaluator/openai_served.py says what
it holds and how prediction works) and registers that folder like any other: its digest covers the endpoint,
the declared model and the weights digest the user gives. Runs of such a model are served, not sandboxed
(:func:`is_served`).
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import TYPE_CHECKING, Any

from dynadesk.errors import ConfigError, ModelError
from dynadesk.evaluator import adapters as _ad
from dynadesk.evaluator import openai_served as _served
from dynadesk.names import check_name
from dynadesk.store.models import ModelRecord
from dynadesk.tasks import get_task

if TYPE_CHECKING:
    from dynadesk.store import Store

SERVED = _served.SERVED
SERVED_NOTE = "served, not sandboxed"


def is_served(kind: str) -> bool:
    """True for a kind whose answers come from an endpoint the evaluator neither sees nor pins."""
    return kind == SERVED


def served_names(store: Store) -> frozenset[str]:
    """The registered models whose runs and answers are marked "served, not sandboxed" wherever they are shown
    (the app's run list and leaderboard, the hub's targets)."""
    return frozenset(m.name for m in store.models.list() if is_served(m.kind))


def runner_text(runner: str, sandboxed: bool, served: bool) -> str:
    """How a run's runner is shown in a list: ``docker (sandbox)``, ``local``, ``local (served, not sandboxed)``."""
    return f"{runner} ({SERVED_NOTE})" if served else runner + (" (sandbox)" if sandboxed else "")


def served_manifest(url: str, model: str, task_name: str, weights_digest: str | None = None) -> dict[str, Any]:
    """The manifest of a served model for a task (checked, not yet probed)."""
    task = get_task(task_name)
    manifest: dict[str, Any] = {"task": task.name, "kind": SERVED, "inputs": list(task.input_names),
                                "model": model}
    if task.kind.chooses_labels:
        manifest["labels"] = list(task.labels)
    else:
        manifest["context_field"] = task.span_of
    if weights_digest:
        manifest["weights_digest"] = weights_digest
    try:
        _ad.check_manifest(manifest, "--served")
    except _ad.AdapterError as exc:
        raise ConfigError(str(exc)) from exc
    if _served.bad_endpoint(url):
        raise ConfigError(f"--served {url!r:.80}: 'endpoint' must be the server's http(s) base URL "
                          "(e.g. http://127.0.0.1:8000)")
    return manifest


def register_served(store: Store, models_dir: Path, url: str, model: str, task_name: str, *, name: str,
                    weights_digest: str | None = None, replace: bool = False) -> ModelRecord:
    """Probe the endpoint, write the folder ``models_dir/served/<name>`` and register it.

    The same model name and weights digest at another endpoint give the same model digest (evaluator/openai_served.py):
    ``replace`` then points the registered model at the new endpoint, as an auditor does."""
    from dynadesk.models.registry import register_model

    check_name(name, "model name (pass --name)")
    manifest = served_manifest(url, model, task_name, weights_digest)
    try:
        listed = _served.listed_models(url)
    except _ad.AdapterError as exc:
        raise ModelError(str(exc)) from exc
    if model not in listed:
        raise ModelError(f"{url}: the endpoint lists no model '{model}' (it lists {', '.join(listed) or 'none'}); "
                         "pass --model with one of those names")
    folder = Path(models_dir) / "served" / name
    try:
        folder.mkdir(parents=True, exist_ok=True)
        (folder / _ad.MANIFEST_NAME).write_text(json.dumps(manifest, indent=2, sort_keys=True) + "\n",
                                                 encoding="utf-8")
        (folder / _served.ENDPOINT_FILE).write_text(json.dumps({"endpoint": url}) + "\n", encoding="utf-8")
    except OSError as exc:
        raise ModelError(f"{folder}: cannot write the served model's manifest: {exc}") from exc
    return register_model(store, folder, task_name, name=name, replace=replace,
                          info={"served": SERVED_NOTE, "endpoint": url, "declared_model": model})
