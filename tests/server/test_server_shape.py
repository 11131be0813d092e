"""The server's shape: one upload route per document, one place that maps errors to HTTP statuses.

(The bundle format's independence and the absence of cycles in sync/ are import-linter contracts:
.importlinter, checked by tests/architecture/test_architecture.py and ``make lint``.)
"""

from __future__ import annotations

from support import REPO

SYNC = REPO / "sync"


def test_the_server_has_one_upload_route_per_document_and_one_error_mapping():
    app_src = (SYNC / "server" / "app.py").read_text(encoding="utf-8")
    server_src = "".join(p.read_text(encoding="utf-8") for p in (SYNC / "server").glob("*.py"))
    assert server_src.count('.post("/api/bundles"') == 1 and server_src.count('.post("/api/attestations"') == 1
    # one middleware, pure ASGI (SecurityHeaders): Starlette's BaseHTTPMiddleware / @app.middleware("http") costs
    # extra tasks per request and would be a second place that shapes answers
    code = [line.strip() for line in app_src.splitlines()]
    assert app_src.count("add_middleware(") == 1 and not any(
        line.startswith("@app.middleware") or "import BaseHTTPMiddleware" in line for line in code)
    mapping = [p for p in SYNC.rglob("*.py") if "HTTP_STATUS" in p.read_text(encoding="utf-8")
               and "HTTP_STATUS:" in p.read_text(encoding="utf-8")]
    assert [p.relative_to(SYNC).as_posix() for p in mapping] == ["server/errors.py"]


def test_create_app_is_a_short_assembly_of_one_router_per_resource(tmp_path):
    """The FastAPI reference layout: no route is defined in app.py, every route comes from a router listed in
    ``ROUTERS`` (one module per resource), and create_app stays short with few parameters."""
    import ast

    from fastapi.routing import APIRoute

    from dynadesk.sync.server import app as app_module
    from dynadesk.sync.server.app import ROUTERS, ServerOptions, create_app

    tree = ast.parse((SYNC / "server" / "app.py").read_text(encoding="utf-8"))
    create = next(n for n in tree.body if isinstance(n, ast.FunctionDef) and n.name == "create_app")
    assert create.end_lineno - create.lineno + 1 <= 40
    assert len(create.args.args) + len(create.args.kwonlyargs) <= 8
    decorators = [ast.unparse(d) for n in ast.walk(tree) if isinstance(n, ast.FunctionDef) for d in n.decorator_list]
    assert not [d for d in decorators if d.split("(")[0].endswith((".get", ".post", ".put", ".delete"))], decorators
    modules = {r.routes[0].endpoint.__module__ for r in ROUTERS}
    assert len(modules) == len(ROUTERS), "one router per module"
    app = create_app(tmp_path / "board.db", options=ServerOptions(verify_processes=0))
    served = set()  # (path, module) of every route the app answers (FastAPI may keep an included router whole)
    for route in app.routes:
        inner = getattr(route, "original_router", None)
        for r in inner.routes if inner is not None else [route]:
            if isinstance(r, APIRoute):
                served.add((r.path, r.endpoint.__module__))
    from_routers = {(route.path, route.endpoint.__module__) for r in ROUTERS for route in r.routes}
    assert served == from_routers and len(served) >= 20
    assert all(m != app_module.__name__ for _, m in served)
    app.state.db.close()


def test_the_direct_upload_paths_are_the_documented_upload_routes_and_answer_with_the_security_headers(tmp_path):
    """SecurityHeaders hands POSTs to the two upload paths straight to their endpoints (routes_uploads.DIRECT):
    the direct table cannot drift from the routes the OpenAPI document describes, and what it answers (here a
    refusal: an unsigned body) has the same JSON shape and headers as every routed answer."""
    from fastapi.routing import APIRoute
    from fastapi.testclient import TestClient

    from dynadesk.sync.server.app import SECURITY_HEADERS, ServerOptions, create_app
    from dynadesk.sync.server.routes_uploads import DIRECT

    app = create_app(tmp_path / "board.db", options=ServerOptions(verify_processes=0))
    posts = {}  # every POST route the app answers (FastAPI may keep an included router whole)
    for route in app.routes:
        inner = getattr(route, "original_router", None)
        posts |= {r.path: r.endpoint for r in (inner.routes if inner is not None else [route])
                  if isinstance(r, APIRoute) and "POST" in r.methods}
    assert {path: posts[path] for path in DIRECT} == DIRECT
    with TestClient(app) as client:
        answer = client.post("/api/bundles", content=b'{"not": "a bundle"}')
        assert answer.status_code == 400 and set(answer.json()) == {"error", "detail"}, answer.text
        assert all(answer.headers.get(k) == v for k, v in SECURITY_HEADERS.items())
    app.state.db.close()


def test_the_server_and_the_hub_share_one_rate_limiter():
    """One ``Rate`` and one ``Limiter`` class in the package (dynadesk/ratelimit.py); the server's and the hub's
    limits modules only parse their options' spellings of a rate."""
    import ast

    from dynadesk import ratelimit
    from dynadesk.hub import limits as hub_limits
    from dynadesk.sync.server import limits as server_limits

    assert hub_limits.Limiter is server_limits.Limiter is ratelimit.Limiter
    assert hub_limits.Rate is server_limits.Rate is ratelimit.Rate
    assert hub_limits.parse_rate("30/60", "--rate") == ratelimit.Rate.per_window(30, 60)
    assert server_limits.parse_rate("0.5/30", "--key-rate") == ratelimit.Rate(0.5, 30)
    defined = [f"{p.relative_to(REPO)}:{n.name}" for folder in ("dynadesk", "sync", "gui", "evaluator")
               for p in (REPO / folder).rglob("*.py")
               for n in ast.walk(ast.parse(p.read_text(encoding="utf-8")))
               if isinstance(n, ast.ClassDef) and n.name in ("Rate", "Limiter", "TokenBuckets")]
    assert sorted(defined) == ["dynadesk/ratelimit.py:Limiter", "dynadesk/ratelimit.py:Rate",
                               "dynadesk/ratelimit.py:TokenBuckets"], defined
