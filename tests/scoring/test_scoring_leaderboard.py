"""The local leaderboard over real evaluation rows in a real SQLite workspace."""

from __future__ import annotations

import csv
import io
import json

import pytest
from click.testing import CliRunner

from dynadesk.cli import cli
from dynadesk.errors import NotFoundError, ValidationError
from dynadesk.scoring.board import Weighting, compute
from dynadesk.scoring.dynascore import default_metrics
from dynadesk.scoring.leaderboard import build_leaderboard
from dynadesk.store.evaluations import MetricValue, RunChange

UNITS = {"perf": "%", "macro_f1": "%", "robustness": "%", "fairness": "%", "throughput": "examples/s",
         "memory": "GiB", "latency_p50_ms": "ms"}
DATASETS = ("vader-movies-test", "vader-tweets-test")


def _evaluate(store, model: str, per_dataset: dict[str, dict[str, float]], whole: dict[str, float],
              status: str = "succeeded") -> int:
    if not store.models.exists(model):
        store.models.add(model, "sentiment", "majority", f"/models/{model}", f"sha256:{model}", {"task": "sentiment"})
    model_id = store.models.get(model).id
    run = store.evaluations.create(model_id, "sentiment", runner="local", sandboxed=False,
                                   datasets=list(per_dataset), status="running")
    values = [MetricValue(ds, m, v, UNITS[m], m not in ("throughput", "memory", "latency_p50_ms"))
              for ds, by_m in per_dataset.items() for m, v in by_m.items()]
    values += [MetricValue("", m, v, UNITS[m], False) for m, v in whole.items()]
    store.evaluations.set_metrics(run, values, status=status)
    return run


def _scores(perf, rob, fair):
    return {"perf": perf, "macro_f1": perf, "robustness": rob, "fairness": fair}


@pytest.fixture
def board_store(store):
    # m1 is evaluated twice: only the latest succeeded run counts; a failed newer run is ignored.
    _evaluate(store, "m1", {d: _scores(10, 10, 10) for d in DATASETS}, {"throughput": 1, "memory": 9})
    _evaluate(store, "m1", {DATASETS[0]: _scores(60, 80, 90), DATASETS[1]: _scores(70, 70, 80)},
              {"throughput": 100, "memory": 4, "latency_p50_ms": 10})
    _evaluate(store, "m1", {d: _scores(99, 99, 99) for d in DATASETS}, {"throughput": 1, "memory": 1},
              status="failed")
    _evaluate(store, "m2", {DATASETS[0]: _scores(80, 60, 70), DATASETS[1]: _scores(60, 70, 60)},
              {"throughput": 50, "memory": 8, "latency_p50_ms": 20})
    _evaluate(store, "m3", {DATASETS[0]: _scores(90, 90, 95), DATASETS[1]: _scores(80, 85, 90)},
              {"throughput": 20, "memory": 2, "latency_p50_ms": 50})
    _evaluate(store, "m4", {DATASETS[0]: {"perf": 50, "macro_f1": 50}}, {"throughput": 5, "memory": 1})
    return store


def _expected(dataset_weights=None, weights=None, without=()):
    """Recompute the board's input by hand from the rows inserted above."""
    dw = dataset_weights or {d: 1 for d in DATASETS}
    total = sum(dw.values())
    rows = {"m1": ((60, 80, 90), (70, 70, 80), 100, 4), "m2": ((80, 60, 70), (60, 70, 60), 50, 8),
            "m3": ((90, 90, 95), (80, 85, 90), 20, 2)}
    models = {}
    for name, (a, b, thr, mem) in rows.items():
        if name in without:
            continue
        avg = [(a[i] * dw[DATASETS[0]] + b[i] * dw[DATASETS[1]]) / total for i in range(3)]
        models[name] = {"perf": avg[0], "robustness": avg[1], "fairness": avg[2], "throughput": thr, "memory": mem}
    specs = default_metrics()
    for k, w in (weights or {}).items():
        specs[k] = type(specs[k])(specs[k].direction, specs[k].offset, w)
    return compute(models, specs)


