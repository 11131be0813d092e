"""The public board for a reading researcher (issue 47 item 5), in headless Chromium: the ranking's first rows
above the fold at 1366x768, the table within the page's width with a row's other fields (score breakdown,
submitter, runner, audit, documents) in a row expansion, no horizontal page overflow at 375 px, and the
``/snapshots`` index of signed snapshots."""

from __future__ import annotations

import json

import pytest
import requests
from click.testing import CliRunner
from support.sync import free_port, make_run, start_server, stop_server, workspace_with_key

from dynadesk.sync.client.create import create_bundle
from dynadesk.sync.client.upload import sync_queue
from dynadesk.sync.format.keys import key_info
from dynadesk.sync.server.admin import import_workspace_datasets
from dynadesk.sync.server.cli import cli as server_cli
from dynadesk.sync.server.db import ServerDB

pytestmark = pytest.mark.browser
MODELS = (("fast-small", 60.0, 3000.0, 0.2), ("slow-accurate", 75.0, 40.0, 6.0), ("middle", 68.0, 700.0, 1.0),
          ("a-model-with-a-rather-long-descriptive-name-v2", 71.0, 300.0, 2.0))


@pytest.fixture(scope="module")
def board(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("layout")
    ws, store = workspace_with_key(tmp / "ws")
    db_path = tmp / "board.db"
    db = ServerDB(db_path)
    info = key_info(ws.keys_dir)
    db.add_key(info.fingerprint, bytes.fromhex(info.public_key_hex), "alice")
    for model, perf, tput, mem in MODELS:
        create_bundle(ws, store, make_run(store, ws.runs_dir, model=model, perf=perf, throughput=tput, memory=mem))
    import_workspace_datasets(db, ws.home)
    db.close()
    port = free_port()
    proc = start_server(db_path, port)
    url = f"http://127.0.0.1:{port}"
    try:
        assert sync_queue(store, url).ok
        yield {"url": url, "db": db_path}
    finally:
        stop_server(proc)
        store.close()


def open_board(browser, url: str, width: int, height: int):
    page = browser.new_page(viewport={"width": width, "height": height})
    page.goto(url + "/")
    page.wait_for_selector("#task-sentiment[data-loaded] #board-sentiment tbody tr")
    return page


def overflow(page) -> int:
    """How far the page itself scrolls sideways (0: nothing sticks out of the viewport)."""
    return int(page.evaluate("document.documentElement.scrollWidth - document.documentElement.clientWidth"))


def test_the_ranking_is_above_the_fold_and_fits_1366(board, browser):
    page = open_board(browser, board["url"], 1366, 768)
    tops = page.locator("#board-sentiment tbody tr").evaluate_all(
        "rows => rows.map(r => r.getBoundingClientRect().bottom)")
    assert len(tops) == len(MODELS) and tops[2] < 768, tops  # the first three ranked rows on first paint
    width = page.evaluate("document.querySelector('#board-sentiment').getBoundingClientRect().width")
    assert width <= 1366 - 16 and overflow(page) == 0, width
    wrap = page.evaluate("(() => { const w = document.querySelector('#task-sentiment .table-wrap');"
                         " return w.scrollWidth - w.clientWidth; })()")
    assert wrap == 0  # no sideways scrolling inside the table either
    heads = page.locator("#board-sentiment thead th").evaluate_all("ths => ths.map(t => t.dataset.key)")
    assert {"rank", "model", "dynascore", "perf", "sandboxed"} <= set(heads)
    assert not {"submitter", "runner", "audit", "breakdown"} & set(heads)  # those open under a row
    page.close()


def test_a_rows_details_open_in_place(board, browser):
    page = open_board(browser, board["url"], 1366, 768)
    first = page.locator("#board-sentiment tbody tr[data-model]").first
    model = first.get_attribute("data-model")
    first.locator("button.row-toggle").click()
    detail = page.locator("#board-sentiment tr.row-details")
    assert detail.count() == 1
    assert page.evaluate("document.querySelector('#board-sentiment tbody tr[data-model]').nextElementSibling"
                         ".classList.contains('row-details')")
    fields = dict(zip(detail.locator("dt").all_inner_texts(), detail.locator("dd").all_inner_texts()))
    assert fields["Submitter"] == "alice" and fields["Runner"] == "docker" and fields["Audit"] == "not audited"
    assert detail.locator("svg.breakdown").count() == 1 and detail.locator("a[href^='/models/']").count() == 1
    assert first.locator("button.row-toggle").get_attribute("aria-expanded") == "true"
    page.click("th[data-key=dynascore] button.sort")  # re-sorting keeps the row open, under its row
    page.wait_for_function("() => document.querySelector('#board-sentiment tr.row-details')")
    assert page.evaluate(f"document.querySelector('#board-sentiment tr[data-model=\"{model}\"]').nextElementSibling"
                         ".dataset.detailsFor") == first.get_attribute("data-row")
    page.locator(f"#board-sentiment tr[data-model='{model}'] button.row-toggle").click()
    assert detail.count() == 0
    page.click("#board-sentiment button.details-all")
    assert detail.count() == len(MODELS) and overflow(page) == 0
    page.close()


def test_no_horizontal_overflow_at_phone_width(board, browser):
    page = open_board(browser, board["url"], 375, 740)
    assert overflow(page) == 0
    page.click("#board-sentiment button.details-all")
    assert overflow(page) == 0
    first = page.locator("#board-sentiment tbody tr[data-model]").first.bounding_box()
    assert first is not None and first["x"] >= 0
    page.close()


def test_the_snapshots_index(board, browser):
    url = board["url"]
    empty = requests.get(f"{url}/snapshots", timeout=10)
    assert empty.status_code == 200 and "No snapshot yet" in empty.text
    made = CliRunner().invoke(server_cli, ["snapshot", "create", "sentiment", "--db", str(board["db"]),
                                           "--title", "Sentiment board, December 2026", "--json"])
    assert made.exit_code == 0, made.output
    snap = json.loads(made.output)
    page = browser.new_page(viewport={"width": 375, "height": 740})
    page.goto(url + "/")
    page.wait_for_selector("#task-sentiment[data-loaded]")
    page.click("header a[href='/snapshots']")
    page.wait_for_selector(f"tr[data-snapshot='{snap['id']}']")
    assert overflow(page) == 0
    assert page.inner_text(f"tr[data-snapshot='{snap['id']}'] td:first-child") == "Sentiment board, December 2026"
    page.click(f"tr[data-snapshot='{snap['id']}'] a[href='/snapshots/{snap['id']}']")
    page.wait_for_url(f"**/snapshots/{snap['id']}")
    assert "Sentiment board, December 2026" in page.inner_text("h1")
    page.close()
    missing = requests.get(f"{url}/snapshots?task=nope", timeout=10)
    assert missing.status_code == 404 and "no task &#x27;nope&#x27;" in missing.text
