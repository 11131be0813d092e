"""The hub's web app (FastAPI): the annotators' page and its JSON API.

Everything it serves comes from this package (``static/``: no CDN, no outside font or script), under a
strict content security policy. Every route but sign-in needs the session cookie (HttpOnly, SameSite
Strict); every writing route also needs the session's CSRF token in ``X-CSRF-Token`` and is rate limited
per session (sign-in: per address, and a cross-origin sign-in is refused). Library calls run on worker
threads: reads and votes on one pool, example creation (which waits for the live prediction) on another,
with at most ``per_model`` requests in flight per target model, so a slow model fills neither pool.
Errors are JSON ``{"error", "detail"}``.
"""

from __future__ import annotations

import asyncio
import functools
from collections.abc import AsyncIterator, Callable
from concurrent.futures import ThreadPoolExecutor
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any, TypeVar
from urllib.parse import urlsplit

from fastapi import FastAPI, Request
from fastapi.responses import FileResponse, JSONResponse, Response
from starlette.exceptions import HTTPException as StarletteHTTPException

from dynadesk.errors import (
    AnnotationError,
    DynaDeskError,
    HubAuthError,
    HubForbiddenError,
    ModelError,
    NotFoundError,
    RateLimitedError,
    ValidationError,
)
from dynadesk.hub import identity
from dynadesk.hub.lead import LEAD_ROLE
from dynadesk.hub.limits import Limiter, Rate
from dynadesk.hub.service import HubCore
from dynadesk.jsonio import loads_bounded
from dynadesk.store.hub import HubSession
from dynadesk.task_sources import one_lookup

COOKIE = "dynadesk_hub"
STATIC = Path(__file__).resolve().parent / "static"
ASSETS = {"hub.js": "text/javascript; charset=utf-8", "lead.js": "text/javascript; charset=utf-8",
          "keys.js": "text/javascript; charset=utf-8", "meta.js": "text/javascript; charset=utf-8",
          "hub.css": "text/css; charset=utf-8"}
MAX_SKIPPED = 200
MAX_BODY = 256 * 1024
DEFAULT_WRITE_RATE = Rate.per_window(60, 60.0)
DEFAULT_SIGNIN_RATE = Rate.per_window(10, 60.0)
# a person's page reads a few times per action; a reading loop is bounded
DEFAULT_READ_RATE = Rate.per_window(300, 60.0)
DEFAULT_PER_MODEL = 16
SECURITY_HEADERS = {
    "Content-Security-Policy": "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self';"
                               " connect-src 'self'; form-action 'self'; base-uri 'none'; frame-ancestors 'none'",
    "X-Content-Type-Options": "nosniff",
    "X-Frame-Options": "DENY",
    "Referrer-Policy": "no-referrer",
}

T = TypeVar("T")

STATUS = [(HubAuthError, 401, "not_signed_in"), (HubForbiddenError, 403, "forbidden"),
          (RateLimitedError, 429, "rate_limited"), (NotFoundError, 404, "not_found"),
          (ValidationError, 422, "invalid"), (AnnotationError, 403, "refused"), (ModelError, 503, "model_error"),
          (DynaDeskError, 400, "error")]


def error_answer(exc: DynaDeskError, sent_cookie: bool = True) -> JSONResponse:
    """The JSON error answer; a 401 clears the session cookie only when the request carried one: a late 401 to a
    cookie-less request (the page's first session check) must not delete the cookie a sign-in set meanwhile."""
    status, kind = next((s, k) for cls, s, k in STATUS if isinstance(exc, cls))
    resp = JSONResponse({"error": kind, "detail": str(exc)}, status_code=status)
    if isinstance(exc, RateLimitedError):
        resp.headers["Retry-After"] = str(exc.retry_after)
    if isinstance(exc, HubAuthError) and sent_cookie:
        resp.delete_cookie(COOKIE, path="/")
    return resp


