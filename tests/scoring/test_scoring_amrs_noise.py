"""An exchange rate that rests on noise is named on the board; ``--amrs robust`` leaves it unconverted.

The near-tie case of the demo board: the trained models' memories lie within the runner tolerance of
each other and the majority baseline sits 0.4 points below its neighbour, so that one degenerate pair
sets memory's AMRS.
"""

from __future__ import annotations

import json

import numpy as np
import pytest
from click.testing import CliRunner

from dynadesk.audit.tolerances import DEFAULTS  # what bundles declare: the metric registry's tolerances
from dynadesk.cli import cli
from dynadesk.errors import ValidationError
from dynadesk.scoring.amrs_noise import RUNNER_TOLERANCE, check_rate
from dynadesk.scoring.board import ScoreBoard, Weighting
from dynadesk.scoring.leaderboard import build_leaderboard
from dynadesk.store.evaluations import MetricValue, RunChange

UNIT = {"perf": "%", "macro_f1": "%", "robustness": "%", "fairness": "%", "throughput": "examples/s",
        "memory": "GiB"}
# model: perf, memory (GiB), throughput
DEMO = {"majority": (33.0, 0.280, 1000.0), "bow-small": (33.4, 0.300, 300.0), "bow": (60.0, 0.310, 150.0),
        "minilm": (75.0, 0.320, 40.0)}


def _evaluate(store, model: str, perf: float, memory: float, throughput: float) -> None:
    store.models.add(model, "sentiment", "majority", f"/models/{model}", f"sha256:{model}", {"task": "sentiment"})
    run = store.evaluations.create(store.models.get(model).id, "sentiment", runner="local", sandboxed=False,
                                   datasets=["d"],
                                   status="running")
    scores = {"perf": perf, "macro_f1": perf, "robustness": 50 + perf / 2, "fairness": 90.0}
    values = [MetricValue("d", m, v, UNIT[m], True) for m, v in scores.items()]
    values.append(MetricValue("d", "robustness_sources", 40.0, "examples", True))
    values += [MetricValue("", "memory", memory, "GiB", False), MetricValue("", "throughput", throughput,
                                                                           "examples/s", False)]
    store.evaluations.set_metrics(run, values, status="succeeded")


@pytest.fixture
def demo_store(store):
    for model, (perf, memory, tput) in DEMO.items():
        _evaluate(store, model, perf, memory, tput)
    return store


def test_memory_near_tie_is_named_with_its_pair_rate_and_points(demo_store):
    board = build_leaderboard(demo_store, "sentiment")
    (note,) = [n for n in board.notes if n.startswith("metric 'memory'")]
    assert "majority vs bow-small" in note and "rests on noise" in note
    assert "only 0 of its 3 kept pairs differ by more than the measurement floor" in note
    rate = board.amrs["memory"]
    assert f"AMRS {rate:.4g}" in note and f"{1 / rate:.4g} points per unit" in note
    assert not any(n.startswith("metric 'robustness'") for n in board.notes)  # no floor: not judged


def test_robust_leaves_the_metric_unconverted_as_documented(demo_store):
    plain = build_leaderboard(demo_store, "sentiment")
    robust = build_leaderboard(demo_store, "sentiment", Weighting(amrs_mode="robust"))
    fragile = {n.split("'")[1] for n in plain.notes if "rests on noise" in n}
    assert "memory" in fragile
    assert all(robust.amrs[m] is None for m in fragile)
    assert robust.amrs["robustness"] == plain.amrs["robustness"]
    by_model = {r.model: r for r in plain.rows}
    for row in robust.rows:
        assert all(row.converted[m] == 0.0 for m in fragile)
        # the documented result: the Dynaboard score less the fragile metrics' weighted points
        expected = sum(plain.weights[m] * by_model[row.model].converted[m] for m in plain.weights if m not in fragile)
        assert row.dynascore == pytest.approx(expected, abs=1e-9)
    assert any(n.startswith("--amrs robust (a deviation from Dynaboard)") for n in robust.notes)


def test_cli_shows_the_note_and_takes_amrs_robust(demo_store):
    runner = CliRunner()
    out = runner.invoke(cli, ["leaderboard", "sentiment"])
    assert out.exit_code == 0, out.output
    assert "metric 'memory'" in out.output and "majority vs bow-small" in out.output
    data = json.loads(runner.invoke(cli, ["leaderboard", "sentiment", "--amrs", "robust", "--json"]).output)
    assert data["amrs"]["memory"] is None
    bad = runner.invoke(cli, ["leaderboard", "sentiment", "--amrs", "loose"])
    assert bad.exit_code != 0


def test_well_separated_memories_give_no_note():
    board = ScoreBoard({f"m{i}": {"perf": 20.0 * i, "throughput": 10.0, "memory": 2.0 * i - 1,
                                  "robustness": 50.0, "fairness": 50.0} for i in range(1, 5)})
    scored = board.score()
    assert not any("'memory'" in n and "noise" in n for n in scored.notes)
    with pytest.raises(ValidationError, match="--amrs"):
        board.score(weighting=Weighting(amrs_mode="loose"))


