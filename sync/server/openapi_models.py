"""The server's answers as OpenAPI models: what each route returns, and every refusal it can give.

These models only *describe* the answers (``responses=`` on each route, ``response_model=None``), so
reads pay no re-validation and a field added to an answer is never filtered out. The suite holds the
description to the truth: schemathesis checks every answer of every operation against it, status code,
body and headers (tests/reliability/test_reliability_server.py). Objects allow extra fields (an answer may grow);
the fields named here are required and typed.

To describe a new route: give it ``response_model=None`` and ``responses=answers(OkModel, 400, 404, ...)``
listing its success model and every refusal code it can give (the mapping is
:mod:`dynadesk.sync.server.errors`; 422 for a route with typed parameters, 503 for any route that reads
the database), and add it to ``OPERATIONS`` in tests/reliability/test_reliability_server.py.
"""

from __future__ import annotations

from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field

HEX64 = r"^[0-9a-f]{64}$"
DIGEST = r"^sha256:[0-9a-f]{64}$"


ID_PARAM: dict[str, Any] = {"pattern": HEX64}
"""A document id path parameter, described only (the route answers 400 naming a malformed id itself)."""


def task_param(tasks: Any) -> dict[str, Any]:
    """The board's tasks as the ``task`` path parameter's enum (another name is a described 404)."""
    return {"enum": sorted(tasks)}


class _Open(BaseModel):
    """An answer object: the named fields are required; more may follow."""

    model_config = ConfigDict(extra="allow")


class ErrorAnswer(BaseModel):
    """Every refusal: a machine-readable ``error`` code and a ``detail`` naming what is wrong."""

    model_config = ConfigDict(extra="forbid")
    error: str = Field(pattern=r"^[a-z_]+$", examples=["malformed_bundle"])
    detail: str = Field(min_length=1)


class Accepted(_Open):
    """An upload stored and appended to the transparency log."""

    status: Literal["accepted"]
    seq: int = Field(ge=1, description="the entry's position in the transparency log")
    entry_hash: str = Field(pattern=HEX64)
    received_at: str


class AcceptedBundle(Accepted):
    bundle_id: str = Field(pattern=HEX64)


class AcceptedAttestation(Accepted):
    attestation_id: str = Field(pattern=HEX64)


class DatasetInfo(_Open):
    task: str
    name: str
    split: str
    digest: str = Field(pattern=DIGEST)
    size: int = Field(ge=0)
    added_at: str
    version: int = Field(ge=1)


class TaskInfo(_Open):
    name: str
    title: str
    metric: str
    datasets: list[DatasetInfo]
    submissions: int = Field(ge=0)
    definition: dict[str, Any] = Field(description="the task's definition, as its YAML file gives it")


class BundleListing(_Open):
    seq: int = Field(ge=1)
    id: str = Field(pattern=HEX64)
    task: str
    model_name: str
    model_digest: str = Field(pattern=DIGEST)
    key_fingerprint: str = Field(pattern=DIGEST)
    created_at: str
    received_at: str


class LogEntry(_Open):
    seq: int = Field(ge=1)
    bundle_id: str = Field(pattern=HEX64, description="the bundle's or the attestation's id (see ``kind``)")
    bundle_sha256: str = Field(pattern=HEX64)
    received_at: str
    prev_hash: str = Field(pattern=HEX64)
    entry_hash: str = Field(pattern=HEX64)
    kind: str


class SignedHead(_Open):
    """The log's size and head hash, signed by the server's key (see docs/bundle-format.md)."""

    size: int = Field(ge=0)
    hash: str = Field(pattern=HEX64)
    signed_at: str
    public_key: str = Field(pattern=HEX64)
    key_fingerprint: str = Field(pattern=DIGEST)
    signature: str = Field(pattern=r"^[0-9a-f]{128}$")


class LogPage(_Open):
    entries: list[LogEntry]
    head: SignedHead


class ServerKey(_Open):
    public_key: str = Field(pattern=HEX64)
    fingerprint: str = Field(pattern=DIGEST)


