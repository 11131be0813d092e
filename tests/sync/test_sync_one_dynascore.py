"""One Dynascore per run (issue 44, item 3): a workspace's runs scored locally with a board's rate edition
(``dynadesk leaderboard --rates BOARD``) and the same runs on the public board (API, model page, snapshot) give every
Dynascore bit for bit; and the board's Dynaboard-rule view (``rates=dynaboard``) is Dynaboard's definition exactly,
the local board's default, checked against an independent implementation of the AMRS (the Table 2 check's rule).
A real server process on loopback and real signed bundles."""

from __future__ import annotations

import json

import numpy as np
import pytest
import requests
from click.testing import CliRunner
from support.sync import admin, board_db, free_port, make_run, start_server, stop_server, workspace_with_key

from dynadesk.cli import cli
from dynadesk.errors import SignatureError
from dynadesk.scoring.board import Weighting
from dynadesk.scoring.leaderboard import build_leaderboard
from dynadesk.sync.client.create import create_bundle
from dynadesk.sync.client.upload import check_log, load_rate_edition, sync_queue

# model: perf, throughput, memory (not linear: the robust rates differ from Dynaboard's mean)
RUNS = {"alpha": (82.0, 900.0, 1.9), "beta": (74.0, 2100.0, 1.1), "gamma": (66.0, 2600.0, 0.8),
        "delta": (58.0, 5200.0, 0.35), "eps": (51.0, 6100.0, 0.3)}


@pytest.fixture(scope="module")
def synced(tmp_path_factory):
    root = tmp_path_factory.mktemp("one-dynascore")
    ws, store = workspace_with_key(root / "ws")
    runs = {m: make_run(store, ws.runs_dir, model=m, perf=p, throughput=t, memory=mem)
            for m, (p, t, mem) in RUNS.items()}
    bundles = {m: create_bundle(ws, store, ev) for m, ev in runs.items()}
    db_path = root / "board.db"
    board_db(db_path, ws)
    port = free_port()
    url = f"http://127.0.0.1:{port}"
    proc = start_server(db_path, port)
    try:
        assert sync_queue(store, url).ok
        for b in bundles.values():
            admin(db_path, "reference", "pin", b.id)
        admin(db_path, "rates", "freeze", "--task", "sentiment", "--note", "test edition", "--single-organisation",
              "one workspace's board")
        yield {"ws": ws, "store": store, "url": url, "runs": runs, "bundles": bundles, "db": db_path, "root": root}
    finally:
        stop_server(proc)
        store.close()


def _public(url: str, query: str = "") -> dict:
    r = requests.get(f"{url}/api/leaderboard/sentiment?limit=1000{query}", timeout=30)
    assert r.status_code == 200, r.text
    return r.json()


def test_local_and_public_dynascores_are_bit_identical_under_one_edition(synced):
    store, url = synced["store"], synced["url"]
    edition, how = load_rate_edition(store, url, "sentiment")
    assert edition.number == 1 and "rate edition 1 of 'sentiment'" in how
    for weights, query in (({}, ""), ({"throughput": 3.0, "perf": 1.0}, "&weight.throughput=3&weight.perf=1")):
        local = build_leaderboard(store, "sentiment", Weighting(weights or None, rates=edition.amrs), rates_from=how)
        public = _public(url, query)
        assert public["rates"]["status"] == "edition" and public["rates"]["id"] == edition.id
        mine = {r.evaluation_id: r.dynascore for r in local.rows}
        theirs = {r["evaluation_id"]: r["dynascore"] for r in public["rows"]}
        assert set(mine) == set(synced["runs"].values()) and mine == theirs  # every figure, bit for bit
        assert public["amrs"] == local.amrs
    # the model page and a snapshot name the edition and show the same figure
    bid = synced["bundles"]["beta"].id
    page = requests.get(f"{url}/models/{bid}", timeout=30).text
    assert f"rate edition 1 ({edition.id[:12]}" in page
    beta = next(r for r in _public(url)["rows"] if r["bundle_id"] == bid)
    assert f"{beta['dynascore']:.2f}" in page
    out = admin(synced["db"], "snapshot", "create", "sentiment", "--title", "edition one", "--json").stdout
    snap = requests.get(f"{url}/api/snapshots/{json.loads(out)['id']}", timeout=30).json()["payload"]
    assert snap["reference"]["rates"]["edition"] == 1 and snap["reference"]["rates"]["id"] == edition.id
    assert {r["bundle_id"]: r["dynascore"] for r in snap["rows"]} == {r["bundle_id"]: r["dynascore"]
                                                                      for r in _public(url)["rows"]}


def test_the_cli_scores_with_the_board_edition_and_says_which(synced):
    ws, url = synced["ws"], synced["url"]
    runner = CliRunner()
    res = runner.invoke(cli, ["--home", str(ws.home), "leaderboard", "sentiment", "--rates", url, "--json"])
    assert res.exit_code == 0, res.output
    doc = json.loads(res.output)
    assert doc["rates"].startswith("rate edition 1 of 'sentiment'")
    public = {r["evaluation_id"]: r["dynascore"] for r in _public(url)["rows"]}
    assert {r["evaluation_id"]: r["dynascore"] for r in doc["rows"]} == public
    text = runner.invoke(cli, ["--home", str(ws.home), "leaderboard", "sentiment", "--rates", url])
    assert "exchange rates: rate edition 1 of 'sentiment'" in text.output, text.output
    plain = runner.invoke(cli, ["--home", str(ws.home), "leaderboard", "sentiment"])
    assert "exchange rates: Dynaboard's rule" in plain.output