def test_board_ranks_latest_runs_and_leaves_off_incomplete_models(board_store):
    board = build_leaderboard(board_store, "sentiment")
    expected = _expected()
    assert [r.model for r in board.rows] == [m.name for m in expected.models]
    for row in board.rows:
        assert row.dynascore == pytest.approx(expected.model(row.model).dynascore, abs=1e-9)
        assert row.rank == expected.model(row.model).rank
    m1 = next(r for r in board.rows if r.model == "m1")
    assert m1.values["perf"] == pytest.approx(65) and m1.values["throughput"] == 100
    assert m1.values["latency_p50_ms"] == 10 and m1.values["macro_f1"] == pytest.approx(65)
    assert m1.per_dataset["perf"] == {DATASETS[0]: 60, DATASETS[1]: 70}
    assert board.left_off == {"m4": "missing metrics 'robustness', 'fairness'; "
                                    "metric 'perf' has no value for dataset 'vader-tweets-test'"}
    assert board.units["memory"] == "GiB" and board.units["throughput"] == "examples/s"


def test_weights_and_dataset_weights_change_the_board(board_store):
    dw = {DATASETS[0]: 3, DATASETS[1]: 1}
    board = build_leaderboard(board_store, "sentiment", Weighting(weights={"throughput": 5}, dataset_weights=dw))
    expected = _expected(dw, {"throughput": 5})
    for row in board.rows:
        assert row.dynascore == pytest.approx(expected.model(row.model).dynascore, abs=1e-9)
    assert board.weights["throughput"] == pytest.approx(5 / 12)
    m2 = next(r for r in board.rows if r.model == "m2")
    assert m2.values["perf"] == pytest.approx((80 * 3 + 60) / 4)


def test_zero_weight_metric_does_not_exclude_models(board_store):
    board = build_leaderboard(board_store, "sentiment", Weighting(weights={"robustness": 0, "fairness": 0},
                                                                  dataset_weights={DATASETS[1]: 0}))
    assert board.left_off == {} and "m4" in [r.model for r in board.rows]
    assert "robustness" not in board.metrics and board.rows[0].converted.keys() == {"perf", "throughput", "memory"}
    assert any("robustness" in n for n in board.notes)


def test_memory_budget_shifts_every_score_by_the_same_converted_amount(board_store):
    base = build_leaderboard(board_store, "sentiment")
    bigger = build_leaderboard(board_store, "sentiment", Weighting(memory_budget_gib=32))
    assert bigger.amrs == base.amrs and bigger.metrics["memory"].offset == 32
    shift = 16 / base.amrs["memory"] * base.weights["memory"]
    for a, b in zip(base.rows, bigger.rows):
        assert (a.model, a.rank) == (b.model, b.rank)
        assert b.dynascore - a.dynascore == pytest.approx(shift, abs=1e-9)
    with pytest.raises(ValidationError, match="memory budget"):
        build_leaderboard(board_store, "sentiment", Weighting(memory_budget_gib=0))


def test_errors_name_the_problem(board_store):
    with pytest.raises(ValidationError, match="not a Dynascore metric"):
        build_leaderboard(board_store, "sentiment", Weighting(weights={"speed": 1}))
    with pytest.raises(ValidationError, match="unknown dataset"):
        build_leaderboard(board_store, "sentiment", Weighting(dataset_weights={"nope": 1}))
    with pytest.raises(NotFoundError, match="unknown task"):
        build_leaderboard(board_store, "sentimentt")
    assert build_leaderboard(board_store, "nli").rows == []