class BoardMetric(_Open):
    unit: str
    weight: float
    direction: float
    offset: float


class BoardDataset(_Open):
    name: str
    split: str
    digest: str = Field(pattern=DIGEST)
    weight: float
    submitted: bool


class BoardRow(_Open):
    rank: int = Field(ge=1)
    model: str
    label: str
    row_id: str
    dynascore: float
    values: dict[str, float | None]
    converted: dict[str, float | None]
    contributions: dict[str, float | None]
    submitter: str
    key_fingerprint: str = Field(pattern=DIGEST)
    model_digest: str = Field(pattern=DIGEST)
    created_at: str
    bundle_id: str = Field(pattern=HEX64)
    bundle_url: str
    model_url: str


class Leaderboard(_Open):
    """One page of a task's Dynascore board, ranked under the weights and filters the query gave."""

    task: str
    metrics: dict[str, BoardMetric]
    datasets: list[BoardDataset]
    amrs: dict[str, float | None] = Field(description="each metric's exchange rate (null: not estimable)")
    reference: dict[str, Any]
    total: int = Field(ge=0)
    offset: int = Field(ge=0)
    rows: list[BoardRow]
    notes: list[str]
    hardware_class: str
    filters: dict[str, Any]
    rank_intervals_pending: bool = Field(
        False, description="true when the weight setting was new to the server: the rows' rank_interval is null "
                           "while it is worked out off the request path; ask again to get it")
    baselines: list[dict[str, Any]] = Field(
        default_factory=list, description="baseline rows (constant predictors, or named in the task file): rank "
                                          "null, scored at this view's rates, never ranked nor reference rows")
    audit_default: dict[str, Any] = Field(
        default_factory=dict, description="the audit filter in force and why (reproduced-only once the view has a "
                                          "reproduced row)")
    breakdown_reference: dict[str, Any] | None = Field(
        None, description="the row each row's relative_contributions are measured against: the baseline, else the "
                          "lowest-ranked row")


REFUSALS: dict[int, str] = {
    400: "Malformed input (a bad id, query parameter or document); `detail` names it",
    403: "The signing key is unknown, revoked or not allowed to do this",
    404: "No such task, bundle or attestation",
    409: "Already stored (a replay) or already attested",
    413: "The body is larger than a document may be",
    422: "Well-formed but refused: a typed parameter out of range, a bad signature, an invalid value",
    429: "Too many uploads from this address or key, or the key's quota is used up; wait `Retry-After` seconds",
    503: "The board's database is unavailable; retry after `Retry-After` seconds",
}
_RETRY_AFTER = {"Retry-After": {"description": "seconds to wait before trying again", "required": True,
                                "schema": {"type": "integer", "minimum": 0}}}


class SnapshotListing(_Open):
    """One signed board snapshot (``dynadesk-server snapshot create``), with where to read and check it."""

    id: str
    seq: int
    task: str
    title: str
    created_at: str
    url: str  # the page; "json" (more fields are allowed) names the signed bytes


SNAPSHOT_SCHEMA: dict[str, Any] = {
    "type": "object", "required": ["format", "payload", "signature"],
    "description": "the snapshot as the server signed it (rows, weights, the log head; docs/board.md)"}
EVIDENCE_SCHEMA: dict[str, Any] = {
    "type": "object", "description": "the snapshot's bytes with the log entries, bundles and attestations it follows"
                                     " from, and the server's keys (fingerprint -> revoked_at or null)"}


def answers(ok: Any, *codes: int, status: int = 200, ok_doc: str = "Success",
            ok_schema: dict[str, Any] | None = None) -> dict[int | str, dict[str, Any]]:
    """``responses=`` for a route: its success answer (a model or ``list[Model]``; or, for raw bytes, None and a JSON
    ``ok_schema``) and each refusal code it gives, all described."""
    out: dict[int | str, dict[str, Any]] = {}
    if ok is not None:
        out[status] = {"model": ok, "description": ok_doc}
    else:
        out[status] = {"description": ok_doc, "content": {"application/json": {"schema": ok_schema or {}}}}
    for code in codes:
        entry: dict[str, Any] = {"model": ErrorAnswer, "description": REFUSALS[code]}
        if code in (429, 503):
            entry["headers"] = _RETRY_AFTER
        out[code] = entry
    return out


