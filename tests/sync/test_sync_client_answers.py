"""Attacks on the client's one HTTP boundary: a board that answers garbage gets a clear error, never a traceback.

A real local HTTP server answers each path from a script: HTML instead of JSON, JSON of the wrong shape,
a missing key, a dropped connection, a 500 with an HTML page. Every call that talks to a board (upload,
log check, snapshot evidence, the audit's transparency check) must raise an error of
``dynadesk/errors.py`` naming the URL (and the field), or report the check as not comparable; a bundle
whose upload got a garbled answer stays queued.
"""

from __future__ import annotations

import json
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import pytest
from support.sync import make_run, workspace_with_key

from dynadesk.audit.report import NOT_COMPARABLE
from dynadesk.audit.transparency import check_transparency
from dynadesk.errors import DynaDeskError, ServerUnavailable, SyncError
from dynadesk.sync.client.create import create_bundle
from dynadesk.sync.client.upload import SyncClient, check_log, snapshot_evidence, sync_queue

HTML = "text/html"
JSON = "application/json"
DROP = "drop"  # close the connection without an answer


class Board(BaseHTTPRequestHandler):
    """Answers every request to a path (the query string ignored) with the scripted (status, type, body)."""

    routes: dict[str, tuple[int, str, bytes] | str] = {}
    seen: list[str] = []

    def _answer(self) -> None:
        path = self.path.split("?")[0]
        type(self).seen.append(f"{self.command} {path}")
        if self.command == "POST":
            self.rfile.read(int(self.headers.get("Content-Length") or 0))
        answer = type(self).routes.get(path, (404, JSON, b'{"error": "not_found"}'))
        if answer == DROP:
            self.close_connection = True
            self.connection.shutdown(2)
            return
        status, ctype, body = answer
        self.send_response(status)
        self.send_header("Content-Type", ctype)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    do_GET = do_POST = _answer

    def log_message(self, *args):
        pass


def js(value) -> tuple[int, str, bytes]:
    return 200, JSON, json.dumps(value).encode()


@pytest.fixture
def board():
    Board.routes, Board.seen = {}, []
    srv = ThreadingHTTPServer(("127.0.0.1", 0), Board)
    threading.Thread(target=srv.serve_forever, daemon=True).start()
    yield f"http://127.0.0.1:{srv.server_address[1]}"
    srv.shutdown()
    srv.server_close()


def signed_head(size: int, chain_hash: str) -> dict:
    from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey

    from dynadesk.sync.format.translog import sign_head

    return sign_head(Ed25519PrivateKey.generate(), size, chain_hash, "2026-01-01T00:00:00Z")


def client(url: str) -> SyncClient:
    return SyncClient(url, retries=1, backoff=0.0, sleep=lambda s: None, timeout=5)


@pytest.fixture
def ws_store(tmp_path):
    ws, store = workspace_with_key(tmp_path / "ws")
    yield ws, store
    store.close()


def test_log_check_with_html_instead_of_json_names_the_url(board, ws_store):
    _ws, store = ws_store
    Board.routes["/api/log"] = (200, HTML, b"<html><body>Welcome to nginx!</body></html>")
    with pytest.raises(SyncError, match=r"GET .*/api/log\?start=1.*not JSON.*text/html"):
        check_log(store, board, client(board))


@pytest.mark.parametrize(("answer", "field"), [
    ({"entries": []}, "head"),
    ({"head": {"size": 0, "hash": "x", "public_key": "00"}}, "entries"),
    ({"head": {"size": "ten", "hash": "x", "public_key": "00"}, "entries": []}, "head.size"),
    ({"head": {"size": 0, "public_key": "00"}, "entries": []}, "head.hash"),
    (["not", "an", "object"], "a JSON object"),
])
def test_log_check_with_a_missing_or_mistyped_field_names_it(board, ws_store, answer, field):
    _ws, store = ws_store
    Board.routes["/api/log"] = js(answer)
    with pytest.raises(SyncError, match=rf"/api/log\?start=1.*{field}"):
        check_log(store, board, client(board))


def test_log_check_with_an_entry_missing_its_fields_is_an_integrity_error(board, ws_store):
    _ws, store = ws_store
    Board.routes["/api/log"] = js({"head": signed_head(1, "0" * 64), "entries": [{"seq": 1, "prev_hash": "0" * 64}]})
    with pytest.raises(DynaDeskError, match="log entry 1.*bundle_id"):
        check_log(store, board, client(board))


