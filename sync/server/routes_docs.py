"""``/docs`` (Swagger UI) and ``/docs-assets/*``: the API's own documentation, served from this server (the
fastapi-offline package ships the assets), never a CDN: the board runs offline. ``validatorUrl: null`` stops
Swagger UI from fetching a badge from swagger.io."""

from __future__ import annotations

import re
from pathlib import Path

from fastapi import APIRouter, Request
from fastapi.responses import HTMLResponse, Response

from dynadesk.errors import NotFoundError
from dynadesk.sync.server.answers import SECURITY_HEADERS

router = APIRouter(include_in_schema=False)

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


def _docs_policy(html: bytes) -> str:
    """The security policy with one exception: Swagger UI's own inline start-up script, allowed by its hash
    (nothing else inline runs, and every asset still comes from this server)."""
    import base64
    import hashlib

    inline = re.findall(rb"<script>(.*?)</script>", html, flags=re.S)
    hashes = " ".join(f"'sha256-{base64.b64encode(hashlib.sha256(js).digest()).decode()}'" for js in inline)
    return SECURITY_HEADERS["Content-Security-Policy"] + f"; script-src 'self' {hashes}"


@router.get("/docs", response_class=HTMLResponse)
def docs(request: Request) -> HTMLResponse:
    from fastapi.openapi.docs import get_swagger_ui_html

    app = request.app
    page = get_swagger_ui_html(openapi_url=app.openapi_url or "/openapi.json", title=f"{app.title} - API",
                               swagger_js_url=f"{_DOCS_PREFIX}/swagger-ui-bundle.js",
                               swagger_css_url=f"{_DOCS_PREFIX}/swagger-ui.css",
                               swagger_favicon_url=f"{_DOCS_PREFIX}/favicon.png",
                               swagger_ui_parameters={"validatorUrl": None})
    page.headers["Content-Security-Policy"] = _docs_policy(bytes(page.body))
    return page


@router.get(_DOCS_PREFIX + "/{name}")
def docs_asset(name: str) -> Response:
    if name not in _DOCS_ASSETS:
        raise NotFoundError(f"no API docs file {name!r}")
    return Response(_docs_asset(name), media_type=_DOCS_ASSETS[name],
                    headers={"Cache-Control": "public, max-age=86400"})
