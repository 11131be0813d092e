"""A task file's optional ``guidelines`` (issue 47): parsed and checked, shown by the hub, never in the digest."""

from __future__ import annotations

import pytest

from dynadesk.errors import ConfigError
from dynadesk.tasks import get_task, parse_task_text, task_digest

BASE = """name: mood
inputs: [{name: text}]
output: {kind: label, labels: [sad, glad]}
metric: accuracy
fooled_rule: {kind: label_mismatch}
"""
GUIDE = """guidelines:
  text: Write one sentence.
  good: [{text: "so glad it rained", label: glad, why: "clear"}]
  bad: [{text: "meh"}]
"""


def test_guidelines_are_read_and_leave_the_digest_alone() -> None:
    plain = parse_task_text(BASE, "mood.yaml")
    guided = parse_task_text(BASE + GUIDE, "mood.yaml")
    assert plain.guidelines is None and guided.guidelines is not None
    assert guided.guidelines.to_dict() == {"text": "Write one sentence.",
                                           "good": [{"text": "so glad it rained", "why": "clear", "label": "glad"}],
                                           "bad": [{"text": "meh", "why": "", "label": ""}]}
    assert task_digest(plain) == task_digest(guided) and plain == guided
    assert "guidelines" not in guided.to_dict()
    for name in ("sentiment", "qa", "nli", "hate_speech"):  # the bundled tasks carry some
        g = get_task(name).guidelines
        assert g is not None and g.text and g.good and g.bad, name


@pytest.mark.parametrize(("text", "names"), [
    ("guidelines: just a string\n", "must be a mapping"),
    ("guidelines: {text: ok, ugly: [1]}\n", "must be a mapping with 'text'"),
    ("guidelines: {good: [{why: no text}]}\n", "guidelines.good[0] must be a mapping with 'text'"),
    ("guidelines: {bad: [{text: 3}]}\n", "guidelines.bad[0]"),
    ("guidelines: {text: [1, 2]}\n", "guidelines.text must be text"),
])
def test_bad_guidelines_are_named(text: str, names: str) -> None:
    with pytest.raises(ConfigError) as err:
        parse_task_text(BASE + text, "mood.yaml")
    assert names in str(err.value) and "mood.yaml" in str(err.value)
