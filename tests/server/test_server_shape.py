"""The server's shape: one upload route per document, one place that maps errors to HTTP statuses.

(The bundle format's independence and the absence of cycles in sync/ are import-linter contracts:
.importlinter, checked by tests/architecture/test_architecture.py and ``make lint``.)
"""

from __future__ import annotations

from support import REPO

SYNC = REPO / "sync"


def test_the_server_has_one_upload_route_per_document_and_one_error_mapping():
    app_src = (SYNC / "server" / "app.py").read_text(encoding="utf-8")
    assert app_src.count('@app.post("/api/bundles"') == 1
    # one middleware, pure ASGI (SecurityHeaders): Starlette's BaseHTTPMiddleware / @app.middleware("http") costs
    # extra tasks per request and would be a second place that shapes answers
    code = [line.strip() for line in app_src.splitlines()]
    assert app_src.count("add_middleware(") == 1 and not any(
        line.startswith("@app.middleware") or "import BaseHTTPMiddleware" in line for line in code)
    mapping = [p for p in SYNC.rglob("*.py") if "HTTP_STATUS" in p.read_text(encoding="utf-8")
               and "HTTP_STATUS:" in p.read_text(encoding="utf-8")]
    assert [p.relative_to(SYNC).as_posix() for p in mapping] == ["server/errors.py"]
