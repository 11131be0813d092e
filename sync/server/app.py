"""The leaderboard server (FastAPI app factory). Every error answer is JSON ``{"error", "detail"}``.

Malformed input of any kind gets a 4xx naming the problem (one mapping:
:mod:`dynadesk.sync.server.errors`). There is one upload path per document kind
(:mod:`dynadesk.sync.server.ingest`, cheapest checks first); its CPU-bound part runs in a
process pool sized to the cores (:mod:`dynadesk.sync.server.pool`, started and ended with the app),
behind per-address and per-key rate limits and a bound on uploads admitted at once (then 503), so
board reads keep their latency under a flood of uploads.
"""

from __future__ import annotations

import re
from collections.abc import AsyncIterator, Callable
from contextlib import asynccontextmanager
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import anyio
from anyio.to_thread import run_sync
from fastapi import FastAPI, Query, Request
from fastapi import Path as PathParam
from fastapi.exceptions import RequestValidationError
from fastapi.responses import HTMLResponse, JSONResponse, Response
from starlette.datastructures import MutableHeaders
from starlette.exceptions import HTTPException as StarletteHTTPException
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from dynadesk.errors import ConfigError, DynaDeskError, NotFoundError
from dynadesk.sync.format.attestation import FORMAT as ATTESTATION_FORMAT
from dynadesk.sync.format.envelope import FORMAT as BUNDLE_FORMAT
from dynadesk.sync.format.envelope import MAX_BUNDLE_BYTES
from dynadesk.sync.format.keys import fingerprint, load_or_create_server_key, public_raw
from dynadesk.sync.format.timestamps import utc_now_text
from dynadesk.sync.format.translog import sign_head
from dynadesk.sync.server import openapi_models as oa
from dynadesk.sync.server.board_view import BoardView, OffRequestPath
from dynadesk.sync.server.db import ServerDB
from dynadesk.sync.server.dialect import is_postgres
from dynadesk.sync.server.errors import answer_for
from dynadesk.sync.server.html_routes import add_page_routes
from dynadesk.sync.server.ingest import UploadChecks, ingest, ingest_attestation, verified_signer
from dynadesk.sync.server.limits import DEFAULT_LIMITS, Limiter, UploadLimits, client_address, parse_limits
from dynadesk.sync.server.pool import UploadPool, default_processes
from dynadesk.sync.server.rate_routes import add_rate_routes
from dynadesk.sync.server.snapshot_routes import add_snapshot_routes
from dynadesk.sync.server.task_registry import LiveRules, LiveTasks, definition

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


# On every answer: only this server's own scripts and styles, never framed (clickjacking), no type sniffing.
SECURITY_HEADERS = {
    "Content-Security-Policy": "default-src 'self'; img-src 'self' data:; object-src 'none'; base-uri 'none';"
                               " form-action 'self'; frame-ancestors 'none'",
    "X-Content-Type-Options": "nosniff",
    "X-Frame-Options": "DENY",
    "Referrer-Policy": "no-referrer",
}

def _docs_policy(html: bytes) -> str:
    """The security policy with one exception: Swagger UI's own inline start-up script, allowed by its hash
    (nothing else inline runs, and every asset still comes from this server)."""
    import base64
    import hashlib

    inline = re.findall(rb"<script>(.*?)</script>", html, flags=re.S)
    hashes = " ".join(f"'sha256-{base64.b64encode(hashlib.sha256(js).digest()).decode()}'" for js in inline)
    return SECURITY_HEADERS["Content-Security-Policy"] + f"; script-src 'self' {hashes}"


class SecurityHeaders:
    """Pure ASGI middleware putting :data:`SECURITY_HEADERS` on every answer that lacks them. (Starlette's
    ``@app.middleware("http")`` wraps each request in extra tasks and streams: about 0.25 ms of CPU a request,
    a sixth of an upload's.)"""

    def __init__(self, app: ASGIApp):
        self.app = app

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return

        async def send_with_headers(message: Message) -> None:
            if message["type"] == "http.response.start":
                headers = MutableHeaders(scope=message)
                for name, value in SECURITY_HEADERS.items():
                    headers.setdefault(name, value)
            await send(message)

        await self.app(scope, receive, send_with_headers)


def _error(status: int, code: str, detail: str) -> JSONResponse:
    return JSONResponse({"error": code, "detail": detail}, status_code=status)


