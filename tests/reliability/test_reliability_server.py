"""Hostile input against the leaderboard server and the bundle parser (issue 10, server part).

* schemathesis drives every operation of the server's own OpenAPI document against a real
  ``dynadesk-server`` process on loopback (SQLite, then PostgreSQL): no 5xx, and every answer conforms to the
  document (status code, content type, ``Retry-After`` headers and body, refusals ``{"error", "detail"}``);
  the number of cases sent is printed;
* hypothesis sends arbitrary methods and paths (outside the schema) the same way;
* hypothesis makes structure-aware mutations of a real signed bundle (replace / delete / add any field,
  re-signed or not): parsing and verification only ever raise :class:`BundleError` naming the payload
  field, and a re-signed payload that parses round-trips exactly. (Random byte flips, random JSON bodies
  and the per-field tamper tests are in tests/sync/test_sync_bundle.py and tests/server/test_server_app.py.)
* ``/docs`` works offline: Swagger UI comes from this server, no external URL is referenced, and a
  headless chromium renders every operation without a request leaving the server.

``pytest --long`` (DYNADESK_LONG=1) runs many more generated cases.
"""

from __future__ import annotations

import copy
import json
import re

import pytest
import requests
import schemathesis
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from support import fuzz_examples
from support.sync import NO_LIMITS, free_port, make_run, start_server, stop_server, workspace_with_key

from dynadesk.canonical import canonical_bytes
from dynadesk.errors import BundleError, BundleFormatError
from dynadesk.sync.client.create import create_bundle
from dynadesk.sync.format.envelope import envelope_bytes, load_and_verify, parse_bundle, verify_bundle
from dynadesk.sync.format.keys import PRIVATE_NAME, key_info, load_private_key, public_raw
from dynadesk.sync.server.admin import import_workspace_datasets
from dynadesk.sync.server.db import ServerDB

API_EXAMPLES = fuzz_examples(25, 400)  # per operation
PATH_EXAMPLES = fuzz_examples(60, 1000)
BUNDLE_EXAMPLES = fuzz_examples(150, 3000)
NO_SHRINK = [HealthCheck.function_scoped_fixture, HealthCheck.too_slow, HealthCheck.filter_too_much]


def assert_json_error(resp) -> None:
    """A refusal is a JSON object with a machine code and a non-empty human detail."""
    ctype = resp.headers.get("content-type", "")  # requests: a str; schemathesis: a list of values
    ctype = ctype[0] if isinstance(ctype, list) else ctype
    assert ctype.startswith("application/json"), (resp.status_code, resp.text[:200])
    body = resp.json()
    assert set(body) == {"error", "detail"}, body
    assert isinstance(body["error"], str) and re.fullmatch(r"[a-z_]+", body["error"]), body
    assert isinstance(body["detail"], str) and body["detail"].strip(), body


@pytest.fixture(scope="module", params=["sqlite", "postgresql"])
def live(request, tmp_path_factory):
    """A real server process over a fresh database (a SQLite file, then PostgreSQL): a registered key, the test
    sets, two accepted bundles."""
    tmp = tmp_path_factory.mktemp("reliability-server")
    ws, store = workspace_with_key(tmp / "ws")
    db_path = tmp / "board.db" if request.param == "sqlite" else request.getfixturevalue("postgres").new_database()
    db = ServerDB(db_path)
    info = key_info(ws.keys_dir)
    db.add_key(info.fingerprint, bytes.fromhex(info.public_key_hex), "alice")
    bundles = [create_bundle(ws, store, make_run(store, ws.runs_dir, model=m)) for m in ("bow-a", "bow-b")]
    import_workspace_datasets(db, ws.home)
    port = free_port()
    proc = start_server(db_path, port, (*NO_LIMITS, "--key", str(tmp / "server.key")))
    url = f"http://127.0.0.1:{port}"
    for b in bundles:
        assert requests.post(f"{url}/api/bundles", data=b.raw, timeout=10).status_code == 201
    yield {"url": url, "db": db, "bundles": bundles, "ws": ws, "backend": request.param}
    stop_server(proc)
    store.close()
    db.close()


