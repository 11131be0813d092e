"""The sync client's retry, back-off and error handling against a real local HTTP endpoint."""

from __future__ import annotations

import json
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import pytest
from support.sync import free_port, make_run, workspace_with_key

from dynadesk.errors import ServerUnavailable, SyncError, UploadRejected
from dynadesk.sync.client.create import create_bundle
from dynadesk.sync.client.upload import SyncClient, sync_queue


class Scripted(BaseHTTPRequestHandler):
    """Answers POSTs from a script of (status, body) pairs; records what it received."""

    script: list[tuple[int, dict]] = []
    received: list[bytes] = []

    def do_POST(self):
        body = self.rfile.read(int(self.headers["Content-Length"]))
        type(self).received.append(body)
        status, answer = type(self).script.pop(0)
        data = json.dumps(answer).encode()
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def log_message(self, *args):
        pass


@pytest.fixture
def scripted():
    Scripted.script, Scripted.received = [], []
    srv = ThreadingHTTPServer(("127.0.0.1", 0), Scripted)
    t = threading.Thread(target=srv.serve_forever, daemon=True)
    t.start()
    yield f"http://127.0.0.1:{srv.server_address[1]}"
    srv.shutdown()
    srv.server_close()


def test_retries_with_exponential_backoff_then_succeeds(scripted):
    Scripted.script = [(503, {"error": "busy"}), (502, {}), (201, {"status": "accepted", "seq": 1})]
    sleeps = []
    answer = SyncClient(scripted, retries=3, backoff=0.25, sleep=sleeps.append).upload("b1", b"{}")
    assert answer["seq"] == 1 and sleeps == [0.25, 0.5] and len(Scripted.received) == 3


def test_refusal_is_not_retried_and_keeps_the_reason(scripted):
    Scripted.script = [(422, {"error": "bad_signature", "detail": "the Ed25519 signature does not verify"})]
    sleeps = []
    with pytest.raises(UploadRejected, match="bad_signature: the Ed25519") as info:
        SyncClient(scripted, sleep=sleeps.append).upload("b1", b"{}")
    assert info.value.status == 422 and info.value.code == "bad_signature" and sleeps == []


def test_unreachable_server_raises_after_all_attempts():
    sleeps = []
    client = SyncClient(f"http://127.0.0.1:{free_port()}", retries=2, backoff=0.01, sleep=sleeps.append)
    with pytest.raises(ServerUnavailable, match="after 3 attempt"):
        client.upload("b1", b"{}")
    assert sleeps == [0.01, 0.02]


def test_sync_queue_outcomes_are_recorded(tmp_path, scripted):
    ws, store = workspace_with_key(tmp_path / "ws")
    ids = [create_bundle(ws, store, make_run(store, ws.runs_dir, model=m)).id for m in ("a", "b", "c")]
    Scripted.script = [(201, {"status": "accepted", "seq": 1}),
                       (409, {"error": "replay", "detail": f"bundle {ids[1]} was already accepted at X"}),
                       (403, {"error": "unknown_key", "detail": "not registered"})]
    report = sync_queue(store, scripted, SyncClient(scripted, sleep=lambda s: None))
    assert report.ok and report.sent == [ids[0]] and report.already == [ids[1]]
    assert report.rejected == {ids[2]: "unknown_key: not registered"}
    assert Scripted.received == [store.bundles.raw(i) for i in ids]
    assert store.bundles.counts() == {"queued": 0, "sent": 2, "rejected": 1}
    assert store.bundles.get(ids[2]).last_error == "unknown_key: not registered"
    assert store.bundles.get(ids[0][:10]).id == ids[0]  # id prefixes resolve
    store.close()


def test_server_url_is_required_and_checked(tmp_path, monkeypatch):
    monkeypatch.delenv("DYNADESK_SERVER", raising=False)
    ws, store = workspace_with_key(tmp_path / "ws")
    with pytest.raises(SyncError, match="--server"):
        sync_queue(store)
    with pytest.raises(SyncError, match="http://"):
        SyncClient("ftp://example")
    store.close()