def test_cli_json_csv_text_and_stability(home, board_store):
    runner = CliRunner()
    res = runner.invoke(cli, ["leaderboard", "sentiment", "--json", "--stability", "--weight", "perf=2"])
    assert res.exit_code == 0, res.output
    out = json.loads(res.output)
    assert [r["rank"] for r in out["rows"]] == sorted(r["rank"] for r in out["rows"])
    assert out["weights"]["perf"] == pytest.approx(2 / 6)
    for r in out["rows"]:
        assert r["stability"]["min_rank"] <= r["rank"] <= r["stability"]["max_rank"]
    assert "m4" in out["left_off"]
    res = runner.invoke(cli, ["leaderboard", "sentiment", "--csv", "--weight", "perf=2"])
    assert res.exit_code == 0, res.output
    rows = list(csv.DictReader(io.StringIO(res.output)))
    assert rows[0]["rank"] == "1" and "memory (GiB)" in rows[0] and "latency_p50_ms (ms)" in rows[0]
    assert [(r["model"], float(r["dynascore"])) for r in rows] == [(r["model"], r["dynascore"]) for r in out["rows"]]
    res = runner.invoke(cli, ["leaderboard", "sentiment", "--stability"])
    assert res.exit_code == 0, res.output
    assert "rank range" in res.output and "left off: m4: missing metrics" in res.output
    res = runner.invoke(cli, ["leaderboard", "sentiment", "--weight", "perf=x"])
    assert res.exit_code != 0 and "'x' is not a number" in str(res.exception)


LONG_NAME = "sentiment-roberta-large-english-finetuned-on-sst2-and-imdb-v3"


def test_cli_table_fits_120_columns_unless_wide(home, board_store, monkeypatch):
    """A 250-character table used to be printed; the default now fits the terminal (here 120 columns), --wide shows
    every metric. Names come before other columns (issue 47): the long name stays whole, trailing metric columns
    are left out and named below the table."""
    monkeypatch.setenv("COLUMNS", "120")
    _evaluate(board_store, LONG_NAME, {DATASETS[0]: _scores(85, 75, 80), DATASETS[1]: _scores(83, 74, 82)},
              {"throughput": 324000.5, "memory": 0.25, "latency_p50_ms": 0.01})
    runner = CliRunner()
    for extra in ([], ["--stability"]):
        res = runner.invoke(cli, ["leaderboard", "sentiment", *extra])
        assert res.exit_code == 0, res.output
        table = res.output.split("units:")[0].splitlines()
        assert max(len(line) for line in table) <= 120, res.output
        assert table[0].split()[:4] == ["rank", "model", "dynascore", "rank"] if extra else \
            table[0].split()[:4] == ["rank", "model", "dynascore", "perf"]
        assert "latency_p50_ms" not in table[0]
        assert "more stored metric(s): --wide" in res.output
        ranked = [line.split()[1] for line in table[2:]]
        assert LONG_NAME in ranked and not any(name.endswith("…") for name in ranked)  # whole, never cut
        dropped = next(line for line in res.output.splitlines() if line.startswith("not shown to fit 120 columns: "))
        assert all(h not in table[0] for h in dropped.split(": ", 1)[1].split(" (--wide")[0].split(", "))
        assert "units: dynascore points, perf %" in res.output
    wide = runner.invoke(cli, ["leaderboard", "sentiment", "--wide"])
    assert wide.exit_code == 0, wide.output
    header = wide.output.splitlines()[0]
    assert "latency_p50_ms (ms)" in header and "macro_f1 (%)" in header and LONG_NAME in wide.output
    assert "324000" in wide.output


NOISY = {"measurement": {"noisy": True, "noisy_measurements": ["vader-movies-test batch1: other processes used 1.6 "
                                                               "of 2 cores"]}}


