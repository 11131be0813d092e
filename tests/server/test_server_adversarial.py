"""Adversarial uploads against a real ``dynadesk-server`` process on loopback.

Three labs are registered; Lab A and Lab C upload honest bundles. Lab B, a registered
submitter, and strangers without a key then attack: identity collisions, forged submitter
fields, out-of-range and extreme values, oversized and non-canonical bodies, replays, stale
bundles, hostile query strings and upload floods. Every attack checks the refusal code and
that nothing honest changed (every honest row still there with its bundle and values).
Each attack was first run against the previous server code, where the identity collision,
the out-of-range values, the 0.4 s non-canonical body and the text-compared timestamps
all succeeded.
"""

from __future__ import annotations

import copy
import json
import time
from pathlib import Path
from typing import Any

import pytest
import requests
from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey
from support.sync import free_port, make_run, start_server, stop_server, workspace_with_key

from dynadesk.sync.client.create import build_payload
from dynadesk.sync.format import keys as K
from dynadesk.sync.format.envelope import Bundle, envelope_bytes, sign_payload
from dynadesk.sync.server.db import ServerDB

TASK = "sentiment"
LABS = ("Lab A", "Lab B", "Lab C")


class Board:
    """A running server, its labs' keys and a payload template (from a real stored run)."""

    def __init__(self, root: Path, limits: tuple[str, ...] | None = None):
        self.ws, self.store = workspace_with_key(root / "ws")
        self.template = build_payload(self.store, make_run(self.store, self.ws.runs_dir, model="bert"), "x")
        self.keys = {lab: Ed25519PrivateKey.generate() for lab in LABS}
        db = ServerDB(root / "board.db")
        for lab, key in self.keys.items():
            db.add_key(self.fp(lab), K.public_raw(key), lab)
        for d in self.template["datasets"]:
            db.add_dataset(TASK, d["name"], d["split"], d["digest"], d["size"])
        db.close()
        self.db_path = root / "board.db"
        self.port = free_port()
        self.url = f"http://127.0.0.1:{self.port}"
        self.proc = start_server(self.db_path, self.port, *([limits] if limits else []))
        self.n = 0

    def fp(self, lab: str) -> str:
        return K.fingerprint(K.public_raw(self.keys[lab]))

    def payload(self, lab: str, model: str, perf: float = 70.0, created: str | None = None) -> dict[str, Any]:
        p = copy.deepcopy(self.template)
        self.n += 1
        p["submitter"]["key_fingerprint"] = self.fp(lab)
        p["model"]["name"] = model
        p["created_at"] = created or f"2026-01-01T00:00:{self.n % 60:02d}.{self.n % 1000:03d}Z"
        p["evaluation_id"] = self.n  # every bundle distinct
        for m in p["metrics"]:
            if m["metric"] in ("perf", "macro_f1"):
                m["value"] = perf
        return p

    def bundle(self, lab: str, model: str, **kw: Any) -> Bundle:
        return sign_payload(self.payload(lab, model, **kw), self.keys[lab])

    def post(self, raw: bytes, path: str = "/api/bundles", **kw: Any) -> requests.Response:
        return requests.post(self.url + path, data=raw, headers={"Content-Type": "application/json"},
                             timeout=30, **kw)

    def board(self, query: str = "") -> dict[str, Any]:
        r = requests.get(f"{self.url}/api/leaderboard/{TASK}{query}", timeout=30)
        assert r.status_code == 200, r.text
        return r.json()

    def honest_view(self) -> dict[str, tuple[str, str, dict[str, Any]]]:
        """row id -> (bundle id, model, raw values) of every honest lab's row."""
        return {r["row_id"]: (r["bundle_id"], r["model"], r["values"]) for r in self.board()["rows"]
                if r["key_fingerprint"] != self.fp("Lab B")}

    def count(self) -> int:
        return len(requests.get(f"{self.url}/api/log?limit=10000", timeout=30).json()["entries"])


