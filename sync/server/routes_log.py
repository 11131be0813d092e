"""``/api/log`` (transparency log entries with the signed head), ``/api/log/head`` and ``/api/server-key`` (the
key that signs the head)."""

from __future__ import annotations

from typing import Any

from fastapi import APIRouter, Query

from dynadesk.sync.format.keys import fingerprint, public_raw
from dynadesk.sync.server import openapi_models as oa
from dynadesk.sync.server.answers import SQLITE_MAX_INT
from dynadesk.sync.server.deps import State

router = APIRouter()


@router.get("/api/log", summary="Transparency log entries and the server-signed head",
            response_model=None, responses=oa.answers(oa.LogPage, 422, 503))
def log(state: State, start: int = Query(1, ge=1, le=SQLITE_MAX_INT),
        limit: int = Query(1000, ge=1, le=10000)) -> dict[str, Any]:
    head = state.head()
    return {"entries": state.db.log_entries(start, limit), "head": head}


@router.get("/api/log/head", summary="The server-signed head of the transparency log",
            response_model=None, responses=oa.answers(oa.SignedHead, 503))
def log_head(state: State) -> dict[str, Any]:
    return state.head()


@router.get("/api/server-key", summary="The server's log-signing public key",
            response_model=None, responses=oa.answers(oa.ServerKey))
def server_public_key(state: State) -> dict[str, Any]:
    pub = public_raw(state.server_key)
    return {"public_key": pub.hex(), "fingerprint": fingerprint(pub)}