def test_a_saved_edition_file_is_verified_against_the_pinned_server_key(synced, tmp_path):
    store, url = synced["store"], synced["url"]
    raw = requests.get(f"{url}/api/rates/sentiment", timeout=30).content
    saved = tmp_path / "edition.json"
    saved.write_bytes(raw)
    store.set_meta("sync.log_head", "")  # no key pinned yet
    with pytest.raises(SignatureError, match="no server key is pinned"):
        load_rate_edition(store, str(saved), "sentiment")
    check_log(store, url)  # pins the board's key
    edition, how = load_rate_edition(store, str(saved), "sentiment")
    assert edition.number == 1 and "pinned" in how
    doc = json.loads(raw)
    doc["payload"]["amrs"]["throughput"] = doc["payload"]["amrs"]["throughput"] * 2  # a forged rate
    from dynadesk.sync.format.canonical import canonical_bytes

    saved.write_bytes(canonical_bytes(doc))
    with pytest.raises(SignatureError):
        load_rate_edition(store, str(saved), "sentiment")


def _dynaboard_amrs(perf: np.ndarray, col: np.ndarray) -> float:
    """Dynaboard's AMRS, written independently: sort by performance, mean over neighbouring pairs of
    |delta utility| / delta perf (pairs further apart than 1e-4 x the best)."""
    order = np.argsort(perf, kind="stable")
    p, c = perf[order], col[order]
    rates = [abs(c[i + 1] - c[i]) / (p[i + 1] - p[i]) for i in range(len(p) - 1)
             if p[i + 1] - p[i] > 1e-4 * abs(p.max())]
    return float(np.mean(rates))


def test_the_dynaboard_view_is_dynaboards_definition_exactly(synced):
    store, url = synced["store"], synced["url"]
    view = _public(url, "&rates=dynaboard")
    assert view["rates"]["status"] == "dynaboard" and view["filters"]["rates"] == "dynaboard"
    local = build_leaderboard(store, "sentiment")  # the local board's default: Dynaboard's rule
    assert {r.evaluation_id: r.dynascore for r in local.rows} == {r["evaluation_id"]: r["dynascore"]
                                                                  for r in view["rows"]}
    perf = np.array([r["values"]["perf"] for r in view["rows"]])
    for metric, direction, offset in (("throughput", 1.0, 0.0), ("memory", -1.0, 16.0)):
        col = np.array([r["values"][metric] for r in view["rows"]]) * direction + offset
        assert view["amrs"][metric] == pytest.approx(_dynaboard_amrs(perf, col), rel=1e-12)
    edition = _public(url)
    assert edition["amrs"] != view["amrs"]  # the two rules differ on these rows: the view is a real choice
    bad = requests.get(f"{url}/api/leaderboard/sentiment?rates=mine", timeout=30)
    assert bad.status_code == 400 and "'rates'" in bad.json()["detail"]


def test_rates_list_and_show_for_the_operator(synced):
    listed = admin(synced["db"], "rates", "list", "--json").stdout
    assert [(e["task"], e["edition"]) for e in json.loads(listed)] == [("sentiment", 1)]
    shown = admin(synced["db"], "rates", "show", "--task", "sentiment").stdout
    assert json.loads(shown)["payload"]["note"] == "test edition"
    log = requests.get(f"{synced['url']}/api/log?limit=1000", timeout=30).json()["entries"]
    assert [e["kind"] for e in log].count("rates") == 1
    verified = admin(synced["db"], "log", "verify")
    assert verified.returncode == 0, verified.stdout + verified.stderr


def test_the_demo_prints_one_dynascore_for_the_bundled_run_on_both_boards(synced):
    """The demo's public-board step (dynadesk.demo_rates, what 'make demo' runs after syncing) on real runs: it
    freezes the next edition and checks the bundled run's figure on both boards; every line it prints is shown."""
    from dynadesk.demo import server_cmd
    from dynadesk.demo_rates import freeze_and_compare

    lines: list[str] = []
    bundled = synced["bundles"]["gamma"]
    score = freeze_and_compare(synced["store"], synced["url"], synced["db"],
                               [b.id for b in synced["bundles"].values()], bundled.id, lines.append, server_cmd)
    public = next(r for r in _public(synced["url"])["rows"] if r["bundle_id"] == bundled.id)
    assert score == public["dynascore"]
    text = "\n".join(lines)
    assert "rate edition 2 of 'sentiment'" in text, text
    board_line = next(x for x in lines if x.startswith("  board:") and " gamma " in x)
    local_line = next(x for x in lines if x.startswith("  local:") and " gamma " in x)
    assert f"Dynascore {score:.2f}" in board_line and f"Dynascore {score:.2f}" in local_line
    assert f"Dynascore {score:.2f} on the local board and on the public board" in text
