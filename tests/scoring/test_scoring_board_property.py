"""The CLI's, the app's and the server's boards are one code path: on random tables with random
metric weights, dataset weights and memory budgets they give identical ranks, scores and reasons.

Each example stores the table as real evaluation runs in a real SQLite workspace, runs
``dynadesk leaderboard --json`` on it, asks the app's ``LeaderboardService`` (a real Qt
object over the same workspace) and the server's board (``sync.board`` over the rows it
would store from the same metrics as bundles).
"""

from __future__ import annotations

import json
import os
import tempfile
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from dynadesk.cli import cli
from dynadesk.errors import ValidationError
from dynadesk.scoring.board import SCORE_METRICS, Weighting
from dynadesk.store.evaluations import MetricValue
from dynadesk.sync.rules import board as server_board
from dynadesk.workspace import Workspace

EXAMPLES = 200 if os.environ.get("DYNADESK_LONG") == "1" else 25
DATASETS = ("d1", "d2")
PER_DATASET = ("perf", "robustness", "fairness")
UNITS = {"perf": "%", "robustness": "%", "fairness": "%", "throughput": "examples/s", "memory": "GiB"}
RANGES = {"perf": (20.0, 95.0), "robustness": (30.0, 100.0), "fairness": (30.0, 100.0),
          "throughput": (1.0, 300000.0), "memory": (0.1, 15.0)}
WEIGHT = st.one_of(st.sampled_from([0.0, 0.5, 1.0, 4.0, 5.0]), st.floats(0.0, 10.0))

Table = dict[str, dict[str, dict[str, float]]]  # model -> metric -> dataset ('' = whole run) -> value


@st.composite
def tables(draw: st.DrawFn) -> Table:
    """Random boards: some models lack a metric or a dataset (left off, or dropped at weight 0)."""
    out: Table = {}
    for i in range(draw(st.integers(1, 7))):
        model: dict[str, dict[str, float]] = {}
        for metric in SCORE_METRICS:
            if i > 0 and draw(st.integers(0, 11)) == 0:
                continue
            value = st.floats(*RANGES[metric], allow_nan=False)
            if metric in PER_DATASET:
                chosen = DATASETS if i == 0 or draw(st.integers(0, 7)) else DATASETS[:1]
                model[metric] = {d: draw(value) for d in chosen}
            else:
                model[metric] = {"": draw(value)}
        out[f"model-{i}"] = model
    return out


def _store_runs(home: Path, table: Table) -> None:
    store = Workspace(home).open_store()
    try:
        for name, metrics in table.items():
            rec = store.models.add(name, "sentiment", "majority", f"/nonexistent/{name}",
                                   f"sha256:{name:0<64}"[:71], {})
            run = store.evaluations.create(rec.id, "sentiment", runner="local", sandboxed=False,
                                           datasets=list(DATASETS), status="running")
            values = [MetricValue(ds, m, v, UNITS[m], m in PER_DATASET)
                      for m, by_ds in metrics.items() for ds, v in by_ds.items()]
            store.evaluations.set_metrics(run, values, status="succeeded")
    finally:
        store.close()


def _cli(home: Path, weights: dict[str, float], dw: dict[str, float], budget: float) -> Any:
    args = ["--home", str(home), "leaderboard", "sentiment", "--json", "--memory-budget", repr(budget)]
    args += [x for k, w in weights.items() for x in ("--weight", f"{k}={w!r}")]
    args += [x for k, w in dw.items() for x in ("--dataset-weight", f"{k}={w!r}")]
    res = CliRunner().invoke(cli, args)
    if isinstance(res.exception, ValidationError):
        return "refused"
    assert res.exit_code == 0, res.output
    out = json.loads(res.output)
    return [(r["model"], r["rank"], r["dynascore"], {k: r["values"][k] for k in out["metrics"]})
            for r in out["rows"]], out["left_off"], out["notes"]


def _gui(home: Path, weights: dict[str, float], dw: dict[str, float], budget: float) -> Any:
    from dynadesk.gui.services.leaderboard import LeaderboardService
    from dynadesk.gui.services.workspace import WorkspaceService

    ws = WorkspaceService(home)
    try:
        board = LeaderboardService(ws).board("sentiment", weights, dw, budget)
    except ValidationError:
        return "refused"
    finally:
        ws.store.close()
    return [(r.model, r.rank, r.dynascore, {k: r.values[k] for k in board.metrics}) for r in board.rows], \
        board.left_off, board.notes


