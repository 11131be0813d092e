"""A noisy run on the public board (issue 39 item 4): a bundle whose signed measurement summary flags its
timed figures noisy is marked on the API rows and on the page, and ``exclude_noisy=yes`` (the page's
filter, kept in the URL) ranks without it, exactly as the board of the other rows, listing it as left
off in the local board's words (one rule: ``scoring.leaderboard.noisy_in_environment``). Real servers,
real signed bundles, headless chromium.
"""

from __future__ import annotations

import pytest
import requests
from support.board import chromium
from support.sync import free_port, make_run, start_server, stop_server, workspace_with_key

from dynadesk.scoring.leaderboard import build_leaderboard
from dynadesk.store.evaluations import RunChange
from dynadesk.sync.client.create import create_bundle
from dynadesk.sync.client.upload import sync_queue
from dynadesk.sync.format.keys import key_info
from dynadesk.sync.server.admin import import_workspace_datasets
from dynadesk.sync.server.db import ServerDB

WHY = ["vader-movies-test batch1: other processes used 1.6 of 2 cores", "vader-movies-test batched: trials spread 120%"]
NOISY_ENV = {"cpu": "Test CPU", "cores": 2, "python": "3.11.2", "torch": "2.13.0", "gpu": None,
             "measurement": {"noisy": True, "noisy_measurements": WHY}}
MODELS = (("fast-small", 60.0, 3000.0, 0.2), ("slow-accurate", 75.0, 40.0, 6.0), ("middle", 68.0, 700.0, 1.0),
          ("busy", 70.0, 4200.0, 0.5))


def _serve(tmp_path, name: str, models, noisy: set[str]):
    """A workspace whose runs of ``models`` are bundled (those in ``noisy`` measured on a busy machine), synced to
    a fresh server; returns (url, store, stop)."""
    ws, store = workspace_with_key(tmp_path / f"ws-{name}")
    db_path = tmp_path / f"{name}.db"
    db = ServerDB(db_path)
    info = key_info(ws.keys_dir)
    db.add_key(info.fingerprint, bytes.fromhex(info.public_key_hex), "alice")
    for model, perf, tput, mem in models:
        run = make_run(store, ws.runs_dir, model=model, perf=perf, throughput=tput, memory=mem)
        if model in noisy:
            store.evaluations.update(run, RunChange(environment=NOISY_ENV))
        create_bundle(ws, store, run)
    import_workspace_datasets(db, ws.home)
    db.close()
    port = free_port()
    proc = start_server(db_path, port)
    url = f"http://127.0.0.1:{port}"
    assert sync_queue(store, url).ok

    def stop() -> None:
        stop_server(proc)
        store.close()
    return url, store, stop


@pytest.fixture(scope="module")
def boards(tmp_path_factory):
    """The board with the noisy run, and the board that never had it (what leaving it out must equal)."""
    tmp = tmp_path_factory.mktemp("noisy")
    full = _serve(tmp, "full", MODELS, {"busy"})
    quiet = _serve(tmp, "quiet", [m for m in MODELS if m[0] != "busy"], set())
    yield full, quiet
    full[2]()
    quiet[2]()


def _board(url: str, **params: str) -> dict:
    r = requests.get(f"{url}/api/leaderboard/sentiment", params={"hardware_class": "all", **params}, timeout=30)
    assert r.status_code == 200, r.text
    return r.json()


def test_noisy_row_is_marked_with_the_local_boards_reasons(boards):
    (url, store, _), _quiet = boards
    answer = _board(url)
    marks = {r["model"]: r["noisy"] for r in answer["rows"]}
    assert marks == {"fast-small": [], "slow-accurate": [], "middle": [], "busy": WHY}
    local = {r.model: r.noisy for r in build_leaderboard(store, "sentiment").rows}
    assert marks == local  # one rule for the local and the public board
    assert answer["filters"]["exclude_noisy"] is False and answer["left_off"] == {}
    busy = next(r for r in answer["rows"] if r["model"] == "busy")
    page = requests.get(url + busy["model_url"], timeout=30).text
    assert "timed measurements" in page and f"NOISY: {WHY[0]}; {WHY[1]}" in page
    quiet = next(r for r in answer["rows"] if r["model"] == "middle")
    assert "quiet (no noise flagged" in requests.get(url + quiet["model_url"], timeout=30).text


def test_exclude_noisy_ranks_the_board_of_the_other_rows_and_says_why(boards):
    (url, _store, _), (quiet_url, _qs, _) = boards
    left = _board(url, exclude_noisy="yes")
    never = _board(quiet_url)
    assert [r["model"] for r in left["rows"]] == [r["model"] for r in never["rows"]]
    assert "busy" not in [r["model"] for r in left["rows"]]
    for a, b in zip(left["rows"], never["rows"]):
        assert a["dynascore"] == pytest.approx(b["dynascore"], abs=1e-9)  # its throughput sets no exchange rate
    assert left["amrs"] == pytest.approx(never["amrs"])
    assert left["filters"]["exclude_noisy"] is True and left["total"] == 3
    why = left["left_off"]["busy"]
    assert "flagged noisy" in why and WHY[0] in why and "exclude_noisy=yes" in why and "--remeasure" in why
    ranked = _board(url, exclude_noisy="no")
    assert [r["model"] for r in ranked["rows"]] == [r["model"] for r in _board(url)["rows"]]


@pytest.mark.parametrize("path", ["/api/leaderboard/sentiment", "/"])
def test_a_bad_exclude_noisy_value_is_named(boards, path):
    (url, _store, _), _quiet = boards
    r = requests.get(url + path, params={"exclude_noisy": "maybe"}, timeout=30)
    assert r.status_code == 400 and "exclude_noisy" in r.text and "yes or no" in r.text


@pytest.mark.browser
def test_page_marks_the_noisy_row_and_its_filter_lives_in_the_url(boards):
    (url, _store, _), _quiet = boards
    for browser in chromium():
        page = browser.new_page()
        page.goto(url + "/?hardware_class=all")
        page.wait_for_selector("#board-sentiment tbody tr")
        busy = page.locator("#board-sentiment tbody tr[data-model=busy] td.model small.noisy")
        assert busy.count() == 1 and "noisy measurement" in busy.inner_text()
        assert WHY[0] in busy.get_attribute("title")
        assert page.locator("#board-sentiment tbody small.noisy").count() == 1
        page.select_option("#exclude_noisy", "yes")
        page.wait_for_function("() => !document.querySelector('#board-sentiment tbody tr[data-model=busy]')")
        assert "exclude_noisy=yes" in page.url
        assert "busy left off: its measured figures were flagged noisy" in page.inner_text("#task-sentiment .notes")
        shared = browser.new_page()  # the copied link gives the same view
        shared.goto(page.url)
        shared.wait_for_selector("#board-sentiment tbody tr")
        rows = shared.locator("#board-sentiment tbody tr").evaluate_all("rs => rs.map(r => r.dataset.model)")
        assert sorted(rows) == ["fast-small", "middle", "slow-accurate"]
        assert shared.locator("#exclude_noisy").input_value() == "yes"
        page.close()
        shared.close()
