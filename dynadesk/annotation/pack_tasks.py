"""The task definitions an annotation pack carries, and the receiver's check of them.

A pack names its tasks by name; for a lab's own task that name means nothing to a workspace that
lacks the file. So a pack carries ``tasks``: each task's parsed definition and canonical digest
(optional in the body: packs made before it are still read). Merging is refused, naming the digest,
when the receiver does not have the task or defines it differently.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from dynadesk.errors import NotFoundError
from dynadesk.tasks import get_task, task_digest


def task_definitions(names: Iterable[str]) -> dict[str, dict[str, Any]]:
    """``{name: {"digest", "definition"}}`` for the pack's tasks."""
    out = {}
    for name in sorted(set(names)):
        task = get_task(name)
        out[name] = {"digest": task_digest(task), "definition": task.to_dict()}
    return out


def pack_task_problems(body: dict[str, Any]) -> list[str]:
    """One line per task the pack carries that this workspace lacks or defines differently."""
    carried = body.get("tasks")
    if carried is None:
        return []
    if not isinstance(carried, dict):
        return ["pack.tasks: expected an object of task definitions"]
    problems = []
    for name, entry in sorted(carried.items()):
        digest = entry.get("digest") if isinstance(entry, dict) else None
        if not isinstance(digest, str):
            problems.append(f"pack.tasks.{name}: expected {{digest, definition}}")
            continue
        try:
            here = task_digest(get_task(name))
        except NotFoundError:
            problems.append(f"pack.tasks.{name}: this workspace has no task '{name}'; add it first with"
                            f" 'dynadesk tasks add FILE.yaml' (the pack's definition has digest {digest})")
            continue
        if here != digest:
            problems.append(f"pack.tasks.{name}: task '{name}' is defined differently here ({here}) than in the"
                            f" pack ({digest}); the examples would mean other labels")
    return problems
