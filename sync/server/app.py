"""The leaderboard server (FastAPI app factory). Every error answer is JSON ``{"error", "detail"}``.

Malformed input of any kind gets a 4xx naming the problem (one mapping:
:mod:`dynadesk.sync.server.errors`). There is one upload path per document kind
(:mod:`dynadesk.sync.server.ingest`, cheapest checks first); its CPU-bound part runs in a
process pool sized to the cores (:mod:`dynadesk.sync.server.pool`, started and ended with the app),
behind per-address and per-key rate limits and a bound on uploads admitted at once (then 503), so
board reads keep their latency under a flood of uploads.

The routes are one module per resource (``routes_*.py``, ``html_routes``, ``snapshot_routes``, ``rate_routes``),
each an ``APIRouter`` whose routes name what they need through the typed aliases of
:mod:`dynadesk.sync.server.deps`; :func:`create_app` builds the one :class:`ServerState` and assembles them.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Callable
from contextlib import asynccontextmanager
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from pathlib import Path

import anyio
from fastapi import FastAPI, Request
from fastapi.exceptions import RequestValidationError
from fastapi.responses import JSONResponse
from starlette.datastructures import MutableHeaders
from starlette.exceptions import HTTPException as StarletteHTTPException
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from dynadesk.errors import ConfigError, DynaDeskError
from dynadesk.ratelimit import Limiter
from dynadesk.sync.format.keys import load_or_create_server_key
from dynadesk.sync.server import (
    html_routes,
    rate_routes,
    routes_board,
    routes_docs,
    routes_documents,
    routes_log,
    routes_tasks,
    routes_uploads,
    snapshot_routes,
)
from dynadesk.sync.server.answers import SECURITY_HEADERS, error_answer, refusal
from dynadesk.sync.server.board_view import BoardView, OffRequestPath
from dynadesk.sync.server.db import ServerDB
from dynadesk.sync.server.deps import ServerState
from dynadesk.sync.server.dialect import is_postgres
from dynadesk.sync.server.ingest import UploadChecks
from dynadesk.sync.server.limits import DEFAULT_LIMITS, UploadLimits, parse_limits
from dynadesk.sync.server.pool import UploadPool, default_processes
from dynadesk.sync.server.task_registry import LiveRules, LiveTasks

__all__ = ["SECURITY_HEADERS", "SecurityHeaders", "ServerOptions", "app_from_env", "create_app", "default_key_path"]

# One router per resource, in the order their routes are matched and documented. Uploads first: every router
# before the matching one costs each request a few microseconds of matching, and uploads are the CPU-bound path
# (issue 50 item 4); their two exact POST paths shadow nothing.
ROUTERS = (routes_uploads.router, html_routes.router, snapshot_routes.router, rate_routes.router, routes_docs.router,
           routes_tasks.router, routes_documents.router, routes_board.router, routes_log.router)


def _now() -> datetime:
    return datetime.now(UTC)


@dataclass(frozen=True)
class ServerOptions:
    """How one app checks uploads: the tasks folder (default: the bundled tasks), the clock skew a bundle's time may
    have, the clock, the proxies whose ``X-Forwarded-For`` the address limit honours, each key's byte quota (default:
    the ingest's), and the upload pool's processes (default: one per core; 0: checks in the serving process)."""

    tasks_dir: Path | None = None
    max_skew: timedelta = timedelta(minutes=5)
    clock: Callable[[], datetime] = field(default=_now)
    trusted_proxies: tuple[str, ...] = ()
    key_quota_bytes: int | None = None
    verify_processes: int | None = None


class SecurityHeaders:
    """Pure ASGI middleware putting :data:`SECURITY_HEADERS` on every answer that lacks them. (Starlette's
    ``@app.middleware("http")`` wraps each request in extra tasks and streams: about 0.25 ms of CPU a request,
    a sixth of an upload's.) It also hands the two upload paths straight to their endpoints
    (:data:`routes_uploads.DIRECT`), under the same outer middleware (errors, body limit) and headers."""

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

        upload = routes_uploads.DIRECT.get(scope["path"]) if scope["method"] == "POST" else None
        if upload is not None and not scope.get("root_path"):  # see routes_uploads.DIRECT
            request = Request(scope, receive)
            answer = await upload(request, request.app.state.server)
            await answer(scope, receive, send_with_headers)
            return
        await self.app(scope, receive, send_with_headers)


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
    options = ServerOptions(trusted_proxies=proxies,
                            key_quota_bytes=int(os.environ["DYNADESK_SERVER_KEY_QUOTA"])
                            if os.environ.get("DYNADESK_SERVER_KEY_QUOTA") else None,
                            verify_processes=int(os.environ["DYNADESK_SERVER_VERIFY_PROCESSES"])
                            if os.environ.get("DYNADESK_SERVER_VERIFY_PROCESSES") else None)
    return create_app(os.environ["DYNADESK_SERVER_DB"], os.environ.get("DYNADESK_SERVER_KEY") or None,
                      limits=parse_limits(address, key), options=options)


def create_app(db_path: str | Path, key_path: str | Path | None = None, *, limits: UploadLimits = DEFAULT_LIMITS,
               options: ServerOptions | None = None) -> FastAPI:
    """Build the app over one server database; the server key is created next to it on first use."""
    state = _server_state(db_path, key_path, limits, options or ServerOptions())

    @asynccontextmanager
    async def lifespan(_app: FastAPI) -> AsyncIterator[None]:
        state.upload_pool.start()
        yield
        state.upload_pool.shutdown()  # checks under way finish; their processes end with the app
        state.off_path.shutdown()
        if state.db.checkpointer is not None:  # copy the WAL into the database file before the process ends
            state.db.checkpointer.stop()
        if state.db.postgres:  # hand the pooled connections back to the server
            state.db.close()

    app = FastAPI(title="DynaDesk leaderboard", version="1",
                  description="Signed score bundles, Dynascore boards and a transparency log.",
                  docs_url=None, redoc_url=None, lifespan=lifespan)
    app.state.server = state
    app.state.db = state.db
    app.state.upload_pool = state.upload_pool
    _add_error_answers(app)
    app.add_middleware(SecurityHeaders)
    for router in ROUTERS:
        app.include_router(router)
    routes_board.document_tasks(app, state.tasks)
    return app


def _server_state(db_path: str | Path, key_path: str | Path | None, limits: UploadLimits,
                  options: ServerOptions) -> ServerState:
    """The database, tasks, board view, upload checks and limits one app serves with."""
    key_file = key_path or default_key_path(db_path)  # a PostgreSQL board must name its key
    db = ServerDB(db_path, background_checkpoint=True)
    server_key = load_or_create_server_key(key_file)
    tasks = LiveTasks(db, options.tasks_dir)  # bundled + registered by file (seen without a restart)
    rules = LiveRules(tasks)
    processes = options.verify_processes
    upload_pool = UploadPool(default_processes() if processes is None else processes)
    checks = UploadChecks(tasks, rules, Limiter(limits.per_key, "uploads from key {who}"), options.max_skew,
                          pool=upload_pool)
    if options.key_quota_bytes is not None:
        checks.key_quota_bytes = options.key_quota_bytes
    off_path = OffRequestPath()
    return ServerState(db=db, tasks=tasks, rules=rules, view=BoardView(db, tasks, rules, defer=off_path),
                       off_path=off_path, checks=checks, upload_pool=upload_pool,
                       upload_threads=anyio.CapacityLimiter(upload_pool.bound),
                       address_limiter=Limiter(limits.per_address, "uploads from address {who}"),
                       trusted_proxies=frozenset(options.trusted_proxies), server_key=server_key,
                       clock=options.clock)


def _add_error_answers(app: FastAPI) -> None:
    """Every error answer is the one JSON object ``{"error", "detail"}``."""

    @app.exception_handler(StarletteHTTPException)
    async def _http(request: Request, exc: StarletteHTTPException) -> JSONResponse:
        return error_answer(exc.status_code, "http_error", str(exc.detail))

    @app.exception_handler(RequestValidationError)
    async def _invalid(request: Request, exc: RequestValidationError) -> JSONResponse:
        problems = "; ".join(f"{'.'.join(str(p) for p in e.get('loc', ()))}: {e.get('msg')}" for e in exc.errors())
        return error_answer(422, "invalid_request", problems)

    @app.exception_handler(DynaDeskError)
    async def _domain(request: Request, exc: DynaDeskError) -> JSONResponse:
        return refusal(exc)
