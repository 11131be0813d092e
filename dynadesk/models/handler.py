"""Registering a handler model: a folder whose own ``handler.py`` answers (evaluator/handler_adapter.py).

The folder is checked without running any of its code: ``handler.py`` must be there and define the interface
(read from its syntax tree), vendored wheels must be pure Python, and the manifest names the task's labels or
its span field. The code then runs only in the Docker sandbox, or with ``--trust-model-code`` on this machine.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from dynadesk.errors import ModelError
from dynadesk.evaluator import handler_adapter as _handler
from dynadesk.tasks import Task

HANDLER = _handler.HANDLER
HANDLER_FILE = _handler.HANDLER_FILE
SANDBOX_NOTE = ("a handler model runs its own code: only the Docker sandbox runs it (--runner docker), or this "
                "machine with --trust-model-code")


def is_handler_folder(folder: Path) -> bool:
    return (Path(folder) / HANDLER_FILE).is_file()


def handler_manifest(manifest: dict[str, Any], task: Task, labels: list[str] | None) -> dict[str, Any]:
    """A handler folder's default manifest: the task's labels (label tasks) or its span field (span tasks)."""
    if task.kind.chooses_labels:
        if labels and sorted(labels) != sorted(task.labels):
            raise ModelError(f"--labels {','.join(labels)} must list exactly the task labels "
                             f"({', '.join(task.labels)})")
        manifest["labels"] = list(labels or task.labels)
    else:
        manifest["context_field"] = task.span_of
    return manifest


def check_handler_folder(folder: Path) -> None:
    """One line naming what a handler folder lacks: ``handler.py``, its interface, pure-Python wheels."""
    path = Path(folder) / HANDLER_FILE
    if not path.is_file():
        raise ModelError(f"{folder}: not a complete handler model folder; missing {HANDLER_FILE} (the interface: "
                         "load(model_dir, device) and predict(model, batch); see docs/models.md)")
    try:
        source = path.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        raise ModelError(f"{path}: cannot read: {exc}") from exc
    problems = _handler.interface_problems(source, str(path))
    if problems:
        raise ModelError(f"{'; '.join(problems)} (the interface: load(model_dir, device) and predict(model, batch); "
                         "see docs/models.md)")
    impure = _handler.impure_wheels(folder)
    if impure:
        raise ModelError(f"{Path(folder) / _handler.WHEELS_DIR}: {', '.join(impure)} is not a pure-Python wheel "
                         "(…-none-any.whl); the sandbox installs nothing, so vendor pure-Python wheels only")