@pytest.fixture(scope="module")
def api_schema(live):
    return schemathesis.openapi.from_url(f"{live['url']}/openapi.json")


OPERATIONS = [("GET", "/api/tasks"), ("POST", "/api/bundles"), ("GET", "/api/bundles"),
              ("GET", "/api/bundles/{bundle_id}"), ("GET", "/api/leaderboard/{task}"), ("GET", "/api/log"),
              ("GET", "/api/log/head"), ("GET", "/api/server-key"), ("POST", "/api/attestations"),
              ("GET", "/api/attestations/{attestation_id}"), ("GET", "/api/snapshots"),
              ("GET", "/api/snapshots/{snapshot_id}"), ("GET", "/api/snapshots/{snapshot_id}/evidence"),
              ("GET", "/api/rates/{task}"), ("GET", "/api/rates/{task}/{edition}")]


# schema-violating cases exist only where there is something to violate (a body or typed parameters)
NEGATABLE = [("POST", "/api/bundles"), ("GET", "/api/bundles"), ("GET", "/api/log"), ("POST", "/api/attestations"),
             ("GET", "/api/leaderboard/{task}")]
EXAMPLES_RUN: dict[str, dict[str, int]] = {}  # backend -> "METHOD path mode" -> cases sent


def conformance_checks(mode: str, path: str = "") -> list:
    """Every answer is described by the schema: its status code, content type, headers (Retry-After) and body;
    never a 5xx; and (negative mode) a schema-violating request is refused, except on the board, whose raw query
    is read as Python reads numbers (``1_000``, `` 5``) and is checked by the board itself (a finite ranking or a
    400, tests below)."""
    from schemathesis.checks import not_a_server_error
    from schemathesis.specs.openapi.checks import (
        content_type_conformance,
        negative_data_rejection,
        response_headers_conformance,
        response_schema_conformance,
        status_code_conformance,
    )

    checks = [not_a_server_error, status_code_conformance, content_type_conformance, response_headers_conformance,
              response_schema_conformance]
    lenient = path == "/api/leaderboard/{task}"
    return checks + [negative_data_rejection] if mode == "negative" and not lenient else checks


@pytest.mark.parametrize("method, path, mode", [(*op, "positive") for op in OPERATIONS]
                         + [(*op, "negative") for op in NEGATABLE])
def test_every_operation_fuzzed_answers_as_its_schema_says(api_schema, live, capsys, method, path, mode):
    """schemathesis cases (valid and schema-violating) for one operation of the served OpenAPI document: every
    answer conforms to the document (status, content type, headers, body), none is a 5xx."""
    operation = api_schema[path][method]
    statuses: dict[int, int] = {}
    checks = conformance_checks(mode, path)

    @settings(max_examples=API_EXAMPLES, deadline=None, suppress_health_check=NO_SHRINK)
    @given(case=operation.as_strategy(schemathesis.GenerationMode(mode)))
    def fuzz(case):
        resp = case.call_and_validate(checks=checks, timeout=20)
        assert resp.status_code < 500, (case.method, case.formatted_path, resp.text[:300])
        if resp.status_code >= 400:
            assert_json_error(resp)
        statuses[resp.status_code] = statuses.get(resp.status_code, 0) + 1

    fuzz()
    sent = sum(statuses.values())
    EXAMPLES_RUN.setdefault(live["backend"], {})[f"{method} {path} {mode}"] = sent
    with capsys.disabled():
        print(f"\n[schemathesis {live['backend']}] {method} {path} {mode}: {sent} examples, statuses "
              f"{dict(sorted(statuses.items()))}")
    assert sent >= 1, statuses
    if mode == "negative" and path == "/api/bundles" and method == "POST":
        assert not statuses.get(201), statuses  # nothing schema-violating is ever accepted


