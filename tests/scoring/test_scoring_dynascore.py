"""The Dynascore: a hand-worked example through the CLI, properties, degenerate cases."""

from __future__ import annotations

import json
import math
import random

import pytest
from click.testing import CliRunner
from hypothesis import given, settings
from hypothesis import strategies as st

from dynadesk.cli import cli
from dynadesk.errors import ValidationError
from dynadesk.scoring.board import compute, from_document
from dynadesk.scoring.dynascore import MetricSpec, default_metrics, rank_stability

WORKED = {
    "perf_metric": "perf",
    "metrics": {"perf": {"direction": 1, "offset": 0, "weight": 4},
                "throughput": {"direction": 1, "offset": 0, "weight": 1},
                "memory": {"direction": -1, "offset": 16, "weight": 1}},
    "models": {"A": {"perf": 60, "throughput": 100, "memory": 4},
               "B": {"perf": 70, "throughput": 50, "memory": 8},
               "C": {"perf": 80, "throughput": 20, "memory": 2}},
}


def _run_cli(tmp_path, doc, *extra):
    path = tmp_path / "table.json"
    path.write_text(json.dumps(doc))
    res = CliRunner().invoke(cli, ["--home", str(tmp_path / "ws"), "dynascore", str(path), *extra])
    assert res.exit_code == 0, res.output
    return res.output


def test_worked_example_by_hand_through_the_cli(tmp_path):
    """Three models, worked by hand.

    Weights 4:1:1 normalise to 4/6, 1/6, 1/6. Utilities: memory' = 16 - memory, so
    A 12, B 8, C 14; perf and throughput unchanged. Sorted by perf: A(60) B(70) C(80);
    both neighbour gaps are 10 > 1e-4 x 80, so both pairs are kept.
      AMRS(throughput) = (|50-100|/10 + |20-50|/10) / 2 = (5 + 3) / 2 = 4
      AMRS(memory)     = (|8-12|/10 + |14-8|/10) / 2 = (0.4 + 0.6) / 2 = 0.5
    Converted throughput = x/4: A 25, B 12.5, C 5; memory = x'/0.5: A 24, B 16, C 28.
      A = (4*60 + 25 + 24) / 6 = 289/6   = 48.1666...
      B = (4*70 + 12.5 + 16) / 6 = 308.5/6 = 51.4166...
      C = (4*80 + 5 + 28) / 6 = 353/6   = 58.8333...
    Ranks: C 1, B 2, A 3.
    """
    out = json.loads(_run_cli(tmp_path, WORKED, "--json"))
    assert out["amrs"]["perf"] == 1
    assert abs(out["amrs"]["throughput"] - 4.0) < 1e-9
    assert abs(out["amrs"]["memory"] - 0.5) < 1e-9
    expected = {"A": 289 / 6, "B": 308.5 / 6, "C": 353 / 6}
    for name, score in expected.items():
        assert abs(out["models"][name]["dynascore"] - score) < 1e-9
    conv = {"A": (60, 25, 24), "B": (70, 12.5, 16), "C": (80, 5, 28)}
    for name, (p, t, m) in conv.items():
        c = out["models"][name]["converted"]
        assert abs(c["perf"] - p) < 1e-9 and abs(c["throughput"] - t) < 1e-9 and abs(c["memory"] - m) < 1e-9
    assert out["ranking"] == ["C", "B", "A"]
    assert [out["models"][n]["rank"] for n in "CBA"] == [1, 2, 3]
    assert out["weights"] == pytest.approx({"perf": 4 / 6, "throughput": 1 / 6, "memory": 1 / 6})


