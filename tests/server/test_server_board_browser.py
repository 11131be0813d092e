"""The board page in a real headless browser (Debian chromium via Playwright): sliders re-rank live."""

from __future__ import annotations

import pytest
from support.sync import free_port, make_run, start_server, stop_server, workspace_with_key

from dynadesk.sync.client.create import create_bundle
from dynadesk.sync.client.upload import sync_queue
from dynadesk.sync.format.keys import key_info
from dynadesk.sync.server.admin import import_workspace_datasets
from dynadesk.sync.server.db import ServerDB


@pytest.fixture
def served_board(tmp_path):
    ws, store = workspace_with_key(tmp_path / "ws")
    db_path = tmp_path / "board.db"
    db = ServerDB(db_path)
    info = key_info(ws.keys_dir)
    db.add_key(info.fingerprint, bytes.fromhex(info.public_key_hex), "alice")
    for model, perf, tput, mem in (("fast-small", 60.0, 3000.0, 0.2), ("slow-accurate", 75.0, 40.0, 6.0),
                                   ("middle", 68.0, 700.0, 1.0)):
        create_bundle(ws, store, make_run(store, ws.runs_dir, model=model, perf=perf, throughput=tput, memory=mem))
    import_workspace_datasets(db, ws.home)
    port = free_port()
    proc = start_server(db_path, port)
    url = f"http://127.0.0.1:{port}"
    assert sync_queue(store, url).ok
    yield url, store
    stop_server(proc)
    store.close()
    db.close()


def _order(page) -> list[str]:
    return page.locator("#board-sentiment tbody tr[data-model]").evaluate_all("rows => rows.map(r => r.dataset.model)")


@pytest.mark.browser
def test_page_shows_board_and_sliders_rerank(browser, served_board):
    url, store = served_board
    page = browser.new_page()
    page.goto(url + "/")
    page.wait_for_selector("#board-sentiment tbody tr")
    assert sorted(_order(page)) == ["fast-small", "middle", "slow-accurate"]
    header = page.inner_text("#board-sentiment thead")
    assert "GiB" in header and "examples/s" in header and "Dynascore" in header
    page.click("#board-sentiment button.details-all")  # audit, runner, documents: in each row's details
    assert page.locator("#board-sentiment tbody .row-details .audit").all_inner_texts() == ["not audited"] * 3
    first_link = page.locator("#board-sentiment tbody tr td.model a").first.get_attribute("href")
    assert first_link.startswith("/models/") and len(first_link) == len("/models/") + 64
    raw_link = page.locator("#board-sentiment tbody tr a[title^='the signed bundle']").first.get_attribute("href")
    assert raw_link.startswith("/api/bundles/") and len(raw_link) == len("/api/bundles/") + 64
    section = page.locator("#task-sentiment")
    for name, value in (("perf", "5"), ("throughput", "0"), ("memory", "0")):
        section.locator(f"input[data-kind=metric][data-name={name}]").fill(value)
    page.wait_for_function(
        "() => document.querySelector('#board-sentiment tbody tr').dataset.model === 'slow-accurate'")
    by_perf = _order(page)
    for name, value in (("perf", "0"), ("throughput", "5"), ("robustness", "0"), ("fairness", "0")):
        section.locator(f"input[data-kind=metric][data-name={name}]").fill(value)
    page.wait_for_function("() => document.querySelector('#board-sentiment tbody tr').dataset.model === 'fast-small'")
    by_speed = _order(page)
    assert by_perf[0] == "slow-accurate" and by_speed[0] == "fast-small" and by_perf != by_speed
    assert page.locator("#task-sentiment input[data-kind=dataset]").count() == 2
    page.close()