def _refusal(exc: DynaDeskError) -> JSONResponse:
    status, body, headers = answer_for(exc)
    return JSONResponse(body, status_code=status, headers=headers)


async def read_body(request: Request) -> bytes | None:
    """The request body, or None as soon as it is known to exceed :data:`MAX_BUNDLE_BYTES` (nothing more is read)."""
    declared = request.headers.get("content-length", "")
    if declared.isdigit() and int(declared) > MAX_BUNDLE_BYTES:
        return None
    chunks, size = [], 0
    async for chunk in request.stream():
        size += len(chunk)
        if size > MAX_BUNDLE_BYTES:
            return None
        chunks.append(chunk)
    return b"".join(chunks)


def default_key_path(db_path: str | Path) -> Path:
    """The server key next to a SQLite file; a PostgreSQL board has no folder of its own, so it must be given."""
    if is_postgres(db_path):
        raise ConfigError("with a PostgreSQL --db, give the server's log-signing key with --key FILE"
                          " (every serve process of one board must sign with the same key)")
    return Path(str(db_path) + ".server.key")


def app_from_env() -> FastAPI:
    """Factory for ``uvicorn --factory`` worker processes: paths come from the environment."""
    import os

    address, _, key = os.environ.get("DYNADESK_SERVER_LIMITS", DEFAULT_LIMITS.text()).partition(",")
    proxies = tuple(p for p in os.environ.get("DYNADESK_SERVER_TRUSTED_PROXIES", "").split(",") if p)
    return create_app(os.environ["DYNADESK_SERVER_DB"], os.environ.get("DYNADESK_SERVER_KEY") or None,
                      limits=parse_limits(address, key), trusted_proxies=proxies,
                      key_quota_bytes=int(os.environ["DYNADESK_SERVER_KEY_QUOTA"])
                      if os.environ.get("DYNADESK_SERVER_KEY_QUOTA") else None,
                      verify_processes=int(os.environ["DYNADESK_SERVER_VERIFY_PROCESSES"])
                      if os.environ.get("DYNADESK_SERVER_VERIFY_PROCESSES") else None)


