"""``/api/leaderboard/{task}``: a task's Dynascore board as JSON (the answer is :class:`BoardView`'s)."""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from fastapi import APIRouter, FastAPI, Request
from fastapi import Path as PathParam
from fastapi.responses import JSONResponse

from dynadesk.sync.server import openapi_models as oa
from dynadesk.sync.server.deps import View

router = APIRouter()
BOARD_PATH = "/api/leaderboard/{task}"


@router.get(BOARD_PATH, summary="Dynascore board; weight.<metric>=N and dataset.<name>=N re-weight;"
            " hardware_class (a class or 'all'; default: the operator's, see default_class), runner and"
            " sandboxed=yes|no select the rows ranked; stability=yes adds each row's rank range;"
            " limit (default 100) and offset page the rows",
            response_model=None, responses=oa.answers(oa.Leaderboard, 400, 404, 422, 503),
            openapi_extra=oa.board_parameters())
def leaderboard(request: Request, view: View, task: str = PathParam()) -> JSONResponse:
    return JSONResponse(view.answer(task, request.query_params))


def document_tasks(app: FastAPI, tasks: Iterable[str]) -> None:
    """The app's tasks (when it is built) as the board's ``task`` path parameter's enum in ``/openapi.json``
    (:func:`~dynadesk.sync.server.openapi_models.task_param`; another name is a described 404)."""
    enum = oa.task_param(tasks)
    build = app.openapi

    def openapi() -> dict[str, Any]:
        fresh = app.openapi_schema is None
        schema = build()
        if fresh:
            for param in schema["paths"][BOARD_PATH]["get"].get("parameters", []):
                if param["name"] == "task" and param["in"] == "path":
                    param["schema"].update(enum)
        return schema

    app.openapi = openapi  # type: ignore[method-assign]  # FastAPI's documented way to amend the schema
