"""Baselines are baselines on the local board (issue 44, item 4): a constant predictor, or a model the task file
names a baseline, is shown as a baseline row, unranked and scored at the ranked rows' rates; its robustness and
fairness are labelled trivial. Seen failing first: the majority model, at 600,000 examples/s with robustness and
fairness 100, ranked above the weak trained model (and the board had no baseline rows)."""

from __future__ import annotations

import csv
import io
import json

import pytest
from click.testing import CliRunner
from support.baselines import constant, mostly_right, outcomes_of, run_with_outcomes, weak

from dynadesk.cli import cli
from dynadesk.scoring import baselines as BL
from dynadesk.scoring.leaderboard import build_leaderboard
from dynadesk.workspace import Workspace


@pytest.fixture
def local(home, store):
    ws = Workspace(home)
    run_with_outcomes(ws, store, "trained", mostly_right, throughput=900.0, robustness=60.0, fairness=80.0)
    run_with_outcomes(ws, store, "weak", weak, throughput=900.0, robustness=55.0, fairness=70.0)
    run_with_outcomes(ws, store, "majority", constant, throughput=600000.0, memory=0.01, robustness=100.0,
                      fairness=100.0)
    return ws, store


def test_the_majority_model_is_a_baseline_row_unranked_on_the_local_board(local):
    _, store = local
    board = build_leaderboard(store, "sentiment")
    assert [r.model for r in board.rows] == ["trained", "weak"], "the constant predictor was ranked"
    assert [r.rank for r in board.rows] == [1, 2]
    (base,) = board.baselines
    assert base.model == "majority" and base.rank == 0
    assert base.baseline == {"reason": BL.CONSTANT, "constant": True, "trivial": ["robustness", "fairness"]}
    # scored at the ranked rows' rates: its figures are the ranked rows' conversion of its own values
    for k, v in base.converted.items():
        rate = board.amrs[k]
        spec = board.metrics[k]
        assert v == pytest.approx((base.values[k] * spec.direction + spec.offset) / abs(rate) if rate else 0.0)
    assert base.dynascore == pytest.approx(sum(board.weights[k] * v for k, v in base.converted.items()))
    notes = [n for n in board.notes if n.startswith("majority:")]
    assert len(notes) == 2 and "baseline" in notes[0] and "trivial" in notes[1]
    # the ranked rows' scores are those of a board that never had the baseline
    from dynadesk.scoring.leaderboard import LocalBoard

    without = LocalBoard("sentiment", [r for r in store.evaluations.board_runs("sentiment")
                                       if r.model_name != "majority"]).rank()
    assert [(r.model, r.dynascore) for r in without.rows] == [(r.model, r.dynascore) for r in board.rows]


def test_the_cli_prints_the_baseline_unranked_with_trivial_figures(local):
    runner = CliRunner()
    out = runner.invoke(cli, ["leaderboard", "sentiment", "--wide"])
    assert out.exit_code == 0, out.output
    lines = out.output.splitlines()
    base = next(line for line in lines if " majority " in f" {line} ")
    assert base.split()[0] == "baseline" and "trivial" in base
    assert not any(line.split()[:1] == ["1"] and "majority" in line for line in lines)
    assert "note: majority: a baseline (its predictions are constant" in out.output
    assert "note: majority: robustness and fairness trivial" in out.output
    js = json.loads(runner.invoke(cli, ["leaderboard", "sentiment", "--json"]).output)
    assert [r["model"] for r in js["rows"]] == ["trained", "weak"]
    assert [r["model"] for r in js["baselines"]] == ["majority"] and js["baselines"][0]["rank"] == 0
    rows = list(csv.DictReader(io.StringIO(runner.invoke(cli, ["leaderboard", "sentiment", "--csv"]).output)))
    assert [(r["rank"], r["model"]) for r in rows] == [("1", "trained"), ("2", "weak"), ("baseline", "majority")]


def test_no_baseline_note_without_a_baseline(home, store):
    ws = Workspace(home)
    run_with_outcomes(ws, store, "trained", mostly_right)
    run_with_outcomes(ws, store, "weak", weak)
    board = build_leaderboard(store, "sentiment")
    assert board.baselines == [] and not any("baseline" in n or "trivial" in n for n in board.notes)
    out = CliRunner().invoke(cli, ["leaderboard", "sentiment"]).output
    assert "baseline" not in out and "trivial" not in out


def test_constant_predictions_need_real_evidence(home, store):
    ws = Workspace(home)
    run_with_outcomes(ws, store, "trained", mostly_right)
    found, _ = outcomes_of(store, constant)
    assert BL.constant_predictions(found) and BL.constant_predictions(list(
        {"dataset": k, **v} for k, v in found.items()))
    assert not BL.constant_predictions(outcomes_of(store, weak)[0])
    assert not BL.constant_predictions({})  # no outcomes: no evidence
    one = next(iter(found.values()))
    assert not BL.constant_predictions({"d": {**one, "encoding": "u16x100"}})  # scores say nothing of labels
    assert not BL.constant_predictions({"d": {**one, "data": "!!"}})  # malformed: no evidence
    # every gold label the same: a perfect model answers one label too
    same = outcomes_of(store, constant, digest=lambda n: n)[0]
    from dynadesk.scoring import bootstrap as B

    o = B.decode_outcomes(next(iter(same.values())))
    o = B.Outcomes(o.metric, pred=o.pred, gold=o.pred.copy(), allowed=o.allowed)
    assert not BL.constant_predictions({"d": B.encode_outcomes(o, "sha256:d")})
    assert BL.is_baseline("x", False, ("x",)) == BL.Baseline(BL.MARKED, False)
    assert BL.is_baseline("x", False, ()) is None and BL.is_baseline("y", False, ("x",)) is None


def test_a_model_the_task_file_names_is_a_baseline_with_no_trivial_label(home, store):
    import yaml

    from dynadesk.scoring.leaderboard import LocalBoard
    from dynadesk.tasks import default_tasks_dir, get_task, parse_task, task_digest

    ws = Workspace(home)
    run_with_outcomes(ws, store, "trained", mostly_right)
    run_with_outcomes(ws, store, "weak", weak)
    raw = yaml.safe_load((default_tasks_dir() / "sentiment.yaml").read_text())
    marked = parse_task({**raw, "baselines": ["weak"]}, "sentiment.yaml")
    assert marked.baselines == ("weak",) and task_digest(marked) != task_digest(get_task("sentiment"))
    assert "baselines" not in get_task("sentiment").to_dict()  # unmarked tasks keep their digest
    board = LocalBoard("sentiment", store.evaluations.board_runs("sentiment"), marked.baselines).rank()
    assert [r.model for r in board.rows] == ["trained"]
    assert [(b.model, b.baseline) for b in board.baselines] == [
        ("weak", {"reason": BL.MARKED, "constant": False, "trivial": []})]
    assert not any("trivial" in n for n in board.notes) and any(n.startswith("weak: a baseline") for n in board.notes)


def test_the_demo_board_ranks_the_trained_models_and_shows_the_majority_as_its_baseline(local):
    from dynadesk.demo import print_leaderboard

    _, store = local
    lines: list[str] = []
    assert print_leaderboard(store, lines.append) == "trained"
    table = [line.split() for line in lines if line.startswith("    ") and not line.strip().startswith("note")]
    assert [row[0] for row in table if len(row) > 1 and row[1] in ("trained", "weak", "majority")] == [
        "1", "2", "baseline"]
    base = next(line for line in lines if line.split()[:2] == ["baseline", "majority"])
    assert base.count("trivial") == 2
    assert any(line.strip().startswith("note: majority: a baseline") for line in lines)