def test_snapshot_evidence_of_the_wrong_shape_names_the_url(board):
    snapshot = "a" * 64
    Board.routes[f"/api/snapshots/{snapshot}/evidence"] = js([1, 2, 3])
    with pytest.raises(SyncError, match=rf"/api/snapshots/{snapshot}/evidence.*a JSON object"):
        snapshot_evidence(f"{board}/snapshots/{snapshot}", client(board))


def test_a_dropped_connection_is_server_unavailable_naming_the_url(board):
    Board.routes["/api/log"] = DROP
    with pytest.raises(ServerUnavailable, match=r"/api/log.*after 2 attempt"):
        client(board).get_json("/api/log")


def test_a_500_with_an_html_page_is_server_unavailable_without_the_page(board):
    page = b"<html><head><title>500</title></head><body>" + b"x" * 5000 + b"</body></html>"
    Board.routes["/api/log"] = (500, HTML, page)
    with pytest.raises(ServerUnavailable, match=r"/api/log.*HTTP 500") as info:
        client(board).get_json("/api/log")
    assert len(str(info.value)) < 600


def test_a_404_names_the_url_and_status(board):
    with pytest.raises(SyncError, match=r"GET .*/api/nowhere: HTTP 404"):
        client(board).get_json("/api/nowhere")


@pytest.mark.parametrize("answer", [(201, HTML, b"<html>created</html>"), (201, JSON, b"[1, 2]"),
                                    (409, JSON, b'["replay"]')])
def test_a_garbled_answer_to_an_upload_keeps_the_bundle_queued(board, ws_store, answer):
    ws, store = ws_store
    bundle = create_bundle(ws, store, make_run(store, ws.runs_dir, model="a"))
    Board.routes["/api/bundles"] = answer
    report = sync_queue(store, board, client(board))
    assert not report.ok and report.still_queued == [bundle.id] and not report.sent
    assert "/api/bundles" in report.error and f"HTTP {answer[0]}" in report.error
    assert [b.id for b in store.bundles.pending()] == [bundle.id]


@pytest.mark.parametrize(("route", "answer"), [
    ("/api/log", (200, HTML, b"<html>maintenance</html>")),
    ("/api/log", js({"entries": "none"})),
    ("/api/server-key", js(["not", "a", "key"])),
    ("/api/server-key", (200, HTML, b"<html>login</html>")),
])
def test_the_audit_transparency_check_reports_a_garbled_board_as_not_comparable(board, ws_store, route, answer):
    ws, store = ws_store
    bundle = create_bundle(ws, store, make_run(store, ws.runs_dir, model="a"))
    Board.routes["/api/log"] = js({"head": signed_head(0, "0" * 64), "entries": []})
    Board.routes[route] = answer
    checks = check_transparency(bundle, board, client=client(board))
    assert checks[0].field == "transparency.log" and checks[0].verdict == NOT_COMPARABLE
    assert route in checks[0].note


def test_the_audit_fetches_the_served_copy_through_the_client(board, ws_store):
    """The server copy is read through SyncClient (one HTTP boundary): a dropped connection is named."""
    import hashlib

    from dynadesk.sync.format.translog import GENESIS, entry_hash

    ws, store = ws_store
    bundle = create_bundle(ws, store, make_run(store, ws.runs_dir, model="a"))
    sha = hashlib.sha256(bundle.raw).hexdigest()
    h = entry_hash(1, bundle.id, sha, "2026-01-01T00:00:00Z", GENESIS)
    Board.routes["/api/log"] = js({"head": signed_head(1, h), "entries": [
        {"seq": 1, "bundle_id": bundle.id, "bundle_sha256": sha, "received_at": "2026-01-01T00:00:00Z",
         "prev_hash": GENESIS, "entry_hash": h}]})
    Board.routes["/api/server-key"] = js({"fingerprint": "f"})
    Board.routes[f"/api/bundles/{bundle.id}"] = DROP
    checks = {c.field: c for c in check_transparency(bundle, board, client=client(board))}
    assert checks["transparency.entry"].verdict != NOT_COMPARABLE
    copy = checks["transparency.server_copy"]
    assert copy.verdict == NOT_COMPARABLE and f"/api/bundles/{bundle.id}" in copy.note
    assert Board.seen.count(f"GET /api/bundles/{bundle.id}") == 2  # retried like every other request