@pytest.fixture(scope="module")
def board(tmp_path_factory):
    b = Board(tmp_path_factory.mktemp("adversarial"))
    try:
        for lab, model, perf in (("Lab A", "bert", 71.0), ("Lab C", "bert", 65.0), ("Lab A", "roberta", 75.0),
                                 ("Lab C", "distil", 60.0)):
            assert b.post(b.bundle(lab, model, perf=perf).raw).status_code == 201
        b.honest = b.honest_view()
        assert len(b.honest) == 4
        yield b
    finally:
        stop_server(b.proc)


def forge(payload: dict[str, Any], key: Ed25519PrivateKey) -> bytes:
    """A canonical envelope signed by ``key`` whatever the payload claims (sign_payload would refuse it)."""
    from dynadesk.sync.format.canonical import canonical_bytes

    body = canonical_bytes(payload)
    return envelope_bytes(body, K.public_raw(key), key.sign(body))


def unchanged(board: Board) -> None:
    assert board.honest_view() == board.honest, "an honest row changed"


def refused(board: Board, r: requests.Response, status: int, code: str, detail: str = "") -> None:
    before = board.count()
    assert r.status_code == status, r.text
    body = r.json()
    assert body["error"] == code and detail in body["detail"], body
    assert board.count() == before
    unchanged(board)


# ------------------------------------------------------------------ identity

def test_a_model_named_like_another_labs_label_does_not_hide_its_row(board):
    fp_a = board.fp("Lab A")
    for name in ("bert (Lab A)", "bert", f"bert@{fp_a}"):
        assert board.post(board.bundle("Lab B", name, perf=10.0).raw).status_code == 201
    # the board's own qualifier form is refused outright (issue 32): a name cannot carry another lab's label
    refused(board, board.post(board.bundle("Lab B", f"bert (Lab A, {fp_a[7:15]})", perf=10.0).raw), 422,
            "invalid_model_name", "submitter qualifier")
    unchanged(board)
    rows = board.board()["rows"]
    assert len({r["row_id"] for r in rows}) == len(rows) == 7
    mine = [r for r in rows if r["key_fingerprint"] == fp_a]
    assert sorted(r["model"] for r in mine) == ["bert", "roberta"] and all(r["submitter"] == "Lab A" for r in mine)


def test_a_bundle_naming_another_labs_key_is_refused(board):
    forged = board.payload("Lab B", "bert", perf=99.0)
    forged["submitter"]["key_fingerprint"] = board.fp("Lab A")
    refused(board, board.post(forge(forged, board.keys["Lab B"])), 422, "key_mismatch",
            "payload.submitter.key_fingerprint")


def test_a_bundle_carrying_another_labs_public_key_but_signed_by_the_attacker_is_refused(board):
    payload = board.payload("Lab A", "bert", perf=99.0)
    from dynadesk.sync.format.canonical import canonical_bytes

    body = canonical_bytes(payload)
    raw = envelope_bytes(body, K.public_raw(board.keys["Lab A"]), board.keys["Lab B"].sign(body))
    refused(board, board.post(raw), 422, "bad_signature")


def test_a_stranger_key_is_refused_before_anything_is_parsed(board):
    stranger = Ed25519PrivateKey.generate()
    p = board.payload("Lab A", "bert", perf=99.0)
    p["submitter"]["key_fingerprint"] = K.fingerprint(K.public_raw(stranger))
    refused(board, board.post(sign_payload(p, stranger).raw), 403, "unknown_key")


# ------------------------------------------------------------------ values

