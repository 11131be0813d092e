"""Dynabench / ANLI JSON lines: ``uid``, ``context``, ``hypothesis``, ``label`` spelled e/n/c.

The published ANLI rows also carry ``reason``, ``tag``, ``model_label``,
``emturk``, ``genre`` ...; every field the task has no place for is kept
under ``metadata``, so nothing of the source is lost and the round trip is exact.
"""

from __future__ import annotations

from typing import Any

from dynadesk.formats.schema import apply_aliases
from dynadesk.tasks import Task

_OWN = ("id", "tags", "metadata")


def split_extras(task: Task, row: dict[str, Any], drop: tuple[str, ...] = ()) -> dict[str, Any]:
    """Keep the task's fields; move every other field (bar ``drop``) under ``metadata``."""
    keep = {"id", *task.input_names, task.gold_field, "tags"}
    out = {k: v for k, v in row.items() if k in keep}
    meta = dict(row["metadata"]) if isinstance(row.get("metadata"), dict) else {}
    meta.update({k: v for k, v in row.items() if k not in keep and k != "metadata" and k not in drop})
    if "metadata" in row and not isinstance(row["metadata"], dict):
        out["metadata"] = row["metadata"]  # let validation name the bad field
    elif meta:
        out["metadata"] = meta
    return out


def convert_dynabench(task: Task, row: dict[str, Any]) -> dict[str, Any]:
    return split_extras(task, apply_aliases(task, row))
