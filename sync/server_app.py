"""The leaderboard server (FastAPI app factory). Every error answer is JSON ``{"error", "detail"}``.

Malformed input of any kind gets a 4xx naming the problem; the only
accepted upload path is parse -> key lookup -> signature -> time -> board -> store.
"""

from __future__ import annotations

import json
import re
from collections.abc import AsyncIterator, Callable
from contextlib import asynccontextmanager
from datetime import UTC, datetime, timedelta
from importlib import resources
from pathlib import Path
from typing import Any

from fastapi import FastAPI, Query, Request
from fastapi.exceptions import RequestValidationError
from fastapi.responses import HTMLResponse, JSONResponse, Response
from starlette.exceptions import HTTPException as StarletteHTTPException
from starlette.types import ASGIApp, Receive, Scope, Send

from dynadesk.errors import BundleError, DynaDeskError, NotFoundError, ValidationError
from dynadesk.sync import board as _board
from dynadesk.sync.bundle import MAX_BUNDLE_BYTES, utc_now_text
from dynadesk.sync.ingest import ingest, status_for
from dynadesk.sync.keys import fingerprint, load_or_create_server_key, public_raw
from dynadesk.sync.server_db import ServerDB
from dynadesk.sync.translog import sign_head
from dynadesk.tasks import load_tasks

# Swagger UI for /docs is served from this server (the fastapi-offline package ships the assets), never a CDN:
# the board runs offline. ``validatorUrl: null`` stops Swagger UI from fetching a badge from swagger.io.
_DOCS_ASSETS = {"swagger-ui-bundle.js": "application/javascript", "swagger-ui.css": "text/css",
                "favicon.png": "image/png"}
_DOCS_PREFIX = "/docs-assets"


def _docs_asset(name: str) -> bytes:
    """One Swagger UI file from the installed ``fastapi-offline`` package (read, never fetched)."""
    import importlib.util

    spec = importlib.util.find_spec("fastapi_offline")
    if spec is None or spec.origin is None:
        raise NotFoundError("the API docs' Swagger UI files are not installed (pip install fastapi-offline);"
                            " the OpenAPI document itself is at /openapi.json")
    return (Path(spec.origin).parent / "static" / name).read_bytes()

_BUNDLE_ID = re.compile(r"^[0-9a-f]{64}$")
SQLITE_MAX_INT = 2 ** 63 - 1  # a larger query integer cannot be bound (it was a 500)
_STATIC = {"board.js": "application/javascript", "board.css": "text/css"}


class UploadFastPath:
    """Pure-ASGI hot path for ``POST /api/bundles``: reads the body (with the size limit) and calls the
    same ``handler`` as the route, skipping routing and the per-request middleware stack, which cost
    about as much CPU as verifying the bundle. Everything else passes through unchanged."""

    def __init__(self, app: ASGIApp, handler: Callable[[bytes], tuple[int, dict[str, Any]]]) -> None:
        self.app, self.handler = app, handler

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http" or scope["method"] != "POST" or scope["path"] != "/api/bundles":
            await self.app(scope, receive, send)
            return
        chunks, size, more = [], 0, True
        while more:
            message = await receive()
            if message["type"] == "http.disconnect":
                return
            chunk = message.get("body", b"")
            size += len(chunk)
            if size > MAX_BUNDLE_BYTES:
                status, answer = 413, {"error": "too_large",
                                       "detail": f"a bundle may hold at most {MAX_BUNDLE_BYTES} bytes"}
                break
            chunks.append(chunk)
            more = message.get("more_body", False)
        else:
            status, answer = self.handler(b"".join(chunks))
        data = json.dumps(answer).encode()
        await send({"type": "http.response.start", "status": status,
                    "headers": [(b"content-type", b"application/json"), (b"content-length", str(len(data)).encode())]})
        await send({"type": "http.response.body", "body": data})


def _error(status: int, code: str, detail: str) -> JSONResponse:
    return JSONResponse({"error": code, "detail": detail}, status_code=status)


def default_key_path(db_path: str | Path) -> Path:
    return Path(str(db_path) + ".server.key")


