"""The public board's intervals, "tied with" marks and rank intervals: stored at ingest, shown by the API, the
board page and the model page, on SQLite and on a real PostgreSQL (hand-made cases whose answer is known)."""

from __future__ import annotations

import time

import pytest
from fastapi.testclient import TestClient
from support.intervals import bundle_with, right, wrong
from support.sync import workspace_with_key

from dynadesk.scoring import bootstrap as B
from dynadesk.sync.format.keys import key_info
from dynadesk.sync.server.admin import import_workspace_datasets
from dynadesk.sync.server.app import create_app
from dynadesk.sync.server.db import ServerDB


def _almost(golds: list[str]) -> list[str]:
    """Right on all but the first two examples of each test set."""
    return wrong(golds[:2]) + golds[2:]


@pytest.fixture
def board(db_target, tmp_path):
    """A server (SQLite file or PostgreSQL) holding three bundles: two with identical predictions, one wrong
    on every example."""
    ws, store = workspace_with_key(tmp_path / "ws")
    bundles = [bundle_with(ws, store, "copy-a", right), bundle_with(ws, store, "copy-b", right),
               bundle_with(ws, store, "wrong", wrong)]
    db = ServerDB(db_target)
    info = key_info(ws.keys_dir)
    db.add_key(info.fingerprint, bytes.fromhex(info.public_key_hex), "alice")
    import_workspace_datasets(db, ws.home)
    with TestClient(create_app(db_target, tmp_path / "server.key"), raise_server_exceptions=False) as client:
        for b in bundles:
            assert client.post("/api/bundles", content=b.raw).status_code == 201
        yield client, db, ws, store, bundles
    db.close()
    store.close()


def _ask(client, **params) -> dict:
    resp = client.get("/api/leaderboard/sentiment", params={"hardware_class": "all", **params})
    assert resp.status_code == 200, resp.text
    return resp.json()


def _rows(client, **params) -> dict:
    """The answer once its rank intervals are worked out (a new weight setting's are, off the request path)."""
    deadline = time.monotonic() + 30
    while True:
        answer = _ask(client, **params)
        if not answer["rank_intervals_pending"]:
            return answer
        assert all(r["rank_interval"] is None for r in answer["rows"])
        assert time.monotonic() < deadline, "rank intervals still pending after 30 s"
        time.sleep(0.02)


def test_a_new_weight_setting_answers_at_once_and_its_rank_intervals_follow(board, db_target, tmp_path):
    """The first ask at weights the server never saw is not held up by the rank intervals: everything else is
    there and the answer says they are pending; the next asks get them, equal to an answer that waited."""
    client, db, ws, store, bundles = board
    weights = {"weight.perf": "2.5", "dataset.vader-movies-test": "3"}
    first = _ask(client, **weights)
    assert first["rank_intervals_pending"] is True and "rank_intervals_pending" in first["intervals"]
    assert [r["rank_interval"] for r in first["rows"]] == [None] * 3
    assert first["rows"][0]["tied_with"] == "copy-b" and first["rows"][0]["intervals"]  # the rest is complete
    settled = _rows(client, **weights)
    assert [r["rank_interval"] for r in settled["rows"]] == [[1, 1], [1, 1], [3, 3]]
    assert {k: v for k, v in first.items() if k != "rows" and k != "rank_intervals_pending"} == \
        {k: v for k, v in settled.items() if k != "rows" and k != "rank_intervals_pending"}
    from dynadesk.sync.server.board_view import BoardView
    from dynadesk.sync.server.task_registry import board_tasks
    from dynadesk.sync.server.values import registry

    tasks = board_tasks(db)
    one = _ask(client, **weights, **{"weight.memory": "4"}, limit="1", offset="2")  # a page of one row, new weights
    assert one["rank_intervals_pending"] is True  # the rank is among every row: still worked out off the path
    waited = BoardView(db, tasks, {n: registry(t) for n, t in tasks.items()}).answer(
        "sentiment", {"hardware_class": "all", **weights})  # no defer (snapshots, scripts): complete at once
    assert waited["rank_intervals_pending"] is False
    assert [r["rank_interval"] for r in waited["rows"]] == [r["rank_interval"] for r in settled["rows"]]


def test_identical_predictions_tie_with_zero_width_and_strictly_better_does_not(board):
    client, db, ws, store, bundles = board
    answer = _rows(client)
    rows = {r["model"]: r for r in answer["rows"]}
    assert [r["model"] for r in answer["rows"]] == ["copy-a", "copy-b", "wrong"]
    assert answer["intervals"]["resamples"] == B.RESAMPLES and answer["intervals"]["level"] == 95.0
    a, b, w = rows["copy-a"], rows["copy-b"], rows["wrong"]
    assert a["tied_with"] == "copy-b"
    for test in a["paired_next"].values():
        assert test["tied"] and test["delta"] == test["low"] == test["high"] == 0.0 and test["with"] == "copy-b"
    assert len(a["paired_next"]) == 2
    assert b["tied_with"] is None and all(not t["tied"] and t["low"] > 0 for t in b["paired_next"].values())
    assert w["paired_next"] == {} and w["tied_with"] is None
    # the intervals shown are the bundle's signed ones, and a metric right on every example has width zero
    signed = {iv["dataset"]: iv for iv in bundles[0].payload.to_json()["intervals"]}
    assert set(a["intervals"]) == set(signed)
    for name, iv in a["intervals"].items():
        assert iv["low"] == iv["high"] == 100.0 == signed[name]["low"]
    assert a["rank_interval"] == [1, 1] and b["rank_interval"] == [1, 1] and w["rank_interval"] == [3, 3]


