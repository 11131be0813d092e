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

from dynadesk.cli import cli
from dynadesk.errors import ValidationError
from dynadesk.scoring.amrs_noise import RUNNER_TOLERANCE, check_rate
from dynadesk.scoring.board import ScoreBoard
from dynadesk.scoring.leaderboard import build_leaderboard
from dynadesk.store.evaluations import MetricValue
from dynadesk.sync.format.tolerances import DEFAULTS

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
    robust = build_leaderboard(demo_store, "sentiment", amrs_mode="robust")
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
        board.score(amrs_mode="loose")


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
