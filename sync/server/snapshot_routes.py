"""The snapshot routes: ``/snapshots/{id}`` (HTML with a citation block), ``/api/snapshots`` (list),
``/api/snapshots/{id}`` (the signed bytes) and ``/api/snapshots/{id}/evidence`` (what a reader checks it with)."""

from __future__ import annotations

from typing import Any

from fastapi import APIRouter, Request
from fastapi.responses import HTMLResponse, JSONResponse, Response

from dynadesk.sync.server import openapi_models as oa
from dynadesk.sync.server import snapshots as _snap
from dynadesk.sync.server.deps import View
from dynadesk.sync.server.html_routes import _page

router = APIRouter()
_FOREVER = {"Cache-Control": "public, max-age=31536000, immutable"}  # a snapshot never changes: cache its answers


@router.get("/snapshots/{snapshot_id}", response_class=HTMLResponse, include_in_schema=False)
def snapshot_page(snapshot_id: str, request: Request, view: View) -> HTMLResponse:
    return _page(lambda: _snap.snapshot_page(view, _snap.check_id(snapshot_id), str(request.base_url)))


@router.get("/api/snapshots", summary="Signed board snapshots, oldest first (dynadesk-server snapshot create)",
            response_model=None, responses=oa.answers(list[oa.SnapshotListing], 422, 503))
def list_snapshots(view: View, task: str | None = None) -> list[dict[str, Any]]:
    if task is not None and task not in view.tasks:
        return []  # snapshots are of board tasks only (a NUL byte in it reached PostgreSQL: a 503, fuzzing)
    return [{**s, "url": f"/snapshots/{s['id']}", "json": f"/api/snapshots/{s['id']}"}
            for s in view.db.list_snapshots(task)]


@router.get("/api/snapshots/{snapshot_id}", summary="The exact signed bytes of one board snapshot",
            response_model=None, responses=oa.answers(None, 400, 404, 422, 503, ok_schema=oa.SNAPSHOT_SCHEMA))
def snapshot_json(snapshot_id: str, view: View) -> Response:
    return Response(_snap.snapshot_json(view, _snap.check_id(snapshot_id)), media_type="application/json",
                    headers=_FOREVER)


@router.get("/api/snapshots/{snapshot_id}/evidence",
            summary="A snapshot with the log entries, bundles and attestations it follows from and the server's keys"
                    " (dynadesk sync verify-snapshot)",
            response_model=None, responses=oa.answers(None, 400, 404, 422, 503, ok_schema=oa.EVIDENCE_SCHEMA))
def snapshot_evidence(snapshot_id: str, view: View) -> JSONResponse:
    return JSONResponse(_snap.evidence(view, _snap.check_id(snapshot_id)), headers=_FOREVER)
