"""The leaderboard server's answer shapes that several routers share: the one JSON error object, a domain error's
answer (:func:`~dynadesk.sync.server.errors.answer_for`), the security headers on every answer, and the forms of
ids and query integers."""

from __future__ import annotations

import re

from fastapi.responses import JSONResponse

from dynadesk.errors import DynaDeskError
from dynadesk.sync.server.errors import answer_for

__all__ = ["BUNDLE_ID", "SECURITY_HEADERS", "SQLITE_MAX_INT", "error_answer", "refusal"]

BUNDLE_ID = re.compile(r"^[0-9a-f]{64}$")
SQLITE_MAX_INT = 2 ** 63 - 1  # a larger query integer cannot be bound (it was a 500)

# On every answer: only this server's own scripts and styles, never framed (clickjacking), no type sniffing.
SECURITY_HEADERS = {
    "Content-Security-Policy": "default-src 'self'; img-src 'self' data:; object-src 'none'; base-uri 'none';"
                               " form-action 'self'; frame-ancestors 'none'",
    "X-Content-Type-Options": "nosniff",
    "X-Frame-Options": "DENY",
    "Referrer-Policy": "no-referrer",
}


def error_answer(status: int, code: str, detail: str) -> JSONResponse:
    """``{"error": code, "detail": detail}`` with ``status``."""
    return JSONResponse({"error": code, "detail": detail}, status_code=status)


def refusal(exc: DynaDeskError) -> JSONResponse:
    """A domain error as its status, error object and headers (``Retry-After`` for a rate limit)."""
    status, body, headers = answer_for(exc)
    return JSONResponse(body, status_code=status, headers=headers)
