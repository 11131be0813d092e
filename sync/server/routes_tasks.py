"""``/api/tasks``: the tasks on this board (bundled and registered by file) and the datasets each accepts."""

from __future__ import annotations

from typing import Any

from fastapi import APIRouter

from dynadesk.sync.server import openapi_models as oa
from dynadesk.sync.server.deps import DB, Tasks
from dynadesk.sync.server.task_registry import definition

router = APIRouter()


@router.get("/api/tasks", summary="Tasks on this board and the datasets each accepts",
            response_model=None, responses=oa.answers(list[oa.TaskInfo], 503))
def list_tasks(db: DB, tasks: Tasks) -> list[dict[str, Any]]:
    by_task: dict[str, list[dict[str, Any]]] = {}
    for d in db.datasets():
        by_task.setdefault(d["task"], []).append(d)
    return [{"name": t.name, "title": t.title, "metric": t.metric, "datasets": by_task.get(t.name, []),
             "submissions": len(db.board_rows(t.name)), "definition": definition(t)}
            for t in sorted(tasks.values(), key=lambda t: t.name)]
