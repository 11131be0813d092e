"""The one mapping from the library's errors to HTTP answers ``{"error": code, "detail": message}``."""

from __future__ import annotations

from dynadesk.errors import (
    AttestationError,
    AttestationTimeError,
    BundleError,
    BundleFormatError,
    DynaDeskError,
    FingerprintMismatch,
    FutureTimestampError,
    HiddenTextError,
    MetricValueError,
    ModelNameError,
    NotAuditorError,
    NotFoundError,
    NotOnBoardError,
    OwnOrganisationError,
    QuotaExceededError,
    RateLimitedError,
    ReplayError,
    RevokedKeyError,
    SelfAttestationError,
    ServerBusyError,
    SignatureError,
    StoreError,
    UnknownKeyError,
    UnsupportedVersionError,
    ValidationError,
    VerdictMismatchError,
)

# most specific first
HTTP_STATUS: list[tuple[type[DynaDeskError], int, str]] = [
    (ServerBusyError, 503, "server_busy"),  # the upload check pool is full: not the client's fault
    (QuotaExceededError, 429, "quota_exceeded"),
    (RateLimitedError, 429, "rate_limited"),
    (UnsupportedVersionError, 400, "unsupported_version"),
    (HiddenTextError, 422, "invalid_text"),
    (BundleFormatError, 400, "malformed_bundle"),
    (RevokedKeyError, 403, "revoked_key"),
    (UnknownKeyError, 403, "unknown_key"),
    (NotAuditorError, 403, "not_auditor"),
    (OwnOrganisationError, 403, "own_organisation"),
    (SelfAttestationError, 403, "own_bundle"),
    (VerdictMismatchError, 422, "verdict_contradicts_fields"),
    (AttestationTimeError, 422, "attestation_before_bundle"),
    (FingerprintMismatch, 422, "key_mismatch"),
    (SignatureError, 422, "bad_signature"),
    (FutureTimestampError, 422, "future_timestamp"),
    (MetricValueError, 422, "invalid_metric"),
    (ModelNameError, 422, "invalid_model_name"),
    (NotOnBoardError, 422, "not_on_board"),
    (ReplayError, 409, "replay"),
    (AttestationError, 409, "already_attested"),
    (NotFoundError, 404, "not_found"),
    (ValidationError, 400, "invalid_request"),
    (BundleError, 400, "rejected"),
    (StoreError, 503, "store_unavailable"),  # the server's database failed or is unreachable: not the client's fault
]

STORE_RETRY_AFTER_S = 5
"""What a 503 for a database outage tells clients to wait (the sync client retries 503s, honouring it)."""


def answer_for(exc: DynaDeskError) -> tuple[int, dict[str, str], dict[str, str]]:
    """``(status, body, headers)`` for a refusal; a 429 and a 503 carry ``Retry-After``."""
    status, code = next(((s, c) for cls, s, c in HTTP_STATUS if isinstance(exc, cls)), (400, "rejected"))
    headers: dict[str, str] = {}
    if isinstance(exc, RateLimitedError):
        headers["Retry-After"] = str(exc.retry_after)
    elif isinstance(exc, StoreError):
        headers["Retry-After"] = str(STORE_RETRY_AFTER_S)
    return status, {"error": code, "detail": str(exc)}, headers
