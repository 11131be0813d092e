"""``POST /api/bundles`` and ``POST /api/attestations``: the one upload path of each document kind.

The body is bounded; a request not signed by a registered key is charged to its address's bucket, a signed one only
to its key's (so an anonymous flood from the same address or proxy never blocks a registered key); then the
CPU-bound checks run in a worker thread or the upload pool (off the event loop, :mod:`dynadesk.sync.server.ingest`),
or, for a small body to an SQLite board, on the loop itself (:func:`on_the_loop`)."""

from __future__ import annotations

from collections.abc import Callable, Coroutine
from datetime import datetime
from typing import Any

from anyio.to_thread import run_sync
from fastapi import APIRouter, Request, Response
from fastapi.responses import JSONResponse
from fastapi.routing import APIRoute

from dynadesk.errors import DynaDeskError
from dynadesk.sync.format.attestation import FORMAT as ATTESTATION_FORMAT
from dynadesk.sync.format.envelope import FORMAT as BUNDLE_FORMAT
from dynadesk.sync.format.envelope import MAX_BUNDLE_BYTES
from dynadesk.sync.server import openapi_models as oa
from dynadesk.sync.server.answers import error_answer, refusal
from dynadesk.sync.server.db import ServerDB
from dynadesk.sync.server.deps import ServerState, State
from dynadesk.sync.server.ingest import UploadChecks, ingest, ingest_attestation, verified_signer
from dynadesk.sync.server.limits import client_address
from dynadesk.sync.server.pool import INLINE_MAX_BYTES


class UploadRoute(APIRoute):
    """An upload route's request handler: the endpoint called with the request and the app's :class:`ServerState`
    directly. Its signature (``request``, ``state: State``) still makes the OpenAPI document, but FastAPI's
    per-request dependency solving (about 35 us of CPU, a tenth of a small bundle's checks) is skipped: these
    endpoints take nothing else, and read their body themselves (:func:`read_body`)."""

    def get_route_handler(self) -> Callable[[Request], Coroutine[Any, Any, Response]]:
        endpoint = self.endpoint

        async def handler(request: Request) -> Response:
            answer: Response = await endpoint(request, request.app.state.server)
            return answer

        return handler


router = APIRouter(route_class=UploadRoute)


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


async def receive(state: ServerState, request: Request,
                  accept: Callable[[ServerDB, UploadChecks, bytes, datetime], dict[str, Any]],
                  fmt: str = BUNDLE_FORMAT) -> JSONResponse:
    """Bounded body, then :func:`checked_upload` in one worker thread (see the module's text)."""
    body = await read_body(request)
    if body is None:
        return error_answer(413, "too_large", f"a document may hold at most {MAX_BUNDLE_BYTES} bytes")
    origin = (request.client.host if request.client else "unknown", request.headers.get("x-forwarded-for"))
    try:
        with state.upload_pool.admit():  # a bounded number of uploads waiting for or in the check pool; then 503
            if on_the_loop(state, len(body)):
                answer = checked_upload(state, accept, body, fmt, origin)
            else:
                answer = await run_sync(checked_upload, state, accept, body, fmt, origin,
                                        limiter=state.upload_threads)
    except DynaDeskError as exc:
        return refusal(exc)
    return JSONResponse({"status": "accepted", **answer}, status_code=201)


def on_the_loop(state: ServerState, size: int) -> bool:
    """Whether an upload is checked and stored right here on the event loop, not in a worker thread.

    A small body to an SQLite board while no flood is on (:meth:`UploadPool.inline`): its checks and its write
    take ~2 ms of CPU, and the hop to a thread and back cost ~10 % of that (0.44-0.50 of the bare check rate per
    CPU-second threaded, 0.54 here, three paired runs; issue 50 item 4), the GIL handed over twice. The loop is
    held for that one upload (and for the other writer's commit, if the database's write lock is held: each
    holds it for one short transaction). PostgreSQL's writes are network round trips, a large body's checks take
    longer and a flood's go to the pool: those keep the thread, so the loop goes on serving reads meanwhile."""
    return not state.db.postgres and size <= INLINE_MAX_BYTES and state.upload_pool.inline(size)


def checked_upload(state: ServerState, accept: Callable[[ServerDB, UploadChecks, bytes, datetime], dict[str, Any]],
                   body: bytes, fmt: str, origin: tuple[str, str | None]) -> dict[str, Any]:
    """The limit, the checks and the write of one upload, on the loop (:func:`on_the_loop`) or in one worker
    thread: one hop off the event loop per upload, not two (each hop cost ~0.1 ms of CPU, a sixth of a small
    bundle's checks). A body not signed by a registered key is charged to its address's bucket (``origin``: the
    peer and its ``X-Forwarded-For``); a signed one only to its key's, in ``accept``."""
    if verified_signer(state.db, body, fmt) is None:
        state.address_limiter.take(client_address(*origin, state.trusted_proxies))
    return accept(state.db, state.checks, body, state.clock())


@router.post("/api/bundles", status_code=201, summary="Upload one signed bundle (its exact bytes as the body)",
             response_model=None, responses=oa.answers(oa.AcceptedBundle, 400, 403, 409, 413, 422, 429, 503,
                                                       status=201, ok_doc="Accepted and logged"),
             openapi_extra=oa.envelope_body("dynadesk-bundle"))
async def upload(request: Request, state: State) -> JSONResponse:
    return await receive(state, request, ingest)


@router.post("/api/attestations", status_code=201, summary="Upload one signed audit attestation (auditor keys only)",
             response_model=None, responses=oa.answers(oa.AcceptedAttestation, 400, 403, 404, 409, 413, 422, 429,
                                                       503, status=201, ok_doc="Accepted and logged"),
             openapi_extra=oa.envelope_body("dynadesk-attestation"))
async def upload_attestation(request: Request, state: State) -> JSONResponse:
    return await receive(state, request, ingest_attestation, ATTESTATION_FORMAT)


# The upload endpoints by exact path, for :class:`dynadesk.sync.server.app.SecurityHeaders` to call directly: a POST
# there skips Starlette's exception middleware, the exit stack, the router's matching across every router and the
# request/response wrappers (measured: 0.445 -> 0.457 of the bare check rate per CPU-second, issue 50 item 4),
# which these routes need none of: they take only the request and the state (UploadRoute), read their own body
# and answer every refusal themselves. The routes above stay for the OpenAPI document and for an app mounted under
# a root path.
DIRECT: dict[str, Callable[[Request, ServerState], Coroutine[Any, Any, JSONResponse]]] = {
    "/api/bundles": upload, "/api/attestations": upload_attestation}
