"""The rate-edition routes: ``/api/rates/{task}`` (the task's current signed rate edition: its exact bytes) and
``/api/rates/{task}/{edition}`` (one edition; an edition never changes). What a workspace scores its own runs with
(``dynadesk leaderboard --rates URL``)."""

from __future__ import annotations

from fastapi import APIRouter, Path
from fastapi.responses import Response

from dynadesk.errors import NotFoundError
from dynadesk.sync.server import openapi_models as oa
from dynadesk.sync.server.deps import View

RATE_EDITION_SCHEMA = {"type": "object", "description": "A signed rate edition (format dynadesk-rate-edition)",
                       "required": ["format", "version", "payload", "signature"]}


router = APIRouter()


@router.get("/api/rates/{task}", summary="The task's current signed rate edition (404 until the operator freezes"
            " one: the board then scores with provisional rates)", response_model=None,
            responses=oa.answers(None, 404, 422, 503, ok_schema=RATE_EDITION_SCHEMA))
def current_rates(task: str, view: View) -> Response:
    view.check_task(task)
    edition = view.rates.current(task)
    if edition is None:
        raise NotFoundError(f"no rate edition of '{task}' has been frozen yet (the board uses provisional rates;"
                            f" the operator freezes them: dynadesk-server rates freeze --task {task})")
    return Response(edition.raw, media_type="application/json")


@router.get("/api/rates/{task}/{edition}", summary="One signed rate edition of the task (never changes)",
            response_model=None, responses=oa.answers(None, 404, 422, 503, ok_schema=RATE_EDITION_SCHEMA))
def one_edition(task: str, view: View, edition: int = Path(ge=1, le=2**63 - 1)) -> Response:
    view.check_task(task)
    return Response(view.rates.get(task, edition).raw, media_type="application/json",
                    headers={"Cache-Control": "public, max-age=31536000, immutable"})