def test_cli_text_output_and_bad_file(tmp_path):
    lines = _run_cli(tmp_path, WORKED).splitlines()[1:]
    assert lines[0].split() == ["rank", "model", "dynascore", "perf", "throughput", "memory"]
    assert [ln.split()[1] for ln in lines[2:5]] == ["C", "B", "A"]
    assert lines[5].startswith("AMRS: perf=1.000000, throughput=4.000000, memory=0.500000")
    bad = tmp_path / "bad.json"
    bad.write_text('{"models": {"A": {"perf": 1}}, "metrics": {"perf": {"weight": -1}}}')
    res = CliRunner().invoke(cli, ["--home", str(tmp_path / "ws"), "dynascore", str(bad)])
    assert res.exit_code != 0
    assert "metrics.perf.weight must not be negative" in str(res.exception)
    bad.write_text("{not json")
    res = CliRunner().invoke(cli, ["--home", str(tmp_path / "ws"), "dynascore", str(bad)])
    assert "not valid JSON" in str(res.exception)


def test_per_dataset_values_use_normalised_dataset_weights():
    models = {m: {k: {"d1": v, "d2": v + (10 if k == "perf" else 0)} for k, v in vals.items()}
              for m, vals in WORKED["models"].items()}
    doc = {**WORKED, "models": models, "dataset_weights": {"d1": 1, "d2": 3}}
    res = from_document(doc)
    # perf = 0.25*x + 0.75*(x+10) = x + 7.5 ; other metrics unchanged; gaps still 10.
    assert res.model("A").values["perf"] == pytest.approx(67.5)
    assert res.amrs["throughput"] == pytest.approx(4.0)
    assert res.model("A").dynascore == pytest.approx((4 * 67.5 + 25 + 24) / 6)


def test_order_of_models_does_not_matter():
    rng = random.Random(7)
    models = {f"m{i}": {"perf": rng.choice([50, 60, 60, 70, 80]), "throughput": rng.uniform(1, 500),
                        "memory": rng.uniform(0.5, 10), "robustness": rng.uniform(40, 100),
                        "fairness": rng.uniform(40, 100)} for i in range(30)}
    base = compute(models).to_dict()
    for seed in range(5):
        names = list(models)
        random.Random(seed).shuffle(names)
        shuffled = compute({n: models[n] for n in names}).to_dict()
        assert shuffled["ranking"] == base["ranking"]
        for n in models:
            assert shuffled["models"][n]["dynascore"] == pytest.approx(base["models"][n]["dynascore"], abs=1e-12)
        assert shuffled["amrs"] == pytest.approx(base["amrs"])


_value = st.floats(min_value=0.5, max_value=100, allow_nan=False, allow_infinity=False)


@settings(max_examples=60, deadline=None)
@given(table=st.lists(st.tuples(st.floats(10, 100), _value, _value, _value), min_size=2, max_size=8),
       metric=st.sampled_from(["perf", "throughput", "memory", "robustness"]),
       low=st.floats(0, 4), bump=st.floats(0.1, 5))
def test_raising_a_weight_never_lowers_the_rank_of_the_model_best_on_it(table, metric, low, bump):
    models = {f"m{i}": {"perf": p, "throughput": t, "memory": mem / 10, "robustness": r}
              for i, (p, t, mem, r) in enumerate(table)}
    specs = {k: v for k, v in default_metrics().items() if k != "fairness"}

    def board(w):
        s = dict(specs)
        s[metric] = MetricSpec(s[metric].direction, s[metric].offset, w)
        return compute(models, s)

    before = board(low)
    # The best model on the metric is the one with the highest converted value.
    best = max(before.models, key=lambda m: m.converted[metric]).name
    after = board(low + bump)
    assert after.model(best).rank <= before.model(best).rank


def test_one_model():
    res = compute({"only": {"perf": 70, "throughput": 10, "memory": 2, "robustness": 80, "fairness": 90}})
    assert res.models[0].rank == 1
    assert res.models[0].dynascore == pytest.approx(70 * 4 / 8)
    assert res.amrs["throughput"] is None and res.amrs["perf"] == 1
    assert any("single model" in n for n in res.notes)


