"""The app scores with a board's rate edition (issue 44, item 3): the leaderboard page loads a synced board's current
edition (its URL, or a saved edition file), says which edition it used, and shows every run's Dynascore bit for bit
as ``dynadesk leaderboard --rates`` prints it (and as the public board shows it). A real server process on loopback,
real signed bundles, the real window."""

from __future__ import annotations

import json

import pytest
import requests
from click.testing import CliRunner
from PySide6.QtCore import Qt
from support.gui import loaded, make_window
from support.sync import admin, board_db, free_port, make_run, start_server, stop_server, workspace_with_key

from dynadesk.cli import cli
from dynadesk.sync.client.create import create_bundle
from dynadesk.sync.client.upload import check_log, sync_queue

pytestmark = pytest.mark.qt
RUNS = {"alpha": (82.0, 900.0, 1.9), "beta": (74.0, 2100.0, 1.1), "gamma": (66.0, 2600.0, 0.8),
        "delta": (58.0, 5200.0, 0.35)}


@pytest.fixture(scope="module")
def synced_board(tmp_path_factory):
    root = tmp_path_factory.mktemp("app-rates")
    ws, store = workspace_with_key(root / "ws")
    runs = {m: make_run(store, ws.runs_dir, model=m, perf=p, throughput=t, memory=mem)
            for m, (p, t, mem) in RUNS.items()}
    bundles = [create_bundle(ws, store, ev).id for ev in runs.values()]
    db_path = root / "board.db"
    board_db(db_path, ws)
    port = free_port()
    url = f"http://127.0.0.1:{port}"
    proc = start_server(db_path, port)
    try:
        assert sync_queue(store, url).ok
        check_log(store, url)  # pins the board's server key (a saved edition file is checked against it)
        for b in bundles:
            admin(db_path, "reference", "pin", b)
        admin(db_path, "rates", "freeze", "--task", "sentiment", "--single-organisation", "one lab's board")
        store.close()
        yield {"home": ws.home, "url": url, "root": root}
    finally:
        stop_server(proc)


@pytest.fixture
def page(synced_board, require_qt, qtbot, tmp_path):
    services, window = make_window(qtbot, tmp_path, synced_board["home"])
    page = window.show_page("leaderboard")
    page.select_task("sentiment")
    yield loaded(qtbot, page)
    window.close()
    services.close()


def _cli(home, *args: str) -> dict:
    res = CliRunner().invoke(cli, ["--home", str(home), "leaderboard", "sentiment", *args, "--json"])
    assert res.exit_code == 0, res.output
    return json.loads(res.output)


def _use(qtbot, page, source: str) -> None:
    bar = page.rates_bar
    bar.source.setText(source)
    qtbot.mouseClick(bar.use_button, Qt.MouseButton.LeftButton)
    qtbot.waitUntil(lambda: not bar.loading, timeout=30_000)


def test_the_app_scores_with_the_boards_edition_bit_for_bit(synced_board, page, qtbot):
    home, url = synced_board["home"], synced_board["url"]
    own = {r.model: r.dynascore for r in page.result.rows}
    assert "Dynaboard's rule" in page.rates_bar.in_use.text()
    assert own == {r["model"]: r["dynascore"] for r in _cli(home)["rows"]}
    _use(qtbot, page, url)
    cli_doc = _cli(home, "--rates", url)
    assert {r.model: r.dynascore for r in page.result.rows} == {r["model"]: r["dynascore"] for r in cli_doc["rows"]}
    public = requests.get(f"{url}/api/leaderboard/sentiment?limit=1000", timeout=30).json()
    assert {r.evaluation_id: r.dynascore for r in page.result.rows} == {
        r["evaluation_id"]: r["dynascore"] for r in public["rows"]}
    assert {r.model: r.dynascore for r in page.result.rows} != own  # the edition is not the page's own rule
    used = page.rates_bar.in_use.text()
    assert f"rate edition 1 of 'sentiment' ({public['rates']['id'][:12]}" in used and url in used, used
    assert "Exchange rates: rate edition 1 of 'sentiment'" in page.notes.text()
    assert "1 organisation" in page.notes.text()  # the edition's own note, as the public board says it
    # moving a weight re-ranks with the same edition, as the CLI with the same weight
    qtbot.keyClick(page.metric_sliders["throughput"].slider, Qt.Key.Key_End)
    weighted = _cli(home, "--rates", url, "--weight", "throughput=5")
    assert {r.model: r.dynascore for r in page.result.rows} == {r["model"]: r["dynascore"] for r in weighted["rows"]}
    qtbot.mouseClick(page.rates_bar.own_button, Qt.MouseButton.LeftButton)
    assert "Dynaboard's rule" in page.rates_bar.in_use.text()
    assert "rate edition" not in page.notes.text()


def test_a_saved_edition_file_scores_the_same_and_a_forged_one_is_refused(synced_board, page, qtbot, tmp_path):
    home, url = synced_board["home"], synced_board["url"]
    saved = tmp_path / "edition.json"
    saved.write_bytes(requests.get(f"{url}/api/rates/sentiment", timeout=30).content)
    _use(qtbot, page, str(saved))
    assert str(saved) in page.rates_bar.in_use.text()
    assert {r.model: r.dynascore for r in page.result.rows} == {
        r["model"]: r["dynascore"] for r in _cli(home, "--rates", str(saved))["rows"]}
    before = {r.model: r.dynascore for r in page.result.rows}
    doc = json.loads(saved.read_bytes())
    doc["payload"]["amrs"]["throughput"] *= 2  # a forged rate: the signature no longer holds
    from dynadesk.sync.format.canonical import canonical_bytes

    forged = tmp_path / "forged.json"
    forged.write_bytes(canonical_bytes(doc))
    _use(qtbot, page, str(forged))
    assert page.banner.kind == "error" and "Exchange rates not changed" in page.banner.text()
    assert str(saved) in page.rates_bar.in_use.text()  # still the verified edition, and its figures
    assert {r.model: r.dynascore for r in page.result.rows} == before
