"""The demo's rate edition keeps throughput and memory (issue 44, items 2 and 3), on the demo's kind of data: one
lab, three trained models whose throughput spans three orders of magnitude (MiniLM ~58 examples/s, its 3-layer cut
~110, bag-of-words ~1e5) and the constant majority model (a baseline, never a reference row).

Under the bounded robust rule bag-of-words alone moves the throughput and memory rates far beyond the factor 2, so
the edition had no rate for them and the demo's public board was perf-only (seen: the robust freeze of these rows is
refused, every metric but performance rate-less; asserted below as the reason for the demo's choice). The demo's step
(``dynadesk.demo_rates.freeze_and_compare``) now freezes by Dynaboard's rule over its own lab's rows, stating both
choices; its edition has a rate for every metric, the local and the public board print the same Dynascore for every
run, and the board's notes say the two choices. A real server process on loopback, real signed bundles."""

from __future__ import annotations

import pytest
import requests
from support.baselines import constant, outcomes_of
from support.sync import admin, board_db, free_port, make_run, start_server, stop_server, workspace_with_key

from dynadesk.scoring.board import Weighting
from dynadesk.scoring.leaderboard import build_leaderboard
from dynadesk.store.evaluations import RunChange
from dynadesk.sync.client.create import create_bundle
from dynadesk.sync.client.upload import load_rate_edition, sync_queue

# the demo's kind of models (perf = macro-F1; throughput examples/s; memory GiB; robustness; fairness)
DEMO = {"minilm-sentiment": (67.5, 58.3, 0.61, 88.0, 97.0), "bag-of-words-sentiment": (55.4, 98000.0, 0.05, 93.0, 99.0),
        "minilm-3layer-sentiment": (44.1, 112.0, 0.36, 84.0, 96.0)}
MAJORITY = ("majority-sentiment", 19.1, 630817.0, 0.03)


@pytest.fixture
def demo_board(tmp_path):
    ws, store = workspace_with_key(tmp_path / "ws")
    runs = {m: make_run(store, ws.runs_dir, model=m, perf=p, throughput=t, memory=mem, robustness=rob, fairness=fair)
            for m, (p, t, mem, rob, fair) in DEMO.items()}
    name, _perf, t, mem = MAJORITY
    runs[name] = make_run(store, ws.runs_dir, model=name, throughput=t, memory=mem, robustness=100.0,
                          fairness=100.0, predict=constant)
    rec = store.evaluations.get(runs[name])  # its outcomes, as the host's bootstrap stores them: a constant predictor
    outcomes, _ = outcomes_of(store, constant, rec.datasets, digest=lambda n: store.datasets.get(n).digest)
    store.evaluations.update(runs[name], RunChange(profile={**(rec.profile or {}), "outcomes": outcomes}))
    bundles = {m: create_bundle(ws, store, ev).id for m, ev in runs.items()}
    db_path = tmp_path / "board.db"
    board_db(db_path, ws, "demo lab")
    port = free_port()
    url = f"http://127.0.0.1:{port}"
    proc = start_server(db_path, port)
    try:
        assert sync_queue(store, url).ok
        yield {"store": store, "url": url, "db": db_path, "bundles": bundles, "runs": runs}
    finally:
        stop_server(proc)
        store.close()


def test_the_demo_edition_has_every_rate_and_one_dynascore_per_run(demo_board):
    from dynadesk.demo import server_cmd
    from dynadesk.demo_rates import freeze_and_compare

    d = demo_board
    for bid in d["bundles"].values():
        admin(d["db"], "reference", "pin", bid)
    # why the demo does not use the default rule: one lab (refused) and, said so, a bound that leaves speed rate-less
    refused = admin(d["db"], "rates", "freeze", "--task", "sentiment", ok=False)
    assert "distinct organisations" in refused.stderr + refused.stdout
    robust = admin(d["db"], "rates", "freeze", "--task", "sentiment", "--single-organisation", "probe", ok=False)
    assert "throughput: 2 reference rows are usable" in robust.stderr, robust.stderr
    assert "memory: 2 reference rows are usable" in robust.stderr, robust.stderr

    lines: list[str] = []
    bundled = d["bundles"]["minilm-sentiment"]
    score = freeze_and_compare(d["store"], d["url"], d["db"], list(d["bundles"].values()), bundled, lines.append,
                               server_cmd)
    board = requests.get(f"{d['url']}/api/leaderboard/sentiment?limit=1000&audit=all", timeout=30).json()
    assert board["rates"]["status"] == "edition" and board["rates"]["edition"] == 1
    assert all(v is not None and v > 0 for v in board["amrs"].values()), board["amrs"]
    edition, how = load_rate_edition(d["store"], d["url"], "sentiment")
    local = build_leaderboard(d["store"], "sentiment", Weighting(rates=edition.amrs), rates_from=how)
    assert {r.evaluation_id: r.dynascore for r in local.rows} == {r["evaluation_id"]: r["dynascore"]
                                                                  for r in board["rows"]}
    assert score == next(r["dynascore"] for r in board["rows"] if r["bundle_id"] == bundled)
    # the majority model is the baseline on both boards, and never a reference row
    assert [r["label"] for r in board["baselines"]] == ["majority-sentiment"]
    assert [r.model for r in local.baselines] == ["majority-sentiment"]
    assert "majority-sentiment" not in {r["row_id"] for r in board["reference"]["rows"]}
    # the rates are Dynaboard's over the same three rows: the local board's own rule gives the same rates
    dyn = build_leaderboard(d["store"], "sentiment")
    assert edition.amrs == pytest.approx(dyn.amrs, rel=1e-12)
    text = "\n".join(lines)
    assert "Dynaboard's rule over its 3 reference rows" in text and "1 organisation" in text, text
    assert "no exchange rate" not in text and "no rate edition frozen" not in text and "provisional" not in text
    # every board note the demo prints is one of the board's notes, and every board note is printed
    assert [x.removeprefix("  board note: ") for x in lines if x.startswith("  board note: ")] == requests.get(
        f"{d['url']}/api/leaderboard/sentiment?limit=1000", timeout=30).json()["notes"]
