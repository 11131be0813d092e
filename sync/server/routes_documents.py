"""``/api/bundles`` (accepted bundles, oldest first), ``/api/bundles/{id}`` and ``/api/attestations/{id}``: the
exact signed bytes of what the log holds, for auditors."""

from __future__ import annotations

from typing import Any

from fastapi import APIRouter, Query
from fastapi import Path as PathParam
from fastapi.responses import Response

from dynadesk.sync.server import openapi_models as oa
from dynadesk.sync.server.answers import BUNDLE_ID, SQLITE_MAX_INT, error_answer
from dynadesk.sync.server.deps import DB, Tasks

router = APIRouter()


@router.get("/api/attestations/{attestation_id}", summary="The exact signed bytes of one attestation",
            response_model=None, responses=oa.answers(None, 400, 404, 422, 503,
                                                      ok_schema=oa.envelope_schema("dynadesk-attestation")))
def get_attestation(db: DB, attestation_id: str = PathParam(json_schema_extra=oa.ID_PARAM)) -> Response:
    if not BUNDLE_ID.match(attestation_id):
        return error_answer(400, "invalid_request", "an attestation id is 64 lowercase hex digits")
    return Response(db.attestation_raw(attestation_id), media_type="application/json")


@router.get("/api/bundles", summary="Accepted bundles, oldest first",
            response_model=None, responses=oa.answers(list[oa.BundleListing], 422, 503))
def list_bundles(db: DB, tasks: Tasks, task: str | None = None, after: int = Query(0, ge=0, le=SQLITE_MAX_INT),
                 limit: int = Query(100, ge=1, le=1000)) -> list[dict[str, Any]]:
    if task is not None and task not in tasks:
        return []  # no bundle names another task (a NUL byte in it reached PostgreSQL: a 503, found by fuzzing)
    return db.list_bundles(task, limit, after)


@router.get("/api/bundles/{bundle_id}", summary="The exact signed bytes of one bundle, for auditors",
            response_model=None, responses=oa.answers(None, 400, 404, 422, 503,
                                                      ok_schema=oa.envelope_schema("dynadesk-bundle")))
def get_bundle(db: DB, bundle_id: str = PathParam(json_schema_extra=oa.ID_PARAM)) -> Response:
    if not BUNDLE_ID.match(bundle_id):
        return error_answer(400, "invalid_request", "a bundle id is 64 lowercase hex digits")
    return Response(db.bundle_raw(bundle_id), media_type="application/json")