def create_app(db_path: str | Path, key_path: str | Path | None = None, *, tasks_dir: Path | None = None,
               max_skew: timedelta = timedelta(minutes=5), limits: UploadLimits = DEFAULT_LIMITS,
               clock: Callable[[], datetime] = lambda: datetime.now(UTC),
               trusted_proxies: tuple[str, ...] = (), key_quota_bytes: int | None = None,
               verify_processes: int | None = None) -> FastAPI:
    """Build the app over one server database; the server key is created next to it on first use.
    ``X-Forwarded-For`` is honoured for the address limit only from ``trusted_proxies``. ``verify_processes``:
    the upload pool's processes (default: one per core; 0: checks run in the serving process's threads)."""
    key_file = key_path or default_key_path(db_path)  # a PostgreSQL board must name its key
    db = ServerDB(db_path, background_checkpoint=True)
    server_key = load_or_create_server_key(key_file)
    tasks = LiveTasks(db, tasks_dir)  # bundled + registered by file (dynadesk-server tasks add: seen without a restart)
    rules = LiveRules(tasks)
    upload_pool = UploadPool(default_processes() if verify_processes is None else verify_processes)
    checks = UploadChecks(tasks, rules, Limiter(limits.per_key, "uploads from key {who}"), max_skew, pool=upload_pool)
    if key_quota_bytes is not None:
        checks.key_quota_bytes = key_quota_bytes
    address_limiter = Limiter(limits.per_address, "uploads from address {who}")
    trusted = frozenset(trusted_proxies)
    upload_threads = anyio.CapacityLimiter(upload_pool.bound)  # each admitted upload waits for the pool in one

    @asynccontextmanager
    async def lifespan(_app: FastAPI) -> AsyncIterator[None]:
        upload_pool.start()
        yield
        upload_pool.shutdown()  # checks under way finish; their processes end with the app
        off_path.shutdown()
        if db.checkpointer is not None:  # copy the WAL into the database file before the process ends
            db.checkpointer.stop()
        if db.postgres:  # hand the pooled connections back to the server
            db.close()

    app = FastAPI(title="DynaDesk leaderboard", version="1",
                  description="Signed score bundles, Dynascore boards and a transparency log.",
                  docs_url=None, redoc_url=None, lifespan=lifespan)
    app.state.db = db
    app.state.upload_pool = upload_pool
    off_path = OffRequestPath()
    view = BoardView(db, tasks, rules, defer=off_path)

    def _head() -> dict[str, Any]:
        size, head = db.log_head()
        return sign_head(server_key, size, head, utc_now_text(clock()))

    @app.exception_handler(StarletteHTTPException)
    async def _http(request: Request, exc: StarletteHTTPException) -> JSONResponse:
        return _error(exc.status_code, "http_error", str(exc.detail))

    @app.exception_handler(RequestValidationError)
    async def _invalid(request: Request, exc: RequestValidationError) -> JSONResponse:
        problems = "; ".join(f"{'.'.join(str(p) for p in e.get('loc', ()))}: {e.get('msg')}" for e in exc.errors())
        return _error(422, "invalid_request", problems)

    @app.exception_handler(DynaDeskError)
    async def _domain(request: Request, exc: DynaDeskError) -> JSONResponse:
        return _refusal(exc)

    app.add_middleware(SecurityHeaders)

    add_page_routes(app, view, _head)
    add_snapshot_routes(app, view)  # issue 36: signed board snapshots
    add_rate_routes(app, view)  # issue 44: signed rate editions

    @app.get("/docs", response_class=HTMLResponse, include_in_schema=False)
    def docs() -> HTMLResponse:
        from fastapi.openapi.docs import get_swagger_ui_html

        page = get_swagger_ui_html(openapi_url=app.openapi_url or "/openapi.json", title=f"{app.title} - API",
                                   swagger_js_url=f"{_DOCS_PREFIX}/swagger-ui-bundle.js",
                                   swagger_css_url=f"{_DOCS_PREFIX}/swagger-ui.css",
                                   swagger_favicon_url=f"{_DOCS_PREFIX}/favicon.png",
                                   swagger_ui_parameters={"validatorUrl": None})
        page.headers["Content-Security-Policy"] = _docs_policy(bytes(page.body))
        return page

    @app.get(_DOCS_PREFIX + "/{name}", include_in_schema=False)
    def docs_asset(name: str) -> Response:
        if name not in _DOCS_ASSETS:
            raise NotFoundError(f"no API docs file {name!r}")
        return Response(_docs_asset(name), media_type=_DOCS_ASSETS[name],
                        headers={"Cache-Control": "public, max-age=86400"})

    @app.get("/api/tasks", summary="Tasks on this board and the datasets each accepts",
             response_model=None, responses=oa.answers(list[oa.TaskInfo], 503))
    def list_tasks() -> list[dict[str, Any]]:
        by_task: dict[str, list[dict[str, Any]]] = {}
        for d in db.datasets():
            by_task.setdefault(d["task"], []).append(d)
        return [{"name": t.name, "title": t.title, "metric": t.metric, "datasets": by_task.get(t.name, []),
                 "submissions": len(db.board_rows(t.name)), "definition": definition(t)}
                for t in sorted(tasks.values(), key=lambda t: t.name)]

    async def receive(request: Request, accept: Callable[[ServerDB, UploadChecks, bytes, datetime], dict[str, Any]],
                      fmt: str = BUNDLE_FORMAT) -> JSONResponse:
        """Bounded body; a request not signed by a registered key is charged to its address's bucket, a signed one
        only to its key's (so an anonymous flood from the same address or proxy never blocks a registered key);
        then the CPU-bound checks in the upload pool (off the event loop)."""
        body = await read_body(request)
        if body is None:
            return _error(413, "too_large", f"a document may hold at most {MAX_BUNDLE_BYTES} bytes")
        try:
            with upload_pool.admit():  # a bounded number of uploads waiting for or in the check pool; then 503
                if await run_sync(verified_signer, db, body, fmt, limiter=upload_threads) is None:
                    peer = request.client.host if request.client else "unknown"
                    address_limiter.take(client_address(peer, request.headers.get("x-forwarded-for"), trusted))
                answer = await run_sync(accept, db, checks, body, clock(), limiter=upload_threads)
        except DynaDeskError as exc:
            return _refusal(exc)
        return JSONResponse({"status": "accepted", **answer}, status_code=201)

    @app.post("/api/bundles", status_code=201, summary="Upload one signed bundle (its exact bytes as the body)",
              response_model=None, responses=oa.answers(oa.AcceptedBundle, 400, 403, 409, 413, 422, 429, 503,
                                                        status=201, ok_doc="Accepted and logged"),
              openapi_extra=oa.envelope_body("dynadesk-bundle"))
    async def upload(request: Request) -> JSONResponse:
        return await receive(request, ingest)

    @app.post("/api/attestations", status_code=201, summary="Upload one signed audit attestation (auditor keys only)",
              response_model=None, responses=oa.answers(oa.AcceptedAttestation, 400, 403, 404, 409, 413, 422, 429,
                                                        503, status=201, ok_doc="Accepted and logged"),
              openapi_extra=oa.envelope_body("dynadesk-attestation"))
    async def upload_attestation(request: Request) -> JSONResponse:
        return await receive(request, ingest_attestation, ATTESTATION_FORMAT)

    @app.get("/api/attestations/{attestation_id}", summary="The exact signed bytes of one attestation",
             response_model=None, responses=oa.answers(None, 400, 404, 422, 503,
                                                       ok_schema=oa.envelope_schema("dynadesk-attestation")))
    def get_attestation(attestation_id: str = PathParam(json_schema_extra=oa.ID_PARAM)) -> Response:
        if not _BUNDLE_ID.match(attestation_id):
            return _error(400, "invalid_request", "an attestation id is 64 lowercase hex digits")
        return Response(db.attestation_raw(attestation_id), media_type="application/json")

    @app.get("/api/bundles", summary="Accepted bundles, oldest first",
             response_model=None, responses=oa.answers(list[oa.BundleListing], 422, 503))
    def list_bundles(task: str | None = None, after: int = Query(0, ge=0, le=SQLITE_MAX_INT),
                     limit: int = Query(100, ge=1, le=1000)) -> list[dict[str, Any]]:
        if task is not None and task not in tasks:
            return []  # no bundle names another task (a NUL byte in it reached PostgreSQL: a 503, found by fuzzing)
        return db.list_bundles(task, limit, after)

    @app.get("/api/bundles/{bundle_id}", summary="The exact signed bytes of one bundle, for auditors",
             response_model=None, responses=oa.answers(None, 400, 404, 422, 503,
                                                       ok_schema=oa.envelope_schema("dynadesk-bundle")))
    def get_bundle(bundle_id: str = PathParam(json_schema_extra=oa.ID_PARAM)) -> Response:
        if not _BUNDLE_ID.match(bundle_id):
            return _error(400, "invalid_request", "a bundle id is 64 lowercase hex digits")
        return Response(db.bundle_raw(bundle_id), media_type="application/json")

    @app.get("/api/leaderboard/{task}", summary="Dynascore board; weight.<metric>=N and dataset.<name>=N re-weight;"
             " hardware_class (a class or 'all'; default: the operator's, see default_class), runner and"
             " sandboxed=yes|no select the rows ranked; stability=yes adds each row's rank range;"
             " limit (default 100) and offset page the rows",
             response_model=None, responses=oa.answers(oa.Leaderboard, 400, 404, 422, 503),
             openapi_extra=oa.board_parameters())
    def leaderboard(request: Request, task: str = PathParam(json_schema_extra=oa.task_param(tasks))) -> JSONResponse:
        return JSONResponse(view.answer(task, request.query_params))

    @app.get("/api/log", summary="Transparency log entries and the server-signed head",
             response_model=None, responses=oa.answers(oa.LogPage, 422, 503))
    def log(start: int = Query(1, ge=1, le=SQLITE_MAX_INT), limit: int = Query(1000, ge=1, le=10000)) -> dict[str, Any]:
        head = _head()
        return {"entries": db.log_entries(start, limit), "head": head}

    @app.get("/api/log/head", summary="The server-signed head of the transparency log",
             response_model=None, responses=oa.answers(oa.SignedHead, 503))
    def log_head() -> dict[str, Any]:
        return _head()

    @app.get("/api/server-key", summary="The server's log-signing public key",
             response_model=None, responses=oa.answers(oa.ServerKey))
    def server_public_key() -> dict[str, Any]:
        pub = public_raw(server_key)
        return {"public_key": pub.hex(), "fingerprint": fingerprint(pub)}

    return app