def test_check_rate_counts_pairs_and_share():
    perf = np.array([10.0, 10.5, 40.0, 70.0])
    raw = np.array([1.0, 1.1, 3.0, 6.0])
    check = check_rate("memory", ["a", "b", "c", "d"], perf, raw, -raw, 1e-3)
    assert check is not None and check.kept_pairs == 3 and check.over_floor == 2  # 1.0 vs 1.1 is within 25 %
    terms = [0.1 / 0.5, 1.9 / 29.5, 3.0 / 30.0]
    assert check.rate == pytest.approx(np.mean(terms)) and check.top_pair == ("a", "b")
    assert check.top_share == pytest.approx(max(terms) / sum(terms)) and check.fragile


def test_floors_are_the_documented_runner_tolerances():
    assert RUNNER_TOLERANCE == {m: DEFAULTS[m] for m in RUNNER_TOLERANCE}
    assert RUNNER_TOLERANCE == {"throughput": 0.5, "throughput_batched": 0.5, "memory": 0.25, "gpu_memory": 0.25,
                                "tokens_per_second": 0.5}  # generation runs (issue 46)


def test_throughput_floor_is_each_runs_trial_spread():
    from dynadesk.scoring.amrs_noise import floor_for, run_spreads

    perf = np.array([33.0, 33.4, 60.0, 75.0])
    raw = np.array([1000.0, 300.0, 150.0, 40.0])
    names = ["majority", "bow-small", "bow", "minilm"]
    tight = check_rate("throughput", names, perf, raw, raw, 1e-3, {"throughput": dict.fromkeys(names, 0.02)})
    wide = check_rate("throughput", names, perf, raw, raw, 1e-3, {"throughput": dict.fromkeys(names, 0.8)})
    declared = check_rate("throughput", names, perf, raw, raw, 1e-3)
    assert tight is not None and wide is not None and declared is not None
    assert tight.over_floor == 3  # 2 % windows: every pair's difference is real
    assert wide.over_floor == 0 and wide.fragile  # 80 % windows: none is (1000 vs 300 is within 0.8 x 1000)
    assert declared.over_floor == 2  # no recorded spread: the declared 50 % tolerance (300 vs 150 is within it)
    # the floor of a pair is the larger of the two runs' spread x value; memory keeps the runner tolerance
    assert floor_for("throughput", 100.0, 50.0, 0.1, 0.5) == pytest.approx(25.0)
    assert floor_for("memory", 1.0, 2.0, 0.01, 0.01) == pytest.approx(0.5)
    # a run's spread is its noisiest test set's, per metric, from environment.measurement
    assert run_spreads({"spread": {"a": {"throughput": 0.1, "throughput_batched": 0.3},
                                   "b": {"throughput": 0.2, "throughput_batched": 0.05}}}) == \
        {"throughput": 0.2, "throughput_batched": 0.3}
    assert run_spreads(None) == {} and run_spreads({"spread": {"a": {"throughput": "x"}}}) == {}


@pytest.mark.parametrize("spread,noted", [(0.8, True), (0.02, False)])
def test_the_local_board_judges_throughput_by_the_runs_spreads(store, spread, noted):
    """Wide trial spreads: no throughput pair exceeds its floor; tight ones: all do (the rate may still be named
    for the one pair that supplies most of it, the majority baseline's, which is a separate rule)."""
    for model, (perf, memory, tput) in DEMO.items():
        _evaluate(store, model, perf, memory, tput)
    for rec in store.evaluations.board_runs("sentiment"):
        store.evaluations.update(rec.id,
                                 RunChange(environment={"measurement": {"spread": {"d": {"throughput": spread}}}}))
    board = build_leaderboard(store, "sentiment")
    notes = [n for n in board.notes if n.startswith("metric 'throughput'") and "kept pairs differ" in n]
    assert bool(notes) == noted, board.notes
    if noted:
        assert "only 0 of its 3 kept pairs" in notes[0]


def test_the_demo_board_prints_the_note_and_the_robust_result(demo_store):
    """`dynadesk demo`'s board (print_leaderboard) on a board like the demo's four models: the memory note names
    the metric and the pair, and the --amrs robust line gives the documented result."""
    from dynadesk.demo import print_leaderboard

    lines: list[str] = []
    best = print_leaderboard(demo_store, lines.append)
    text = "\n".join(lines)
    (note,) = [line for line in lines if "note: metric 'memory'" in line]
    assert "majority vs bow-small" in note and "rests on noise" in note
    robust = build_leaderboard(demo_store, "sentiment", Weighting(amrs_mode="robust"))
    (line,) = [line for line in lines if "with --amrs robust" in line]
    assert "memory" in line.split("unconverted")[0]
    assert line.endswith(", ".join(f"{r.rank} {r.model} {r.dynascore:.2f}" for r in robust.rows)), text
    assert best == build_leaderboard(demo_store, "sentiment").rows[0].model
    table = [line for line in lines if line.split()[0].isdigit()]
    assert len(table) == len(DEMO) and all("(n=40)" in line for line in table)  # coverage beside robustness


def test_the_demo_board_prints_no_robust_line_without_a_fragile_rate(store):
    from dynadesk.demo import print_leaderboard

    for model, perf, memory, tput in (("a", 10.0, 1.0, 100.0), ("b", 30.0, 2.5, 210.0), ("c", 60.0, 5.0, 441.0),
                                      ("d", 100.0, 10.0, 926.0)):
        _evaluate(store, model, perf, memory, tput)
    assert not any("rests on noise" in n for n in build_leaderboard(store, "sentiment").notes)
    lines: list[str] = []
    print_leaderboard(store, lines.append)
    assert lines and not any("with --amrs robust" in line for line in lines)