def test_the_schema_covers_every_api_route(api_schema, live):
    ops = {(op.ok().method.upper(), op.ok().path) for op in api_schema.get_all_operations()}
    assert ops == set(OPERATIONS)
    doc = requests.get(f"{live['url']}/openapi.json", timeout=10).json()
    for path, methods in doc["paths"].items():
        for method, op in methods.items():
            answers = op["responses"]
            ok = [c for c in answers if c.startswith("2")]
            assert len(ok) == 1 and answers[ok[0]]["content"]["application/json"]["schema"], (method, path)
            for code, answer in answers.items():  # every refusal is the one error object, never FastAPI's own
                if not code.startswith("2"):
                    ref = answer["content"]["application/json"]["schema"]["$ref"]
                    assert ref == "#/components/schemas/ErrorAnswer", (method, path, code, ref)
            assert "503" in answers or path == "/api/server-key", (method, path)  # the database may be down
            if "requestBody" in op:
                assert op["requestBody"]["content"]["application/json"]["schema"]["required"], (method, path)
    assert "HTTPValidationError" not in doc["components"]["schemas"]


def test_answers_about_stored_documents_conform_too(api_schema, live):
    """Cases random generation rarely reaches, sent explicitly and checked the same way: a stored bundle's bytes
    (200), an unknown id (404), a task name with a NUL byte (200, none), a replayed upload (409) and the board with
    weights and a stability range (200)."""
    checks = conformance_checks("positive")
    stored = live["bundles"][0]
    cases = [
        (api_schema["/api/bundles/{bundle_id}"]["GET"].Case(path_parameters={"bundle_id": stored.id}), 200),
        (api_schema["/api/bundles/{bundle_id}"]["GET"].Case(path_parameters={"bundle_id": "0" * 64}), 404),
        # a NUL byte in a task name reached PostgreSQL, which answered 503 "store unavailable" (found by the fuzz)
        (api_schema["/api/bundles"]["GET"].Case(query={"task": "sent\x00iment"}), 200),
        (api_schema["/api/snapshots"]["GET"].Case(query={"task": "sent\x00iment"}), 200),  # the same, found again
        (api_schema["/api/attestations/{attestation_id}"]["GET"].Case(path_parameters={"attestation_id": "1" * 64}),
         404),
        (api_schema["/api/leaderboard/{task}"]["GET"].Case(
            path_parameters={"task": "sentiment"}, query={"weight.perf": "2", "stability": "yes", "limit": "1"}), 200),
        (api_schema["/api/leaderboard/{task}"]["GET"].Case(
            path_parameters={"task": "sentiment"}, query={"weight.perf": "0", "weight.throughput": "0",
                                                          "weight.memory": "0", "weight.robustness": "0",
                                                          "weight.fairness": "0"}), 400),
    ]
    for case, status in cases:
        resp = case.call_and_validate(checks=checks, timeout=20)
        assert resp.status_code == status, (case.formatted_path, resp.status_code, resp.text[:300])
    # a replay: the exact bytes (schemathesis would re-serialise the JSON), its answer validated the same way
    replay = api_schema["/api/bundles"]["POST"].Case(body=json.loads(stored.raw), media_type="application/json")
    resp = requests.post(f"{live['url']}/api/bundles", data=stored.raw, timeout=20,
                         headers={"Content-Type": "application/json"})
    assert resp.status_code == 409, resp.text[:300]
    replay.validate_response(resp, checks=checks)


def test_examples_sent_per_backend_are_printed(live, capsys):
    """The count of generated cases this backend answered (run after the fuzz tests above)."""
    counts = EXAMPLES_RUN.get(live["backend"], {})
    with capsys.disabled():
        print(f"\n[schemathesis {live['backend']}] {sum(counts.values())} examples over {len(counts)} "
              f"operation/mode pairs ({API_EXAMPLES} at most each), every answer conforming to the schema")
    assert len(counts) == len(OPERATIONS) + len(NEGATABLE), counts


segment = st.text(st.characters(codec="utf-8", exclude_characters="/?#"), max_size=12)


