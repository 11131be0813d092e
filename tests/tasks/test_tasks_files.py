"""Task files: the four bundled tasks load; a bad file fails naming file and field."""

from pathlib import Path

import pytest

from dynadesk.errors import ConfigError, NotFoundError
from dynadesk.tasks import Task, get_task, load_task_file, load_tasks


def test_four_bundled_tasks_load_with_their_contracts():
    tasks = load_tasks()
    assert set(tasks) == {"nli", "sentiment", "hate_speech", "qa"}
    assert tasks["nli"].labels == ("entailment", "neutral", "contradiction")
    assert tasks["nli"].metric == "accuracy" and tasks["nli"].multi_gold
    assert tasks["sentiment"].metric == "macro_f1"
    assert tasks["hate_speech"].labels == ("not-hateful", "hateful")
    qa = tasks["qa"]
    assert qa.output_kind == "span" and qa.span_of == "context" and qa.gold_field == "answers"
    assert qa.fooled_rule.kind == "answer_f1_below" and qa.fooled_rule.threshold == 0.4
    assert qa.secondary_metrics == ("exact_match",)
    assert tasks["nli"].context_field == "context" and tasks["sentiment"].context_field is None
    for t in tasks.values():
        assert t.robustness_suites and t.fairness_suites
        assert set(t.perturb_fields) <= set(t.input_names)


def test_task_round_trips_through_dict():
    for t in load_tasks().values():
        assert Task.from_dict(t.to_dict()) == t


def _write(tmp_path: Path, name: str, text: str) -> Path:
    p = tmp_path / f"{name}.yaml"
    p.write_text(text)
    return p


GOOD = """
name: demo
inputs: [{name: statement}]
output: {kind: label, labels: [a, b]}
metric: macro_f1
fooled_rule: {kind: label_mismatch}
"""


def test_minimal_task_file_gets_defaults(tmp_path):
    t = load_task_file(_write(tmp_path, "demo", GOOD))
    assert t.votes_needed == 3 and t.labels == ("a", "b")


@pytest.mark.parametrize("change, field", [
    (("metric: macro_f1", "metric: f2"), "metric"),
    (("labels: [a, b]", "labels: [a]"), "output.labels"),
    (("{kind: label_mismatch}", "{kind: coin_flip}"), "fooled_rule.kind"),
    (("inputs: [{name: statement}]", "inputs: []"), "inputs"),
    (("name: demo", "name: demo\ncolour: red"), "colour"),
    (("metric: macro_f1", "metric: 3"), "metric"),
])
def test_bad_task_file_names_file_and_field(tmp_path, change, field):
    path = _write(tmp_path, "demo", GOOD.replace(*change))
    with pytest.raises(ConfigError) as err:
        load_task_file(path)
    assert str(path) in str(err.value) and field in str(err.value)


def test_invalid_yaml_and_name_mismatch(tmp_path):
    with pytest.raises(ConfigError, match="not valid YAML"):
        load_task_file(_write(tmp_path, "demo", "name: [unclosed"))
    with pytest.raises(ConfigError, match="file is named"):
        load_task_file(_write(tmp_path, "other", GOOD))


def test_unknown_task_lists_known_ones():
    with pytest.raises(NotFoundError, match="sentiment"):
        get_task("sentimental")