def test_all_performances_tied():
    models = {"a": {"perf": 70, "throughput": 10, "memory": 2, "robustness": 80, "fairness": 90},
              "b": {"perf": 70, "throughput": 99, "memory": 1, "robustness": 60, "fairness": 50}}
    res = compute(models)
    assert all(v is None for k, v in res.amrs.items() if k != "perf")
    assert [m.rank for m in res.models] == [1, 1]
    assert all(math.isfinite(m.dynascore) for m in res.models)
    assert any("no exchange rate" in n for n in res.notes)


def test_metric_equal_for_every_model_converts_to_zero():
    models = {"a": {"perf": 60, "throughput": 10, "memory": 2, "robustness": 80, "fairness": 90},
              "b": {"perf": 70, "throughput": 20, "memory": 2, "robustness": 70, "fairness": 50}}
    res = compute(models)
    assert res.amrs["memory"] == 0
    assert all(m.converted["memory"] == 0 for m in res.models)
    assert all(math.isfinite(m.dynascore) for m in res.models)
    assert any("'memory'" in n for n in res.notes)


def test_model_missing_a_metric_is_left_off_with_the_reason():
    models = {"a": {"perf": 60, "throughput": 10, "memory": 2, "robustness": 80, "fairness": 90},
              "b": {"perf": 70, "throughput": 20, "memory": 3, "robustness": 70, "fairness": 50},
              "c": {"perf": 75, "throughput": 20, "memory": 3, "robustness": 70},
              "d": {"perf": float("nan"), "throughput": 1, "memory": 3, "robustness": 7, "fairness": 5},
              "e": {"perf": {"x": 50}, "throughput": 1, "memory": 3, "robustness": 7, "fairness": 5}}
    res = compute(models)
    assert [m.name for m in res.models] == ["b", "a", "e"]
    assert res.left_off["c"] == "missing metric 'fairness'"
    res2 = compute({**models, "f": {"perf": 1, "memory": float("inf")}})
    assert res2.left_off["f"] == ("missing metrics 'throughput', 'robustness', 'fairness'; "
                                  "metric 'memory' value inf is not a finite number")
    assert "not a finite number" in res.left_off["d"]
    # e reports perf per dataset; the others' whole-run numbers count on dataset x too.
    assert res.model("e").values["perf"] == 50


def test_dataset_missing_is_left_off_unless_its_weight_is_zero():
    models = {"a": {"perf": {"x": 60, "y": 70}}, "b": {"perf": {"x": 80}}}
    specs = {"perf": MetricSpec()}
    res = compute(models, specs)
    assert res.left_off == {"b": "metric 'perf' has no value for dataset 'y'"}
    res = compute(models, specs, dataset_weights={"y": 0})
    assert [m.name for m in res.models] == ["b", "a"] and res.left_off == {}


def test_empty_board_and_invalid_specs():
    assert compute({}).models == []
    with pytest.raises(ValidationError, match="at least one metric weight"):
        compute({}, {"perf": MetricSpec(weight=0)})
    with pytest.raises(ValidationError, match="performance metric 'acc'"):
        compute({}, {"perf": MetricSpec()}, perf_metric="acc")
    with pytest.raises(ValidationError, match="unknown top-level key"):
        from_document({"models": {}, "extra": 1})
    with pytest.raises(ValidationError, match="too large"):
        compute({"a": {"perf": 1e308}, "b": {"perf": -1e308}}, {"perf": MetricSpec(offset=1e308)})
    with pytest.raises(ValidationError, match="dataset weight for 'x'"):
        compute({}, dataset_weights={"x": -1})


def test_rank_stability_brackets_the_current_rank():
    res = from_document(WORKED)
    stab = rank_stability(res)
    for m in res.models:
        s = stab[m.name]
        assert s["min_rank"] <= m.rank <= s["max_rank"]
    # With perf weight 0 and throughput weight 1, A (the fastest) ranks first:
    # A = (25+24)/2 = 24.5, B = 14.25, C = 16.5.
    assert stab["A"]["by_metric"]["perf"][0] == 1
    assert stab["A"]["max_rank"] == 3