@settings(max_examples=PATH_EXAMPLES, deadline=None, suppress_health_check=NO_SHRINK)
@given(method=st.sampled_from(["GET", "POST", "PUT", "DELETE", "PATCH", "OPTIONS", "HEAD"]),
       parts=st.lists(st.sampled_from(["api", "bundles", "leaderboard", "log", "head", "static", "docs-assets",
                                       "sentiment", "..", "%2e%2e", "0" * 64]) | segment, max_size=4),
       body=st.binary(max_size=200))
def test_any_method_and_path_answers_without_server_error(live, method, parts, body):
    resp = requests.request(method, live["url"] + "/" + "/".join(parts), data=body or None, timeout=20)
    assert resp.status_code < 500, (method, parts, resp.text[:300])
    page_route = method == "GET" and bool(parts) and parts[0] in ("bundles", "models", "log", "snapshots")
    if resp.status_code >= 400 and method != "HEAD":
        if page_route and resp.headers.get("content-type", "").startswith("text/html"):
            assert "<html" in resp.text.lower()  # a page a browser asked for answers with an error page
        else:
            assert_json_error(resp)


weight_text = st.floats().map(repr) | st.sampled_from(
    ["1e308", "1e-320", "0", "-0", "1e309", "9" * 400, "", "0x10", "1_000"]) | st.text(max_size=6)


@settings(max_examples=PATH_EXAMPLES, deadline=None, suppress_health_check=NO_SHRINK)
@given(weights=st.dictionaries(st.sampled_from(["weight.perf", "weight.throughput", "weight.memory",
                                                "weight.robustness", "weight.fairness", "dataset.vader-movies-test",
                                                "dataset.vader-tweets-test", "limit", "offset"]), weight_text,
                               max_size=6))
def test_extreme_board_weights_give_a_finite_ranking_or_a_json_refusal(live, weights):
    """Query parameters the OpenAPI document cannot describe (weight.<metric>, dataset.<name>), on a filled board."""
    resp = requests.get(f"{live['url']}/api/leaderboard/sentiment", params=weights, timeout=20)
    assert resp.status_code in (200, 400), (weights, resp.status_code, resp.text[:300])
    if resp.status_code == 400:
        assert_json_error(resp)
        return
    board = json.loads(resp.text)  # strict JSON: no NaN or Infinity leaks into the answer
    rows = board["rows"]
    assert all(isinstance(r["dynascore"], float) and abs(r["dynascore"]) < float("inf") for r in rows)
    assert [r["rank"] for r in rows] == sorted(r["rank"] for r in rows)


def test_seeded_bundles_are_stored_once_after_the_fuzzing(live):
    """The fuzzing above added nothing: only the two real bundles are stored, and they still verify."""
    listed = requests.get(f"{live['url']}/api/bundles", timeout=10).json()
    assert [b["id"] for b in listed] == [b.id for b in live["bundles"]]
    for b in live["bundles"]:
        assert requests.get(f"{live['url']}/api/bundles/{b.id}", timeout=10).content == b.raw
    board = requests.get(f"{live['url']}/api/leaderboard/sentiment", timeout=10).json()
    assert sorted(r["bundle_id"] for r in board["rows"]) == sorted(b.id for b in live["bundles"])
    assert requests.get(f"{live['url']}/api/log/head", timeout=10).json()["size"] == len(live["bundles"])


# ---------------------------------------------------------------------------------- bundle parsing


@pytest.fixture(scope="module")
def signed(tmp_path_factory):
    """One real bundle and the key that signed it."""
    tmp = tmp_path_factory.mktemp("reliability-bundle")
    ws, store = workspace_with_key(tmp / "ws")
    b = create_bundle(ws, store, make_run(store, ws.runs_dir))
    store.close()
    return b, load_private_key(ws.keys_dir / PRIVATE_NAME)