def test_a_noisy_run_is_marked_everywhere_the_board_ranks_and_can_be_left_out(home, board_store):
    """Issue 39: a run measured on a busy machine (flagged NOISY by the evaluator) is never ranked silently."""
    run = board_store.db.execute("SELECT MAX(e.id) FROM evaluations e JOIN models m ON m.id = e.model_id "
                                 "WHERE m.name = 'm2' AND e.status = 'succeeded'").fetchone()[0]
    board_store.evaluations.update(run, RunChange(environment=NOISY))
    board = build_leaderboard(board_store, "sentiment")
    marks = {r.model: r.noisy for r in board.rows}
    assert marks["m2"] == NOISY["measurement"]["noisy_measurements"] and marks["m1"] == marks["m3"] == []
    runner = CliRunner()
    out = runner.invoke(cli, ["leaderboard", "sentiment"])
    assert out.exit_code == 0, out.output
    assert "m2 *" in out.output and "* m2: measured figures flagged noisy (vader-movies-test batch1" in out.output
    assert "m1 *" not in out.output
    data = json.loads(runner.invoke(cli, ["leaderboard", "sentiment", "--json"]).output)
    assert {r["model"]: bool(r["noisy"]) for r in data["rows"]} == {"m1": False, "m2": True, "m3": False}
    rows = list(csv.DictReader(io.StringIO(runner.invoke(cli, ["leaderboard", "sentiment", "--csv"]).output)))
    assert {r["model"]: r["noisy"] != "" for r in rows} == {"m1": False, "m2": True, "m3": False}
    # left out: ranked as if the noisy run were not there (its throughput no longer sets the exchange rates)
    quiet = build_leaderboard(board_store, "sentiment", exclude_noisy=True)
    expected = _expected(without={"m2"})
    assert [r.model for r in quiet.rows] == [m.name for m in expected.models]
    for row in quiet.rows:
        assert row.dynascore == pytest.approx(expected.model(row.model).dynascore, abs=1e-9)
    assert "noisy" in quiet.left_off["m2"] and "m4" in quiet.left_off
    out = runner.invoke(cli, ["leaderboard", "sentiment", "--exclude-noisy"])
    assert out.exit_code == 0 and "left off: m2: its measured figures were flagged noisy" in out.output


def test_cli_board_fits_the_terminal_names_whole_and_wraps_long_notes(home, board_store, monkeypatch):
    """Issue 47: the board read the fixed 120 columns and cut names to 13 characters while a note ran to 940 on
    one line. Now the terminal's width (COLUMNS, as shutil.get_terminal_size reads it) bounds every line, names
    stay whole while dropping metric columns suffices, and long notes wrap with every word kept."""
    long_note = "other processes used 1.6 of 2 cores during " + ", ".join(f"batch{i}" for i in range(120))
    _evaluate(board_store, LONG_NAME, {DATASETS[0]: _scores(85, 75, 80), DATASETS[1]: _scores(83, 74, 82)},
              {"throughput": 324000.5, "memory": 0.25, "latency_p50_ms": 0.01})
    run = board_store.db.execute("SELECT MAX(e.id) FROM evaluations e JOIN models m ON m.id = e.model_id "
                                 "WHERE m.name = ? AND e.status = 'succeeded'", (LONG_NAME,)).fetchone()[0]
    board_store.evaluations.update(run, RunChange(environment={"measurement": {"noisy": True,
                                                                               "noisy_measurements": [long_note]}}))
    for columns in (90, 200):
        monkeypatch.setenv("COLUMNS", str(columns))
        res = CliRunner().invoke(cli, ["leaderboard", "sentiment"])
        assert res.exit_code == 0, res.output
        lines = res.output.splitlines()
        assert max(len(line) for line in lines) <= columns, max(lines, key=len)
        assert any(line.split()[1:2] == [f"{LONG_NAME} *"[:len(LONG_NAME)]] for line in lines[2:6])
        flagged = [i for i, line in enumerate(lines) if line.startswith(f"* {LONG_NAME}: measured figures")]
        assert len(flagged) == 1
        body = [lines[flagged[0]]] + [line for line in lines[flagged[0] + 1:] if line.startswith("  ")][:40]
        assert long_note in " ".join(part.strip() for part in body)  # wrapped, not cut
        assert (len(body) > 1) == (len(long_note) > columns)
    monkeypatch.setenv("COLUMNS", "90")
    assert "not shown to fit 90 columns:" in CliRunner().invoke(cli, ["leaderboard", "sentiment"]).output