@pytest.mark.parametrize("metric, value, unit, field", [
    ("perf", 1e6, "score", "value"), ("perf", 100.0001, "score", "value"), ("perf", -5.0, "score", "value"),
    ("macro_f1", 1e300, "score", "value"), ("throughput", 1e300, "examples/s", "value"),
    ("throughput", 0.0, "examples/s", "value"), ("memory", -1.0, "GiB", "value"), ("memory", 5e-324, "GiB", None),
    ("memory", 0.4, "bananas", "unit"), ("perf", 70.0, "GiB", "unit"),
])
def test_values_outside_the_task_registry_are_refused_naming_the_field(board, metric, value, unit, field):
    p = board.payload("Lab B", "inflated")
    idx = next(i for i, m in enumerate(p["metrics"]) if m["metric"] == metric)
    p["metrics"][idx].update(value=value, unit=unit)
    r = board.post(sign_payload(p, board.keys["Lab B"]).raw)
    if field is None:  # a tiny but positive memory is a legal (if odd) measurement
        assert r.status_code == 201, r.text
        unchanged(board)
        return
    refused(board, r, 422, "invalid_metric", f"payload.metrics[{idx}].{field}")


def test_a_metric_the_task_does_not_have_is_refused(board):
    p = board.payload("Lab B", "inflated")
    p["metrics"].append({"dataset": "", "metric": "squad_f1", "value": 50.0, "unit": "score", "deterministic": True})
    refused(board, board.post(sign_payload(p, board.keys["Lab B"]).raw), 422, "invalid_metric",
            f"payload.metrics[{len(p['metrics']) - 1}].metric")


def test_units_shown_come_from_the_server_registry(board):
    metrics = board.board()["metrics"]
    assert (metrics["perf"]["unit"], metrics["throughput"]["unit"], metrics["memory"]["unit"]) == \
        ("score", "examples/s", "GiB")


# ------------------------------------------------------------------ bodies

def test_an_oversized_body_is_refused_without_reading_it_all(board):
    refused(board, board.post(b"{" + b" " * (2 << 20) + b"}"), 413, "too_large")


def test_a_large_non_canonical_body_without_a_key_costs_the_server_almost_nothing(board):
    stranger = Ed25519PrivateKey.generate()
    p = board.payload("Lab A", "bert")
    p["submitter"]["key_fingerprint"] = K.fingerprint(K.public_raw(stranger))
    p["environment"]["pad"] = ["x" * 100] * 9000
    doc = json.loads(sign_payload(p, stranger).raw)
    raw = json.dumps(doc, separators=(", ", ": ")).encode()  # same content, not canonical, ~0.9 MiB
    assert len(raw) > 900_000
    started = time.perf_counter()
    r = board.post(raw)
    took = time.perf_counter() - started
    refused(board, r, 400, "malformed_bundle", "canonical")
    assert took < 0.2, f"{took:.3f} s"  # the old order parsed and re-serialised it first (0.4 s)


def test_a_non_canonical_payload_inside_a_canonical_frame_from_a_stranger_is_refused_as_unknown_key(board):
    stranger = Ed25519PrivateKey.generate()
    p = board.payload("Lab A", "bert")
    p["submitter"]["key_fingerprint"] = K.fingerprint(K.public_raw(stranger))
    body = json.dumps(p, indent=1).encode()
    raw = envelope_bytes(body, K.public_raw(stranger), stranger.sign(body))
    refused(board, board.post(raw), 403, "unknown_key")


def test_a_registered_keys_non_canonical_payload_is_refused_after_its_signature(board):
    p = board.payload("Lab B", "bert")
    body = json.dumps(p, indent=1).encode()
    raw = envelope_bytes(body, K.public_raw(board.keys["Lab B"]), board.keys["Lab B"].sign(body))
    refused(board, board.post(raw), 400, "malformed_bundle", "not in RFC 8785 canonical form")


# ------------------------------------------------------------------ replays and time

def test_a_replayed_honest_bundle_is_refused(board):
    bid = next(iter(board.honest.values()))[0]
    raw = requests.get(f"{board.url}/api/bundles/{bid}", timeout=30).content
    refused(board, board.post(raw), 409, "replay", bid)