def _paths(value, prefix=()):
    """Every path into a JSON value (containers and leaves)."""
    yield prefix
    if isinstance(value, dict):
        for k, v in value.items():
            yield from _paths(v, prefix + (k,))
    elif isinstance(value, list):
        for i, v in enumerate(value):
            yield from _paths(v, prefix + (i,))


json_values = st.recursive(
    st.none() | st.booleans() | st.integers(-(2 ** 53) + 1, 2 ** 53 - 1)
    | st.floats(allow_nan=False, allow_infinity=False)
    | st.text(max_size=30) | st.sampled_from(["", "sha256:" + "0" * 64, "0" * 64, "2026-01-01T00:00:00Z",
                                              "docker", "vader-movies-test", "\x00", "é" * 600]),
    lambda c: st.lists(c, max_size=3) | st.dictionaries(st.text(max_size=10), c, max_size=3), max_leaves=8)


@st.composite
def mutations(draw, payload):
    paths = [p for p in _paths(payload)]
    path = draw(st.sampled_from(paths))
    action = draw(st.sampled_from(["replace", "delete", "add"]) if path else st.just("add"))
    value = draw(json_values)
    key = draw(st.sampled_from(["tolerances", "extra", "task", "metrics", "0"]) | st.text(max_size=8))
    return path, action, value, key


def _mutate(payload, path, action, value, key):
    p = copy.deepcopy(payload)
    if action == "add":
        target = p
        for part in path:
            target = target[part]
        if isinstance(target, dict):
            target[key] = value
        elif isinstance(target, list):
            target.append(value)
        else:
            return None
        return p
    parent = p
    for part in path[:-1]:
        parent = parent[part]
    if action == "delete":
        del parent[path[-1]]
    else:
        parent[path[-1]] = value
    return p


@settings(max_examples=BUNDLE_EXAMPLES, deadline=None, suppress_health_check=NO_SHRINK)
@given(data=st.data())
def test_mutated_bundles_fail_only_with_a_bundle_error_naming_the_payload(signed, data):
    bundle, key = signed
    path, action, value, extra_key = data.draw(mutations(bundle.payload.to_json()))
    payload = _mutate(bundle.payload.to_json(), path, action, value, extra_key)
    if payload is None:
        return
    payload_bytes = canonical_bytes(payload)
    pub = public_raw(key)
    # 1. re-signed by the submitter: structurally checked; if it parses it is exactly what was signed
    resigned = envelope_bytes(payload_bytes, pub, key.sign(payload_bytes))
    try:
        parsed = parse_bundle(resigned, "fuzzed bundle")
    except BundleFormatError as exc:  # names the bundle, then the payload field (or the canonical-form problem)
        assert re.match(r"(fuzzed )?bundle\b.*(payload|canonical)", str(exc)), str(exc)
    else:
        verify_bundle(parsed)  # a correctly signed, well-formed bundle verifies
        assert parsed.payload.to_json() == payload and parsed.raw == resigned
        assert json.loads(parsed.payload_bytes) == payload
    # 2. the old signature over changed content never verifies
    if payload_bytes != bundle.payload_bytes:
        stale = envelope_bytes(payload_bytes, pub, bundle.signature)
        with pytest.raises(BundleError):
            load_and_verify(stale, "fuzzed bundle")


@pytest.mark.parametrize("where", [("metrics", 0, "metric"), ("environment", "cpu")])
def test_a_hidden_character_is_refused_naming_the_bundle_and_the_field(signed, where):
    """A control character (U+001F) in a signed field: the error names the bundle and the field, as every other
    payload error does (the fuzzer found a metric name whose message began with the field alone)."""
    bundle, key = signed
    payload = copy.deepcopy(bundle.payload.to_json())
    node = payload
    for part in where[:-1]:
        node = node[part]
    node[where[-1]] = f"{node[where[-1]]}\x1f"
    payload_bytes = canonical_bytes(payload)
    raw = envelope_bytes(payload_bytes, public_raw(key), key.sign(payload_bytes))
    with pytest.raises(BundleFormatError) as info:
        parse_bundle(raw, "fuzzed bundle")
    assert re.match(r"(fuzzed )?bundle\b.*payload", str(info.value)), str(info.value)
    assert "U+001F" in str(info.value) and where[-1] in str(info.value)