def test_stored_at_ingest_and_the_same_after_a_restart(board, db_target, tmp_path):
    client, db, ws, store, bundles = board
    stored = db.bundle_stats([b.id for b in bundles])
    assert set(stored) == {b.id for b in bundles}
    first = _rows(client)["rows"]
    with TestClient(create_app(db_target, tmp_path / "server.key")) as again:
        assert _rows(again)["rows"] == first


def test_a_near_model_gets_a_rank_interval_and_weights_keep_it_consistent(board, tmp_path):
    client, db, ws, store, bundles = board
    more = bundle_with(ws, store, "almost", _almost)  # wrong on 2 of the 30 examples of each test set
    assert client.post("/api/bundles", content=more.raw).status_code == 201
    for params in ({}, {"dataset.vader-movies-test": "0"}, {"weight.perf": "1", "weight.memory": "3"}):
        rows = _rows(client, **params)["rows"]
        for r in rows:  # the rank a row has lies in its rank interval
            assert r["rank_interval"][0] <= r["rank"] <= r["rank_interval"][1], (params, r["model"])
        named = {r["model"]: r for r in rows}
        assert named["almost"]["rank"] == 3 and named["wrong"]["rank_interval"] == [4, 4]
        assert named["almost"]["rank_interval"][0] < 3 or named["copy-b"]["tied_with"] == "almost"
    assert _rows(client)["rows"] == _rows(client)["rows"]  # cached per board state: the same answer again


def test_model_page_shows_intervals_and_standing(board):
    client, db, ws, store, bundles = board
    page = client.get(f"/models/{bundles[0].id}")
    assert page.status_code == 200
    text = page.text
    assert 'id="intervals"' in text and "100.00–100.00" in text
    lower = text.lower()
    assert "tied with the next row, copy-b" in lower and 'rank 95% interval: <strong class="rank-interval">1–1' in lower


@pytest.fixture
def served(tmp_path):
    """The same three bundles on a real ``dynadesk-server serve`` process (SQLite)."""
    from support.sync import free_port, start_server, stop_server

    from dynadesk.sync.client.upload import sync_queue

    ws, store = workspace_with_key(tmp_path / "ws")
    for model, predict in (("copy-a", right), ("copy-b", right), ("wrong", wrong)):
        bundle_with(ws, store, model, predict)
    db = ServerDB(tmp_path / "board.db")
    info = key_info(ws.keys_dir)
    db.add_key(info.fingerprint, bytes.fromhex(info.public_key_hex), "alice")
    import_workspace_datasets(db, ws.home)
    db.close()
    port = free_port()
    proc = start_server(tmp_path / "board.db", port)
    url = f"http://127.0.0.1:{port}"
    assert sync_queue(store, url).ok
    yield url
    stop_server(proc)
    store.close()


@pytest.mark.browser
def test_the_page_draws_interval_bars_ties_and_rank_intervals(browser, served):
    import requests

    api = requests.get(f"{served}/api/leaderboard/sentiment", timeout=10).json()
    page = browser.new_page()
    page.goto(served + "/")
    page.wait_for_selector("#board-sentiment tbody tr")
    # the page asks again while the server works out rank intervals at a weight setting new to it
    page.wait_for_selector("#task-sentiment[data-ranks-pending='false']", timeout=15_000)
    rows = page.locator("#board-sentiment tbody tr")
    assert rows.evaluate_all("rs => rs.map(r => r.dataset.model)") == ["copy-a", "copy-b", "wrong"]
    tied = page.locator("#board-sentiment tbody td.tied").all_inner_texts()
    assert tied == ["≈ copy-b", "", ""]
    assert page.locator("#board-sentiment tbody td.rank-interval").all_inner_texts() == ["1", "1", "3"]
    header = page.inner_text("#board-sentiment thead")
    assert "Rank 95%" in header and "Tied with next" in header
    bars = page.locator("#board-sentiment tbody tr[data-model='copy-a'] svg.interval")
    drawn = bars.evaluate_all("bs => bs.map(b => [Number(b.dataset.low), Number(b.dataset.high)])")
    want = sorted(api["rows"][0]["intervals"].items())
    assert drawn == [[iv["low"], iv["high"]] for _, iv in want] and len(drawn) == 2
    worst = page.locator("#board-sentiment tbody tr[data-model='wrong'] svg.interval").first.get_attribute("aria-label")
    assert worst.startswith("95% interval 0.00–0.00")
    # a weight setting no one asked for: its first answer comes without rank intervals, and the page asks again
    before = int(page.get_attribute("#task-sentiment", "data-loaded"))
    page.eval_on_selector("#w-metric-perf", "el => { el.value = '3.5'; el.dispatchEvent(new Event('input')); }")
    page.wait_for_function(f"() => Number(document.querySelector('#task-sentiment').dataset.loaded) >= {before + 2}",
                           timeout=15_000)
    page.wait_for_selector("#task-sentiment[data-ranks-pending='false']", timeout=15_000)
    assert page.locator("#board-sentiment tbody td.rank-interval").all_inner_texts() == ["1", "1", "3"]
    page.close()