def _server_answer(table: Table, weights: dict[str, float], dw: dict[str, float], budget: float) -> dict[str, Any]:
    """The server's JSON for the table stored as bundle rows (raises its ValidationError, which it answers as 400)."""
    rows = []
    for i, (name, metrics) in enumerate(table.items()):
        bundle_metrics = [{"metric": m, "dataset": ds, "value": v, "unit": UNITS[m], "deterministic": m in PER_DATASET}
                          for m, by_ds in metrics.items() for ds, v in by_ds.items()]
        rows.append({"model": name, "submitter": "lab", "key_fingerprint": "k", "bundle_id": f"{i:064x}",
                     "created_at": "2026-01-01T00:00:00.000Z", "model_digest": "d",
                     "metrics": server_board.board_metrics(bundle_metrics)})
    datasets = [{"name": d, "split": "test", "digest": "x"} for d in DATASETS]
    return server_board.compute_board("sentiment", server_board.prepare(rows), datasets,
                                      Weighting(weights, dw, budget), server_board.BoardView(limit=1000))


def _server(table: Table, weights: dict[str, float], dw: dict[str, float], budget: float) -> Any:
    try:
        out = _server_answer(table, weights, dw, budget)
    except ValidationError:
        return "refused"
    return [(r["model"], r["rank"], r["dynascore"], r["values"]) for r in out["rows"]], out["left_off"], out["notes"]


@settings(max_examples=EXAMPLES, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(table=tables(), weights=st.dictionaries(st.sampled_from(SCORE_METRICS), WEIGHT),
       dw=st.dictionaries(st.sampled_from(DATASETS), WEIGHT), budget=st.floats(0.5, 64.0))
def test_cli_gui_and_server_boards_agree(require_qt: None, qapp: Any, table: Table, weights: dict[str, float],
                                         dw: dict[str, float], budget: float) -> None:
    with tempfile.TemporaryDirectory(prefix="dynadesk-board-") as tmp:
        home = Path(tmp) / "ws"
        _store_runs(home, table)
        cli_board = _cli(home, weights, dw, budget)
        gui_board = _gui(home, weights, dw, budget)
    server = _server(table, weights, dw, budget)
    assert cli_board == gui_board == server
    if cli_board != "refused":
        ranked, left_off, _notes = cli_board
        assert len(ranked) + len(left_off) == len(table)
        assert [r[1] for r in ranked] == sorted(r[1] for r in ranked)


@pytest.mark.parametrize("surface", ["cli", "gui", "server"])
@pytest.mark.parametrize(("weights", "dw", "budget", "named"), [
    ({"perf": 1e308}, {}, 16.0, "weight of metric 'perf'"),
    ({}, {"d1": 1e308}, 16.0, "dataset weight for 'd1'"),
    ({}, {}, 1e308, "memory budget"),
    ({}, {}, float("inf"), "memory budget"),
    ({}, {}, -2.0, "memory budget"),
])
def test_every_surface_refuses_absurd_inputs_with_the_same_message(require_qt: None, qapp: Any, tmp_path: Path,
                                                                  surface: str, weights: dict[str, float],
                                                                  dw: dict[str, float], budget: float,
                                                                  named: str) -> None:
    """1e308 as a weight made every other weight 0 and a 1e308 GiB budget swamped every score; now refused."""
    table: Table = {f"m{i}": {"perf": {"d1": 50.0 + i, "d2": 60.0 - 2 * i}, "robustness": {"d1": 70.0, "d2": 71.0 + i},
                              "fairness": {"d1": 80.0 - i, "d2": 80.0}, "throughput": {"": 10.0 ** i},
                              "memory": {"": 1.0 + i}} for i in range(3)}
    home = tmp_path / "ws"
    _store_runs(home, table)
    if surface == "cli":
        args = ["--home", str(home), "leaderboard", "sentiment", "--memory-budget", repr(budget)]
        args += [x for k, w in weights.items() for x in ("--weight", f"{k}={w!r}")]
        args += [x for k, w in dw.items() for x in ("--dataset-weight", f"{k}={w!r}")]
        res = CliRunner().invoke(cli, args)
        assert res.exit_code != 0 and isinstance(res.exception, ValidationError) and named in str(res.exception)
        return
    with pytest.raises(ValidationError, match=named):
        if surface == "gui":
            from dynadesk.gui.services.leaderboard import LeaderboardService
            from dynadesk.gui.services.workspace import WorkspaceService

            ws = WorkspaceService(home)
            try:
                LeaderboardService(ws).board("sentiment", weights, dw, budget)
            finally:
                ws.store.close()
        else:
            _server_answer(table, weights, dw, budget)
