"""The local board's intervals and 'tied with' marks, from runs' stored bootstrap outcomes (real SQLite)."""

from __future__ import annotations

import json
import random

from click.testing import CliRunner

from dynadesk.cli import cli
from dynadesk.evaluator import metrics as M
from dynadesk.scoring import bootstrap as B
from dynadesk.scoring.leaderboard import build_leaderboard
from dynadesk.store.evaluations import MetricValue, RunChange

TASK = {"metric": "macro_f1", "output_kind": "label", "labels": ["negative", "neutral", "positive"]}
DS = "vader-movies-test"
DATA = "sha256:" + "d1" * 32
GOLDS = ["negative", "neutral", "positive"] * 10


def _run(store, model: str, preds: list[str], perf: float | None = None, data: str = DATA) -> int:
    perf = M.macro_f1(preds, GOLDS, TASK["labels"]) if perf is None else perf
    if not store.models.exists(model):
        store.models.add(model, "sentiment", "majority", f"/models/{model}", f"sha256:{model}", {"task": "sentiment"})
    run = store.evaluations.create(store.models.get(model).id, "sentiment", runner="local", sandboxed=False,
                                   datasets=[DS],
                                   status="running")
    values = [MetricValue(DS, m, perf, "%", True) for m in ("perf", "macro_f1", "robustness", "fairness")]
    values += [MetricValue("", "throughput", 10.0, "examples/s", False), MetricValue("", "memory", 1.0, "GiB", False)]
    o = B.outcomes(TASK, "macro_f1", preds, GOLDS)
    digest = "sha256:" + model.encode().hex().ljust(64, "0")
    profile = {"intervals": {DS: B.interval(o, B.derive_seed(digest, data, "macro_f1"))},
               "outcomes": {DS: B.encode_outcomes(o, data)}}
    store.evaluations.set_metrics(run, values, RunChange(predictions_digest=digest, profile=profile),
                                  status="succeeded")
    return run


def _wrong(labels: list[str]) -> list[str]:
    order = TASK["labels"]
    return [order[(order.index(g) + 1) % 3] for g in labels]


def test_identical_rows_are_tied_and_a_row_better_everywhere_is_not(store):
    _run(store, "a-copy", list(GOLDS), 90.0)
    _run(store, "b-copy", list(GOLDS), 89.0)  # the same predictions: no difference to find
    _run(store, "c-wrong", _wrong(GOLDS), 10.0)  # wrong on every example the others get right
    board = build_leaderboard(store, "sentiment", hardware_class="all")
    rows = {r.model: r for r in board.rows}
    assert [r.model for r in board.rows] == ["a-copy", "b-copy", "c-wrong"]
    assert rows["a-copy"].tied_with == "b-copy"
    t = rows["a-copy"].paired_next[DS]
    assert t["tied"] and t["delta"] == t["low"] == t["high"] == 0.0 and t["with"] == "b-copy"
    assert rows["b-copy"].tied_with is None and not rows["b-copy"].paired_next[DS]["tied"]
    assert rows["b-copy"].paired_next[DS]["low"] > 0
    assert rows["c-wrong"].paired_next == {} and rows["c-wrong"].tied_with is None
    iv = rows["a-copy"].intervals[DS]
    assert iv["low"] == iv["high"] == 100.0 and iv["resamples"] == B.RESAMPLES

    runner = CliRunner()
    out = runner.invoke(cli, ["leaderboard", "sentiment", "--hardware-class", "all", "--json"])
    assert out.exit_code == 0, out.output
    shown = {r["model"]: r for r in json.loads(out.output)["rows"]}
    assert shown["a-copy"]["tied_with"] == "b-copy" and shown["a-copy"]["intervals"][DS]["low"] == 100.0
    table = runner.invoke(cli, ["leaderboard", "sentiment", "--hardware-class", "all"])
    assert table.exit_code == 0, table.output
    assert "= b-copy" in table.output and "macro_f1 95% intervals (1000 seeded bootstrap" in table.output
    assert "c-wrong: vader-movies-test [0.00, 0.00]" in table.output


def test_another_version_of_the_test_set_is_not_paired(store):
    _run(store, "a-copy", list(GOLDS), 90.0)
    _run(store, "b-other", list(GOLDS), 80.0, data="sha256:" + "e2" * 32)
    board = build_leaderboard(store, "sentiment", hardware_class="all")
    top = board.rows[0]
    assert top.model == "a-copy" and top.paired_next == {} and top.tied_with is None
    assert json.loads(json.dumps(board.to_dict()))["rows"][0]["intervals"][DS]["metric"] == "macro_f1"


def test_runs_without_outcomes_still_rank(store):
    _run(store, "new", list(GOLDS), 90.0)
    old = _run(store, "old", list(GOLDS), 80.0)
    store.evaluations.update(old, RunChange(profile={}))  # a run stored before the bootstrap existed
    board = build_leaderboard(store, "sentiment", hardware_class="all")
    rows = {r.model: r for r in board.rows}
    assert rows["old"].intervals == {} and rows["new"].paired_next == {} and rows["new"].tied_with is None
    assert rows["new"].intervals[DS]["low"] == 100.0


def test_rank_intervals_from_resampled_examples(store):
    rng = random.Random(5)
    noisy_a = [g if rng.random() < 0.8 else "neutral" for g in GOLDS]
    noisy_b = [g if rng.random() < 0.8 else "negative" for g in GOLDS]
    _run(store, "best", list(GOLDS))  # right on every example
    _run(store, "noisy-a", noisy_a)
    _run(store, "noisy-b", noisy_b)
    _run(store, "worst", _wrong(GOLDS))
    board = build_leaderboard(store, "sentiment", hardware_class="all")
    rows = {r.model: r for r in board.rows}
    assert rows["best"].rank_interval == [1, 1] and rows["worst"].rank_interval == [4, 4]
    # two models of about the same quality on 30 examples: either may be second
    assert rows["noisy-a"].rank_interval == [2, 3] and rows["noisy-b"].rank_interval == [2, 3]
    assert rows["noisy-a"].tied_with or rows["noisy-b"].tied_with
    out = CliRunner().invoke(cli, ["leaderboard", "sentiment", "--hardware-class", "all"])
    assert out.exit_code == 0, out.output
    header = out.output.splitlines()[0]
    assert "rank 95%" in header and "tied with next" in header
    assert any(line.split()[1] == "noisy-a" and "2-3" in line.split() for line in out.output.splitlines()[2:6])


def test_the_demo_prints_the_board_with_intervals_and_ties(store):
    from dynadesk.demo import print_leaderboard

    _run(store, "a-copy", list(GOLDS), 90.0)
    _run(store, "b-copy", list(GOLDS), 89.0)
    _run(store, "c-wrong", _wrong(GOLDS), 10.0)
    lines: list[str] = []
    assert print_leaderboard(store, lines.append) == "a-copy"
    header = lines[0].split()
    assert header[3:7] == ["rank", "95%", "tied", "with"]
    first = next(line for line in lines if line.split()[:2] == ["1", "a-copy"])
    assert "= b-copy" in first
    assert any("macro_f1 95% intervals (1000 seeded bootstrap" in line for line in lines)
    assert any(line.split()[:2] == ["c-wrong", "vader-movies-test"] and "[0.00, 0.00]" in line for line in lines)
