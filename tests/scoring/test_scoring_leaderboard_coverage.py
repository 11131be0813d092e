"""``leaderboard --json`` gives coverage figures as run values: flags by max, counts by sum (not means)."""

from __future__ import annotations

import json

from click.testing import CliRunner

from dynadesk.cli import cli
from dynadesk.scoring.board import Weighting
from dynadesk.scoring.leaderboard import build_leaderboard
from dynadesk.store.evaluations import MetricValue

DATASETS = ("movies", "tweets", "amazon")
UNIT = {"perf": "%", "macro_f1": "%", "robustness": "%", "fairness": "%", "throughput": "examples/s",
        "memory": "GiB", "fairness_sources": "examples", "robustness_sources": "examples",
        "fairness_low_confidence": "flag", "robustness_low_confidence": "flag"}


def _evaluate(store, model: str, per_dataset: dict[str, dict[str, float]], whole: dict[str, float]) -> None:
    store.models.add(model, "sentiment", "majority", f"/models/{model}", f"sha256:{model}", {"task": "sentiment"})
    run = store.evaluations.create(store.models.get(model).id, "sentiment", runner="local", sandboxed=False,
                                   datasets=list(per_dataset),
                                   status="running")
    values = [MetricValue(ds, m, v, UNIT[m], True) for ds, by_m in per_dataset.items() for m, v in by_m.items()]
    values += [MetricValue("", m, v, UNIT[m], False) for m, v in whole.items()]
    store.evaluations.set_metrics(run, values, status="succeeded")


def _row(perf: float, sources: float, low: float) -> dict[str, float]:
    return {"perf": perf, "macro_f1": perf, "robustness": 80, "fairness": 70, "fairness_sources": sources,
            "robustness_sources": sources * 2, "fairness_low_confidence": low, "robustness_low_confidence": 0}


def test_flags_take_the_max_and_counts_the_sum(store, home):
    _evaluate(store, "a", {"movies": _row(60, 200, 0), "tweets": _row(70, 266, 0), "amazon": _row(65, 0, 1)},
              {"throughput": 10, "memory": 1})
    _evaluate(store, "b", {"movies": _row(80, 100, 0), "tweets": _row(50, 16, 1), "amazon": _row(55, 5, 1)},
              {"throughput": 20, "memory": 2})
    board = build_leaderboard(store, "sentiment")
    values = {r.model: r.values for r in board.rows}
    assert values["a"]["fairness_sources"] == 466 and values["a"]["robustness_sources"] == 932
    assert values["a"]["fairness_low_confidence"] == 1 and values["a"]["robustness_low_confidence"] == 0
    assert values["b"]["fairness_sources"] == 121 and values["b"]["fairness_low_confidence"] == 1
    # dataset weight 0 leaves that dataset's coverage out too
    weighted = build_leaderboard(store, "sentiment", Weighting(dataset_weights={"amazon": 0}))
    a = next(r for r in weighted.rows if r.model == "a").values
    assert a["fairness_sources"] == 466 and a["fairness_low_confidence"] == 0
    out = CliRunner().invoke(cli, ["leaderboard", "sentiment", "--json"])
    assert out.exit_code == 0, out.output
    rows = {r["model"]: r["values"] for r in json.loads(out.output)["rows"]}
    assert rows["a"]["fairness_sources"] == 466 and rows["b"]["fairness_low_confidence"] == 1