def test_an_older_bundle_arriving_later_never_replaces_the_newer_row(board):
    newer = board.bundle("Lab C", "timed", perf=80.0, created="2026-01-01T00:00:00.500Z")
    older = board.bundle("Lab C", "timed", perf=20.0, created="2026-01-01T00:00:00Z")  # sorts later as text
    assert board.post(newer.raw).status_code == 201
    assert board.post(older.raw).status_code == 201  # kept in the log, not shown
    (row,) = [r for r in board.board()["rows"] if r["model"] == "timed"]
    assert row["bundle_id"] == newer.id
    board.honest = board.honest_view()


def test_a_future_dated_bundle_is_refused(board):
    refused(board, board.post(board.bundle("Lab B", "bert", created="2099-01-01T00:00:00.000Z").raw), 422,
            "future_timestamp")


# ------------------------------------------------------------------ query strings

@pytest.mark.parametrize("query, detail", [
    ("?weight.dynascore=1", "unknown metric"), ("?limit=abc", "limit"), ("?limit=1000000000000", "limit"),
    ("?offset=-1", "offset"), ("?dataset.nope=1", "nope"), ("?weight.perf=nan", "metric 'perf'"),
    ("?weight.perf=-1", "metric 'perf'"), ("?x" + "=1&x" * 2000 + "=1", "unknown query parameter"),
    ("?weight.perf=%00", "weight.perf"), ("?%FF%FE=1", "unknown query parameter"),
])
def test_hostile_query_strings_get_a_clear_400(board, query, detail):
    r = requests.get(f"{board.url}/api/leaderboard/{TASK}{query}", timeout=30)
    assert r.status_code == 400 and r.json()["error"] == "invalid_request" and detail in r.json()["detail"], r.text
    unchanged(board)


def test_hostile_paths_and_ids(board):
    for path in ("/api/bundles/" + "A" * 64, "/api/attestations/../../etc/passwd", "/api/bundles?after=-1",
                 "/api/leaderboard/" + "x" * 5000):
        r = requests.get(board.url + path, timeout=30)
        assert 400 <= r.status_code < 500 and set(r.json()) == {"error", "detail"}, (path, r.text)
    unchanged(board)


# ------------------------------------------------------------------ rate limits

def test_an_address_flooding_uploads_gets_429_with_retry_after(tmp_path):
    b = Board(tmp_path, limits=("--address-rate", "0.5/5", "--key-rate", "1000/1000"))
    try:
        honest = b.bundle("Lab A", "bert")
        assert b.post(honest.raw).status_code == 201
        codes = [b.post(b"{}").status_code for _ in range(8)]
        # the signed upload above was charged to Lab A's key, not to the address (test_server_rate_limits.py)
        assert codes[:5] == [400] * 5 and set(codes[5:]) == {429}, codes
        r = b.post(b"{}")
        assert r.status_code == 429 and r.json()["error"] == "rate_limited" and int(r.headers["Retry-After"]) >= 1
        assert [row["bundle_id"] for row in b.board()["rows"]] == [honest.id]  # reads are not limited
    finally:
        stop_server(b.proc)


def test_one_key_flooding_uploads_is_limited_without_slowing_another_key(tmp_path):
    b = Board(tmp_path, limits=("--address-rate", "1000/1000", "--key-rate", "0.2/3"))
    try:
        codes = [b.post(b.bundle("Lab B", f"spam{i}").raw).status_code for i in range(6)]
        assert codes[:3] == [201] * 3 and set(codes[3:]) == {429}, codes
        assert b.post(b.bundle("Lab A", "bert").raw).status_code == 201  # Lab A's own allowance is untouched
        # junk naming Lab A's key but not signed by it does not spend Lab A's allowance
        p = b.payload("Lab A", "x")
        body = json.dumps(p, separators=(",", ":"), sort_keys=True).encode()
        for _ in range(5):
            raw = envelope_bytes(body, K.public_raw(b.keys["Lab A"]), b.keys["Lab B"].sign(body))
            assert b.post(raw).status_code == 422
        assert b.post(b.bundle("Lab A", "roberta").raw).status_code == 201
    finally:
        stop_server(b.proc)