def _one_lookup(fn: Callable[..., T], *args: Any) -> T:
    """``fn(*args)`` with one task lookup for the whole request (:func:`dynadesk.task_sources.one_lookup`): a create
    asked for its task five times or more, each a glob and stat of the task files and a read of the workspace's."""
    with one_lookup():
        return fn(*args)


def create_app(core: HubCore, *, write_rate: Rate = DEFAULT_WRITE_RATE, signin_rate: Rate = DEFAULT_SIGNIN_RATE,
               per_model: int = DEFAULT_PER_MODEL, io_threads: int = 16, create_threads: int = 64,
               read_rate: Rate = DEFAULT_READ_RATE, secure_cookies: bool = False) -> FastAPI:
    """The app; ``secure_cookies`` (served over TLS) marks the session cookie ``Secure``."""
    io = ThreadPoolExecutor(io_threads, thread_name_prefix="hub-io")
    creates = ThreadPoolExecutor(create_threads, thread_name_prefix="hub-create")
    writes = Limiter(write_rate, "writes from this session")
    signins = Limiter(signin_rate, "sign-in attempts from this address")
    reads = Limiter(read_rate, "reads from this session")
    gates: dict[str, asyncio.Semaphore] = {}
    queued: dict[str, int] = {}

    @asynccontextmanager
    async def lifespan(_app: FastAPI) -> AsyncIterator[None]:
        try:
            yield
        finally:
            io.shutdown(wait=True, cancel_futures=True)
            creates.shutdown(wait=True, cancel_futures=True)
            core.close()

    app = FastAPI(title="DynaDesk hub", docs_url=None, redoc_url=None, openapi_url=None, lifespan=lifespan)
    app.state.core = core

    async def call(pool: ThreadPoolExecutor, fn: Callable[..., T], *args: Any) -> T:
        return await asyncio.get_running_loop().run_in_executor(pool, functools.partial(_one_lookup, fn, *args))

    async def body_of(request: Request) -> dict[str, Any]:
        raw = await request.body()
        if len(raw) > MAX_BODY:
            raise ValidationError(f"the request body has {len(raw)} bytes, over the {MAX_BODY} limit")
        doc = loads_bounded(raw or b"{}", "the request body")
        if not isinstance(doc, dict):
            raise ValidationError("the request body must be a JSON object")
        return doc

    async def session_of(request: Request) -> HubSession:
        return await call(io, core.authenticate, request.cookies.get(COOKIE))

    async def reader(request: Request) -> HubSession:
        """A reading route's checks: the session, then its read rate (a reading loop cannot starve the others)."""
        session = await session_of(request)
        reads.take(f"session:{session.id}")
        return session

    async def writer(request: Request) -> HubSession:
        """A writing route's checks, cheapest first: session, CSRF token, the session's rate."""
        session = await session_of(request)
        identity.check_csrf(str(request.cookies.get(COOKIE)), request.headers.get("x-csrf-token"))
        writes.take(f"session:{session.id}")
        return session

    def me(session: HubSession, token: str) -> dict[str, Any]:
        return {"name": session.name, "role": session.role, "expires_at": session.expires_at,
                "creates": session.role in identity.CREATES,
                "lead": session.role == LEAD_ROLE, "csrf": identity.csrf_token(token)}

    @app.exception_handler(DynaDeskError)
    async def _dynadesk_error(request: Request, exc: DynaDeskError) -> Response:
        return error_answer(exc, COOKIE in request.cookies)

    @app.exception_handler(StarletteHTTPException)
    async def _http_error(_request: Request, exc: StarletteHTTPException) -> Response:
        return JSONResponse({"error": "http", "detail": str(exc.detail)}, status_code=exc.status_code)

    @app.exception_handler(Exception)
    async def _unexpected(_request: Request, exc: Exception) -> Response:
        return JSONResponse({"error": "internal", "detail": f"the hub failed: {type(exc).__name__}: {exc}"},
                            status_code=500)

    @app.middleware("http")
    async def _headers(request: Request, call_next: Callable[[Request], Any]) -> Response:
        resp: Response = await call_next(request)
        resp.headers.update(SECURITY_HEADERS)
        if request.url.path.startswith("/api/"):
            resp.headers["Cache-Control"] = "no-store"
        return resp

    @app.get("/")
    async def page() -> Response:
        return FileResponse(STATIC / "index.html", media_type="text/html; charset=utf-8")

    @app.get("/static/{name}")
    async def asset(name: str) -> Response:
        if name not in ASSETS:
            raise NotFoundError(f"no hub asset '{name}'")
        return FileResponse(STATIC / name, media_type=ASSETS[name])

    @app.post("/api/signin")
    async def signin(request: Request) -> Response:
        origin = request.headers.get("origin")
        if origin and urlsplit(origin).netloc != request.headers.get("host"):
            raise HubForbiddenError(f"sign-in from another site ({origin}) is refused")
        client = request.client.host if request.client else "?"
        signins.take(f"address:{client}")
        body = await body_of(request)
        done = await call(io, core.sign_in, body.get("code", ""), f"{client} {request.headers.get('user-agent', '')}")
        resp = JSONResponse(me(done.session, done.token))
        resp.set_cookie(COOKIE, done.token, max_age=int(core.session_hours * 3600), httponly=True, samesite="strict",
                        path="/", secure=secure_cookies)
        return resp

    @app.post("/api/signout")
    async def signout(request: Request) -> Response:
        session = await writer(request)
        await call(io, core.sign_out, session)
        resp = JSONResponse({"signed_out": session.name})
        resp.delete_cookie(COOKIE, path="/")
        return resp

    @app.get("/api/me")
    async def who(request: Request) -> dict[str, Any]:
        session = await reader(request)
        return me(session, str(request.cookies.get(COOKIE)))

    @app.get("/api/tasks")
    async def tasks(request: Request) -> list[dict[str, Any]]:
        await reader(request)
        return await call(io, core.tasks)

    @app.get("/api/context")
    async def context(request: Request, task: str) -> dict[str, Any]:
        session = await reader(request)
        return {"context": await call(io, core.context, session, task)}

    @app.get("/api/models")
    async def models(request: Request) -> list[dict[str, Any]]:
        await reader(request)
        rows = core.models()
        for r in rows:
            r["waiting"] += queued.get(r["model"], 0)
        return rows

    @app.get("/api/stats")
    async def stats(request: Request, task: str) -> dict[str, Any]:
        session = await reader(request)
        return await call(io, core.stats, session, task)

    @app.get("/api/validate/next")
    async def next_to_validate(request: Request, task: str, seed: int = 0, skip: str = "") -> dict[str, Any]:
        session = await reader(request)
        skipped = frozenset(u for u in skip.split(",") if u)
        if len(skipped) > MAX_SKIPPED:
            raise ValidationError(f"{len(skipped)} skipped examples, over the {MAX_SKIPPED} limit: reload the page")
        return {"example": await call(io, core.next_to_validate, session, task, seed, skipped)}

    @app.get("/api/lead/examples")
    async def lead_examples(request: Request, task: str) -> dict[str, Any]:
        session = await reader(request)
        return await call(io, core.lead_table, session, task)

    @app.post("/api/examples")
    async def create(request: Request) -> dict[str, Any]:
        session = await writer(request)
        body = await body_of(request)
        model = await call(io, core.target_for, session, str(body.get("task", "")))
        gate = gates.setdefault(model, asyncio.Semaphore(per_model))
        queued[model] = queued.get(model, 0) + 1  # waiting for the model's gate (shown as "waiting")
        entered = False
        try:
            async with gate:
                queued[model] -= 1
                entered = True
                return await call(creates, core.create, session, body, model)
        finally:
            if not entered:
                queued[model] -= 1

    @app.post("/api/assist")
    async def assist(request: Request) -> dict[str, Any]:
        session = await writer(request)
        return await call(creates, core.assist, session, await body_of(request))

    @app.post("/api/votes")
    async def vote(request: Request) -> dict[str, Any]:
        session = await writer(request)
        return await call(io, core.vote, session, await body_of(request))

    return app
