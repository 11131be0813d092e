"""How a metric's per-test-set values make its run value is declared in its MetricDef (``over_test_sets``: mean,
sum or max), read in one place (``metric_registry.run_value``) by the host's recompute and every board; a name's
suffix decides nothing (issue 48 item 2). Before, ``run_value`` summed any metric whose name ended in ``_sources``."""

from __future__ import annotations

import random

import pytest

from dynadesk.evaluator.metric_registry import METRICS, SHARED, TASK, MetricDef, over_test_sets, run_value
from dynadesk.scoring.leaderboard import coverage_values


def test_the_builtin_rules_are_declared_and_give_the_same_bits_as_before():
    rng = random.Random(5)
    values = [rng.uniform(0, 100) for _ in range(7)]
    assert over_test_sets("perf") == "mean" and run_value("perf", values) == sum(values) / len(values)
    for kind in ("robustness", "fairness"):
        assert METRICS[f"{kind}_sources"].over_test_sets == "sum"
        assert run_value(f"{kind}_sources", [52.0, 31.0]) == 83.0
        assert METRICS[f"{kind}_low_confidence"].over_test_sets == "max"
        assert run_value(f"{kind}_low_confidence", [0.0, 1.0, 0.0]) == 1.0
    assert run_value("a_metric_this_installation_lacks", [1.0, 4.0]) == 2.5  # unknown: the mean


def test_a_metric_named_like_a_count_but_declared_a_mean_is_averaged(monkeypatch):
    # a plugin's score whose name happens to end in "_sources" (the old rule summed it: 150 for two test sets)
    monkeypatch.setitem(METRICS, "agreement_with_sources", MetricDef("agreement_with_sources", "score", TASK, True))
    assert run_value("agreement_with_sources", [70.0, 80.0]) == 75.0
    table = {"agreement_with_sources": {"set-a": 70.0, "set-b": 80.0}}
    assert coverage_values(table, {}) == {}  # a mean: the board's own dataset-weighted mean, not a run figure


def test_a_plugin_declares_its_rule_and_the_board_follows_it(monkeypatch):
    monkeypatch.setitem(METRICS, "worst_set_error", MetricDef("worst_set_error", "score", SHARED, True,
                                                              over_test_sets="max"))
    table = {"worst_set_error": {"set-a": 12.0, "set-b": 31.5, "set-c": 4.0, "": 15.8},
             "perf": {"set-a": 80.0, "set-b": 70.0, "": 75.0}}
    assert run_value("worst_set_error", [12.0, 31.5, 4.0]) == 31.5
    assert coverage_values(table, {}) == {"worst_set_error": 31.5}
    # a test set weighted 0 on the board is not counted
    assert coverage_values(table, {"set-b": 0.0, "set-a": 1.0, "set-c": 1.0}) == {"worst_set_error": 12.0}


def test_an_unknown_rule_is_refused_naming_the_metric_and_the_choices():
    with pytest.raises(ValueError, match=r"metric 'odd': over_test_sets must be one of mean, sum, max, got 'median'"):
        MetricDef("odd", "score", TASK, True, over_test_sets="median")