def envelope_schema(fmt: str) -> dict[str, Any]:
    """A signed envelope (bundle or attestation): its own fields; the payload is described in docs/bundle-format.md."""
    return {
        "type": "object", "required": ["format", "payload", "signature", "version"],
        "properties": {
            "format": {"type": "string", "enum": [fmt]},
            "version": {"type": "integer", "enum": [1, 2]},  # bundles: 2 (1 still read)
            "payload": {"type": "object", "description": "the signed fields (docs/bundle-format.md)"},
            "signature": {"type": "object", "required": ["algorithm", "public_key", "value"], "properties": {
                "algorithm": {"type": "string", "enum": ["ed25519"]},
                "public_key": {"type": "string", "pattern": HEX64},
                "value": {"type": "string", "pattern": r"^[0-9a-f]{128}$"}}}}}


def envelope_body(fmt: str, description: str = "The file's exact bytes (RFC 8785 JSON, see docs/bundle-format.md)"
                  ) -> dict[str, Any]:
    """``openapi_extra`` for an upload: the body is one signed envelope, its exact canonical (RFC 8785) bytes."""
    return {"requestBody": {"required": True, "description": description,
                            "content": {"application/json": {"schema": envelope_schema(fmt)}}}}


def board_parameters() -> dict[str, Any]:
    """``openapi_extra`` for the board: the query parameters it reads from the raw query (``weight.<metric>`` for
    each board metric; ``dataset.<name>`` weights are named by the board's datasets and are not listed)."""
    from dynadesk.scoring.board import MAX_MEMORY_BUDGET_GIB, MAX_OFFSET, MAX_PAGE_ROWS, MAX_WEIGHT
    from dynadesk.sync.rules.board import AUDIT_VALUES, BOARD_METRICS

    # an empty value means "not given" (the board page sends its empty controls); yes/no also read as true/false/1/0
    yes_no = {"type": "string", "pattern": "^(|[Yy][Ee][Ss]|[Nn][Oo]|[Tt][Rr][Uu][Ee]|[Ff][Aa][Ll][Ss][Ee]|1|0)$"}

    def query(name: str, schema: dict[str, Any], description: str) -> dict[str, Any]:
        return {"name": name, "in": "query", "required": False, "schema": schema, "description": description}

    params = [
        query("limit", {"type": "integer", "minimum": 1, "maximum": MAX_PAGE_ROWS}, "rows on the page (default 100)"),
        query("offset", {"type": "integer", "minimum": 0, "maximum": MAX_OFFSET}, "rows skipped before the page"),
        query("memory_budget", {"type": "number", "exclusiveMinimum": 0, "maximum": MAX_MEMORY_BUDGET_GIB},
              "GiB the memory metric is measured against (default 16)"),
        query("hardware_class", {"type": "string"}, "a hardware class, or 'all' (default: the class with the most"
              " models)"),
        query("runner", {"type": "string"}, "only rows measured by this runner (docker, local ...)"),
        query("sandboxed", yes_no, "only sandboxed (yes) or only unsandboxed (no) rows"),
        query("stability", yes_no, "yes: each row's rank range as the weights vary"),
        query("audit", {"type": "string", "enum": ["", *AUDIT_VALUES]}, "reproduced: only rows an auditor"
              " reproduced (empty: all)"),
        query("rates", {"type": "string", "enum": ["", "edition", "dynaboard"]}, "edition (default): the task's"
              " rate edition (or provisional rates); dynaboard: rates from the rows in view, Dynaboard's rule"),
    ]
    params += [query(f"weight.{m}", {"type": "number", "minimum": 0, "maximum": MAX_WEIGHT},
                     f"the weight of metric {m}") for m in BOARD_METRICS]
    return {"parameters": params}
