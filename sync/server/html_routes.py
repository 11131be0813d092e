"""The board's page routes: ``/`` (the board), ``/static/*``, ``/models/{id}``, ``/bundles/{id}``, ``/log``,
``/snapshots`` (the index of signed snapshots; one snapshot's page is in ``snapshot_routes``).

A page answers bad input with an HTML page naming what is wrong and the matching 4xx status
(the same mapping as the JSON API, :func:`~dynadesk.sync.server.errors.answer_for`), never a 500.
``/`` checks its query before the page loads, so a shared link with a typo says so at once.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping
from importlib import resources

from fastapi import APIRouter, Request
from fastapi.responses import HTMLResponse, Response

from dynadesk.errors import DynaDeskError, NotFoundError, ValidationError
from dynadesk.sync.server import pages
from dynadesk.sync.server.board_view import BoardView
from dynadesk.sync.server.deps import State, View
from dynadesk.sync.server.errors import answer_for

STATIC = {"board.js": "application/javascript", "board.css": "text/css", "charts.js": "application/javascript",
          "views.js": "application/javascript", "details.js": "application/javascript",
          "fit.js": "application/javascript"}
PAGE_ONLY = ("task", "sort", "expand")  # the page's own view state; everything else goes to the board API
_SORT = re.compile(r"^[A-Za-z0-9_.@:-]{1,200}:(asc|desc)$")
_ID = re.compile(r"^[0-9a-f]{64}$")
MAX_LOG_PAGE = 1000


def default_task(view: BoardView) -> str:
    """The task the board opens on: the one with the most submissions (ties: by name)."""
    return min(view.tasks, key=lambda t: (-len(view.db.board_rows(t)), t))


def check_index_query(view: BoardView, params: Mapping[str, str]) -> None:
    """Refuse a board URL the page could not show: unknown task, malformed sort or any bad board parameter."""
    task = params.get("task") or default_task(view)
    view.check_task(task)
    sort = params.get("sort")
    if sort is not None and not _SORT.match(sort):
        raise ValidationError(f"query parameter 'sort' must look like COLUMN:asc or COLUMN:desc, got {sort!r:.60}")
    board_params = {k: v for k, v in params.items() if k not in PAGE_ONLY}
    if board_params:
        view.answer(task, board_params)


def _bundle_id(bundle_id: str) -> str:
    if not _ID.match(bundle_id):
        raise ValidationError(f"a bundle id is 64 lowercase hex digits, got {bundle_id!r:.80}")
    return bundle_id


def _page(build: Callable[[], str]) -> HTMLResponse:
    try:
        return HTMLResponse(build())
    except DynaDeskError as exc:
        status, body, headers = answer_for(exc)
        return HTMLResponse(pages.error_page(status, body["detail"]), status_code=status, headers=headers)


def _int(params: Mapping[str, str], name: str, default: int, hi: int) -> int:
    raw = params.get(name)
    if raw is None:
        return default
    if not raw.isdigit() or not 1 <= int(raw) <= hi:
        raise ValidationError(f"query parameter '{name}' must be an integer from 1 to {hi}, got {raw!r:.40}")
    return int(raw)


router = APIRouter(include_in_schema=False)


@router.get("/", response_class=HTMLResponse)
def index(request: Request, view: View) -> HTMLResponse:
    def build() -> str:
        check_index_query(view, request.query_params)
        return resources.files("dynadesk.sync").joinpath("static/index.html").read_text("utf-8")
    return _page(build)


@router.get("/static/{name}")
def static(name: str) -> Response:
    if name not in STATIC:
        raise NotFoundError(f"no static file {name!r}")
    data = resources.files("dynadesk.sync").joinpath(f"static/{name}").read_bytes()
    return Response(data, media_type=STATIC[name])


@router.get("/models/{bundle_id}", response_class=HTMLResponse)
def model(bundle_id: str, view: View) -> HTMLResponse:
    return _page(lambda: pages.model_page(view, _bundle_id(bundle_id)))


@router.get("/bundles/{bundle_id}", response_class=HTMLResponse)
def bundle(bundle_id: str, view: View) -> HTMLResponse:
    return _page(lambda: pages.bundle_page(view, _bundle_id(bundle_id)))


@router.get("/snapshots", response_class=HTMLResponse)
def snapshots(view: View, task: str | None = None) -> HTMLResponse:
    return _page(lambda: pages.snapshots_index(view, task))


@router.get("/log", response_class=HTMLResponse)
def log(request: Request, state: State) -> HTMLResponse:
    def build() -> str:
        start = _int(request.query_params, "start", 1, 2 ** 62)
        limit = _int(request.query_params, "limit", 200, MAX_LOG_PAGE)
        return pages.log_page(state.view, start, limit, state.head())
    return _page(build)