@settings(max_examples=BUNDLE_EXAMPLES, deadline=None, suppress_health_check=NO_SHRINK)
@given(data=st.data())
def test_mutated_envelopes_are_refused_with_a_bundle_error(signed, data):
    bundle, _ = signed
    doc = json.loads(bundle.raw)
    path, action, value, extra_key = data.draw(mutations({k: v for k, v in doc.items() if k != "payload"}))
    changed = _mutate({k: v for k, v in doc.items() if k != "payload"}, path, action, value, extra_key)
    if changed is None:
        return
    changed["payload"] = doc["payload"]
    raw = canonical_bytes(changed)
    if raw == bundle.raw:
        assert load_and_verify(raw).id == bundle.id
        return
    with pytest.raises(BundleError) as info:
        load_and_verify(raw, "fuzzed bundle")
    assert re.match(r"(fuzzed )?bundle\b", str(info.value)), str(info.value)  # says which bundle / part is wrong


# ---------------------------------------------------------------------------------- /docs offline

_URL_ATTR = re.compile(r"""(?:src|href)\s*=\s*["']([^"']+)["']|url:\s*["']([^"']+)["']""")


def test_docs_page_and_assets_are_served_locally_with_no_external_url(live):
    url = live["url"]
    page = requests.get(f"{url}/docs", timeout=10)
    assert page.status_code == 200 and page.headers["content-type"].startswith("text/html")
    assert "http://" not in page.text and "https://" not in page.text and "//cdn" not in page.text
    refs = [a or b for a, b in _URL_ATTR.findall(page.text)]
    assert "/openapi.json" in refs and any(r.endswith("swagger-ui-bundle.js") for r in refs), refs
    types = {}
    for ref in refs:
        assert ref.startswith("/") and not ref.startswith("//"), ref
        got = requests.get(url + ref, timeout=10)
        assert got.status_code == 200, (ref, got.status_code)
        types[ref.rsplit("/", 1)[-1]] = (got.headers["content-type"], got.content)
    assert types["swagger-ui-bundle.js"][0].startswith("application/javascript")
    assert b"SwaggerUIBundle" in types["swagger-ui-bundle.js"][1]
    assert types["swagger-ui.css"][0].startswith("text/css") and types["openapi.json"][0] == "application/json"
    assert requests.get(f"{url}/docs-assets/../server_db.py", timeout=10).status_code == 404
    missing_asset = requests.get(f"{url}/docs-assets/swagger-ui.js.map", timeout=10)
    assert missing_asset.status_code == 404
    assert_json_error(missing_asset)


@pytest.mark.browser
def test_docs_render_every_operation_in_a_browser_without_leaving_the_server(browser, live):
    url = live["url"]
    requested: list[str] = []
    context = browser.new_context()
    # anything not on this server is recorded and refused, as it would be offline
    context.route("**/*", lambda route: (requested.append(route.request.url),
                                         route.continue_() if route.request.url.startswith(url + "/")
                                         else route.abort()))
    page = context.new_page()
    page.goto(f"{url}/docs")
    page.wait_for_selector(".opblock-summary", timeout=30_000)
    n_ops = sum(len(ops) for ops in requests.get(f"{url}/openapi.json", timeout=10).json()["paths"].values())
    page.wait_for_function(f"() => document.querySelectorAll('.opblock').length === {n_ops}", timeout=30_000)
    shown = page.locator(".opblock-summary-path").all_inner_texts()
    assert {s.replace("\u200b", "") for s in shown} >= {"/api/bundles", "/api/leaderboard/{task}", "/api/log"}
    assert requested and all(u.startswith(url + "/") for u in requested), requested
    assert f"{url}/openapi.json" in requested and f"{url}/docs-assets/swagger-ui-bundle.js" in requested
    context.close()
