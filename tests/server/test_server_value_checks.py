"""The server checks what it can (issue 44, item 6): a bundle's per-example outcomes must give its signed perf (to
the API's rounding) and each signed interval must contain its point value, else 422 naming the field. On SQLite
and PostgreSQL through the real app.

Seen failing first on the old server: a row whose outcomes are a perfect model's but whose signed perf is lower was
stored (201) and moved the honest rows' rank intervals; an interval lying wholly above its point was stored too.
"""

from __future__ import annotations

import copy
import time

import pytest
from fastapi.testclient import TestClient
from support.intervals import bundle_with, right, wrong
from support.sync import workspace_with_key

from dynadesk.sync.format.envelope import parse_bundle, sign_payload
from dynadesk.sync.format.keys import key_info, load_private_key
from dynadesk.sync.server.admin import import_workspace_datasets
from dynadesk.sync.server.app import create_app
from dynadesk.sync.server.db import ServerDB


def _some(golds: list[str]) -> list[str]:
    return wrong(golds[:6]) + golds[6:]


def _many(golds: list[str]) -> list[str]:
    return wrong(golds[:12]) + golds[12:]


@pytest.fixture
def valued(db_target, tmp_path):
    """A server with three honest rows (intervals and outcomes signed) and one perfect run's payload not uploaded."""
    ws, store = workspace_with_key(tmp_path / "ws")
    honest = [bundle_with(ws, store, "good", _some), bundle_with(ws, store, "fair", _many),
              bundle_with(ws, store, "worst", wrong)]
    perfect = parse_bundle(bundle_with(ws, store, "perfect", right).raw).payload.to_json()
    db = ServerDB(db_target)
    info = key_info(ws.keys_dir)
    db.add_key(info.fingerprint, bytes.fromhex(info.public_key_hex), "alice")
    import_workspace_datasets(db, ws.home)
    key = load_private_key(info.private_path)
    with TestClient(create_app(db_target, tmp_path / "server.key"), raise_server_exceptions=False) as client:
        for b in honest:
            assert client.post("/api/bundles", content=b.raw).status_code == 201
        yield client, key, perfect
    db.close()
    store.close()


def _view(client) -> list[tuple]:
    """Every row's label, Dynascore, badge and rank interval, once the rank intervals are worked out."""
    deadline = time.monotonic() + 30
    while True:
        answer = client.get("/api/leaderboard/sentiment", params={"hardware_class": "all"}).json()
        if not answer["rank_intervals_pending"]:
            return [(r["label"], round(r["dynascore"], 9), r["audit"]["state"], r["rank_interval"])
                    for r in answer["rows"]]
        assert time.monotonic() < deadline
        time.sleep(0.02)


def _refused(client, payload, key, field: str, words: str) -> None:
    r = client.post("/api/bundles", content=sign_payload(payload, key).raw)
    assert r.status_code == 422, r.text
    body = r.json()
    assert field in body["detail"] and words in body["detail"], body


def test_outcomes_that_do_not_give_the_signed_perf_are_refused(valued):
    client, key, perfect = valued
    before = _view(client)
    p = copy.deepcopy(perfect)
    p["model"]["name"] = "lowered"
    for m in p["metrics"]:
        if m["metric"] in ("perf", "macro_f1"):
            m["value"] = 62.0  # the outcomes are every example right: 100
    _refused(client, p, key, "payload.metrics[", "outcomes")
    assert _view(client) == before  # the honest rows' order, scores, badges and rank intervals
    honest = copy.deepcopy(perfect)
    honest["model"]["name"] = "perfect"
    assert client.post("/api/bundles", content=sign_payload(honest, key).raw).status_code == 201


def test_an_interval_not_containing_its_point_is_refused(valued):
    client, key, perfect = valued
    before = _view(client)
    p = copy.deepcopy(perfect)
    p["model"]["name"] = "above"
    for m in p["metrics"]:
        if m["metric"] in ("perf", "macro_f1"):
            m["value"] = 100.0
    iv = p["intervals"][0]
    iv["low"], iv["high"] = 100.0, 100.0  # contains the point: accepted below; now one that does not
    p["intervals"][1]["low"], p["intervals"][1]["high"] = 40.0, 60.0
    _refused(client, p, key, "payload.intervals[1]", "does not contain")
    assert _view(client) == before
