"""The task kind object (evaluator/kinds.py) decides everything that differs between label and span tasks."""

from __future__ import annotations

from typing import Any

import pytest

from dynadesk.datasets import validate_example
from dynadesk.errors import ConfigError
from dynadesk.evaluator import kinds as K
from dynadesk.tasks import get_task, parse_task

LABEL_TASK = {"name": "toy", "inputs": [{"name": "statement"}],
              "output": {"kind": "label", "labels": ["yes", "no"]}, "metric": "accuracy",
              "fooled_rule": {"kind": "label_mismatch"}}


def test_bundled_tasks_take_their_gold_field_metrics_and_rule_from_their_kind():
    for name, kind, gold, key in [("sentiment", "label", "label", "label"), ("qa", "span", "answers", "answer")]:
        task = get_task(name)
        assert task.kind is K.KINDS[kind] and task.gold_field == gold and task.kind.output_key == key
        assert task.metric in task.kind.metrics and task.fooled_rule.kind in task.kind.fooled_rules


def test_the_fooled_rule_is_decided_once_for_annotation_and_the_round_report():
    qa, sentiment = get_task("qa"), get_task("sentiment")
    assert sentiment.is_fooled({"label": "negative"}, "positive")
    assert not sentiment.is_fooled({"label": "negative"}, ["negative", "neutral"])
    # answer_f1_below 0.4: "in Paris" vs "Paris" has F1 2/3 (not fooled); "Lyon" 0 (fooled)
    assert not qa.is_fooled({"answer": "in Paris"}, ["Paris"]) and qa.is_fooled({"answer": "Lyon"}, ["Paris"])


@pytest.mark.parametrize(("change", "problem"), [
    ({"metric": "squad_f1"}, "metric 'squad_f1' does not apply to a label task"),
    ({"secondary_metrics": ["exact_match"]}, "metric 'exact_match' does not apply to a label task"),
    ({"fooled_rule": {"kind": "answer_f1_below", "threshold": 0.4}},
     "fooled_rule.kind 'answer_f1_below' does not apply to a label task"),
])
def test_a_task_file_whose_metric_or_rule_does_not_fit_its_kind_is_refused(change, problem):
    with pytest.raises(ConfigError, match=problem):
        parse_task({**LABEL_TASK, **change}, "toy.yaml")


class CaseBlindLabelKind(K.LabelKind):
    """A toy kind for the guide's recipe: labels compared without case (gold stored lower case)."""

    name = "case_blind_label"
    fooled_rules = ("label_mismatch_case_blind",)

    def check_gold(self, gold: Any, labels: Any, multi_gold: bool, inputs: Any, span_of: Any,
                   unanswerable_allowed: bool = False) -> Any:
        return super().check_gold(str(gold).lower(), labels, multi_gold, inputs, span_of, unanswerable_allowed)

    def claim_problem(self, answer: Any, labels: Any, inputs: Any, span_of: Any) -> str | None:
        return super().claim_problem(str(answer).lower(), labels, inputs, span_of)


def test_a_toy_kind_added_by_the_guide(monkeypatch):
    """DEVELOPERS.md "a task kind": subclass, register (and a fooled rule), then a task file of it works."""
    toy = CaseBlindLabelKind()
    monkeypatch.setitem(K.KINDS, toy.name, toy)
    monkeypatch.setitem(K.FOOLED_RULES, "label_mismatch_case_blind",
                        lambda predicted, golds, _t: predicted.lower() not in {g.lower() for g in golds})
    task = parse_task({**LABEL_TASK, "output": {"kind": toy.name, "labels": ["yes", "no"]},
                       "fooled_rule": {"kind": "label_mismatch_case_blind"}}, "toy.yaml")
    assert task.kind is toy and task.gold_field == "label"
    assert validate_example(task, {"statement": "ok?", "label": "YES"}, "1")["label"] == "yes"
    assert toy.claim_problem("No", task.labels, {}, None) is None
    assert not task.is_fooled({"label": "Yes"}, "yes") and task.is_fooled({"label": "no"}, "yes")


def test_an_unknown_kind_is_named():
    with pytest.raises(ConfigError, match="output.kind must be one of label, span"):
        parse_task({**LABEL_TASK, "output": {"kind": "regression"}}, "toy.yaml")
    with pytest.raises(ValueError, match="unknown task output kind 'regression'"):
        K.kind_of({"output_kind": "regression"})