def app_from_env() -> FastAPI:
    """Factory for ``uvicorn --factory`` worker processes: paths come from the environment."""
    import os

    return create_app(os.environ["DYNADESK_SERVER_DB"], os.environ.get("DYNADESK_SERVER_KEY") or None)


def create_app(db_path: str | Path, key_path: str | Path | None = None, *, tasks_dir: Path | None = None,
               max_skew: timedelta = timedelta(minutes=5),
               clock: Callable[[], datetime] = lambda: datetime.now(UTC)) -> FastAPI:
    """Build the app over one server database; the server key is created next to it on first use."""
    db = ServerDB(db_path, background_checkpoint=True)
    server_key = load_or_create_server_key(key_path or default_key_path(db_path))
    tasks = load_tasks(tasks_dir)
    task_names = set(tasks)

    @asynccontextmanager
    async def lifespan(_app: FastAPI) -> AsyncIterator[None]:
        yield
        if db.checkpointer is not None:  # copy the WAL into the database file before the process ends
            db.checkpointer.stop()

    app = FastAPI(title="DynaDesk leaderboard", version="1",
                  description="Signed score bundles, Dynascore boards and a transparency log.",
                  docs_url=None, redoc_url=None, lifespan=lifespan)
    app.state.db = db
    prepared: dict[str, tuple[list[Any], _board.PreparedBoard]] = {}

    @app.exception_handler(StarletteHTTPException)
    async def _http(request: Request, exc: StarletteHTTPException) -> JSONResponse:
        return _error(exc.status_code, "http_error", str(exc.detail))

    @app.exception_handler(RequestValidationError)
    async def _invalid(request: Request, exc: RequestValidationError) -> JSONResponse:
        problems = "; ".join(f"{'.'.join(str(p) for p in e.get('loc', ()))}: {e.get('msg')}" for e in exc.errors())
        return _error(422, "invalid_request", problems)

    @app.exception_handler(DynaDeskError)
    async def _domain(request: Request, exc: DynaDeskError) -> JSONResponse:
        if isinstance(exc, NotFoundError):
            return _error(404, "not_found", str(exc))
        if isinstance(exc, ValidationError):
            return _error(400, "invalid_request", str(exc))
        status, code = status_for(exc)
        return _error(status, code, str(exc))

    @app.get("/", response_class=HTMLResponse, include_in_schema=False)
    def index() -> HTMLResponse:
        return HTMLResponse(resources.files("dynadesk.sync").joinpath("static/index.html").read_text("utf-8"))

    @app.get("/static/{name}", include_in_schema=False)
    def static(name: str) -> Response:
        if name not in _STATIC:
            raise NotFoundError(f"no static file {name!r}")
        data = resources.files("dynadesk.sync").joinpath(f"static/{name}").read_bytes()
        return Response(data, media_type=_STATIC[name])

    @app.get("/docs", response_class=HTMLResponse, include_in_schema=False)
    def docs() -> HTMLResponse:
        from fastapi.openapi.docs import get_swagger_ui_html

        return get_swagger_ui_html(openapi_url=str(app.openapi_url), title=f"{app.title} - API",
                                   swagger_js_url=f"{_DOCS_PREFIX}/swagger-ui-bundle.js",
                                   swagger_css_url=f"{_DOCS_PREFIX}/swagger-ui.css",
                                   swagger_favicon_url=f"{_DOCS_PREFIX}/favicon.png",
                                   swagger_ui_parameters={"validatorUrl": None})

    @app.get(_DOCS_PREFIX + "/{name}", include_in_schema=False)
    def docs_asset(name: str) -> Response:
        if name not in _DOCS_ASSETS:
            raise NotFoundError(f"no API docs file {name!r}")
        return Response(_docs_asset(name), media_type=_DOCS_ASSETS[name],
                        headers={"Cache-Control": "public, max-age=86400"})

    @app.get("/api/tasks", summary="Tasks on this board and the datasets each accepts")
    def list_tasks() -> list[dict[str, Any]]:
        by_task: dict[str, list[Any]] = {}
        for d in db.datasets():
            by_task.setdefault(d["task"], []).append(d)
        return [{"name": t.name, "title": t.title, "metric": t.metric, "datasets": by_task.get(t.name, [])}
                for t in sorted(tasks.values(), key=lambda t: t.name)]

    def accept_upload(body: bytes) -> tuple[int, dict[str, Any]]:
        try:
            return 201, {"status": "accepted", **ingest(db, body, task_names, clock(), max_skew)}
        except BundleError as exc:
            status, code = status_for(exc)
            return status, {"error": code, "detail": str(exc)}

    refused = {"description": "Refused; `error` is a machine-readable code, `detail` names the problem",
               "content": {"application/json": {"schema": {
                   "type": "object", "required": ["error", "detail"],
                   "properties": {"error": {"type": "string"}, "detail": {"type": "string"}}}}}}

    @app.post("/api/bundles", status_code=201, summary="Upload one signed bundle (its exact bytes as the body)",
              responses={code: refused for code in (400, 403, 409, 413, 422)},
              openapi_extra={"requestBody": {"required": True, "description": "The bundle file's exact bytes"
                                             " (RFC 8785 JSON, see docs/bundle-format.md)",
                                             "content": {"application/json": {"schema": {"type": "object"}}}}})
    async def upload(request: Request) -> JSONResponse:
        # Normally answered by UploadFastPath below; kept as the documented, equivalent route.
        body = await request.body()
        if len(body) > MAX_BUNDLE_BYTES:
            return _error(413, "too_large", f"a bundle may hold at most {MAX_BUNDLE_BYTES} bytes")
        status, answer = accept_upload(body)
        return JSONResponse(answer, status_code=status)

    app.add_middleware(UploadFastPath, handler=accept_upload)

    @app.get("/api/bundles", summary="Accepted bundles, oldest first")
    def list_bundles(task: str | None = None, after: int = Query(0, ge=0, le=SQLITE_MAX_INT),
                     limit: int = Query(100, ge=1, le=1000)) -> list[dict[str, Any]]:
        return db.list_bundles(task, limit, after)

    @app.get("/api/bundles/{bundle_id}", summary="The exact signed bytes of one bundle, for auditors")
    def get_bundle(bundle_id: str) -> Response:
        if not _BUNDLE_ID.match(bundle_id):
            return _error(400, "invalid_request", "a bundle id is 64 lowercase hex digits")
        return Response(db.bundle_raw(bundle_id), media_type="application/json")

    @app.get("/api/leaderboard/{task}", summary="Dynascore board; weight.<metric>=N and dataset.<name>=N re-weight;"
             " limit (default 100) and offset page the rows")
    def leaderboard(task: str, request: Request) -> JSONResponse:
        if task not in task_names:
            raise NotFoundError(f"no task '{task}' on this board (known: {', '.join(sorted(task_names))})")
        mw, dw = _board.parse_weights(request.query_params)
        limit, offset = _board.parse_page(request.query_params)
        rows = db.board_rows(task)  # the same list object while the stored board is unchanged
        cached = prepared.get(task)
        if cached is None or cached[0] is not rows:
            cached = prepared[task] = (rows, _board.prepare(rows))
        return JSONResponse(_board.compute_board(task, cached[1], db.datasets(task), mw, dw, limit, offset))

    def _head() -> dict[str, Any]:
        size, head = db.log_head()
        return sign_head(server_key, size, head, utc_now_text(clock()))

    @app.get("/api/log", summary="Transparency log entries and the server-signed head")
    def log(start: int = Query(1, ge=1, le=SQLITE_MAX_INT), limit: int = Query(1000, ge=1, le=10000)) -> dict[str, Any]:
        head = _head()
        return {"entries": db.log_entries(start, limit), "head": head}

    @app.get("/api/log/head", summary="The server-signed head of the transparency log")
    def log_head() -> dict[str, Any]:
        return _head()

    @app.get("/api/server-key", summary="The server's log-signing public key")
    def server_public_key() -> dict[str, Any]:
        pub = public_raw(server_key)
        return {"public_key": pub.hex(), "fingerprint": fingerprint(pub)}

    return app
