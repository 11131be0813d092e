"""A task's output kind (label or span): everything that differs between them, in one object.

The task file's ``output.kind`` names one of :data:`KINDS`; every part of DynaDesk that would otherwise
test the kind asks the object instead: the dataset's gold field, the key of a model's answer, the metrics
and fooled rules that apply, how an annotator's claimed answer and a model's output are checked, and
whether the model was fooled. Pure Python (stdlib only): it runs inside the evaluation container too.

A new kind is one more :class:`OutputKind` subclass registered in :data:`KINDS` (DEVELOPERS.md, "a task kind").
"""

from __future__ import annotations

import math
from abc import ABC, abstractmethod
from collections.abc import Callable, Mapping, Sequence
from typing import Any

from dynadesk.evaluator.answers import squad_f1
from dynadesk.evaluator.registry import Registry

__all__ = ["FOOLED_RULES", "KINDS", "FooledTest", "LabelKind", "OutputKind", "SpanKind", "kind_of"]

FooledTest = Callable[[str, Sequence[str], "float | None"], bool]


def _label_mismatch(predicted: str, golds: Sequence[str], threshold: float | None) -> bool:
    return predicted not in golds


def _answer_f1_below(predicted: str, golds: Sequence[str], threshold: float | None) -> bool:
    return squad_f1(predicted, [str(g) for g in golds]) / 100.0 < float(threshold or 0.0)


FOOLED_RULES: dict[str, FooledTest] = {
    "label_mismatch": _label_mismatch,      # the model's label is none of the acceptable golds
    "answer_f1_below": _answer_f1_below,    # the answer's SQuAD F1 against every gold is below the threshold
}
"""Every fooled rule a task file may name, and the test that decides it (``threshold``: a 0-1 F1)."""


class OutputKind(ABC):
    """What a kind of task output decides. Subclasses set the fields and implement the abstract checks."""

    name: str = ""
    gold_field: str = ""                 # the gold field of a dataset example
    output_key: str = ""                 # the key of a model's answer in its output
    metrics: tuple[str, ...] = ()        # the task metrics that apply
    fooled_rules: tuple[str, ...] = ()   # the fooled rules that apply
    chooses_labels: bool = False         # an annotator picks one of the task's labels (else: selects text)

    def row_gold(self, row: dict[str, Any]) -> None:
        """Move a file's alias of the gold field (a span task's ``answer``) onto the gold field, in place; a kind
        with no alias leaves the row as it is."""
        return None

    @abstractmethod
    def check_gold(self, gold: Any, labels: Sequence[str], multi_gold: bool, inputs: Mapping[str, str],
                   span_of: str | None, unanswerable_allowed: bool = False) -> Any:
        """A dataset example's gold in its stored form; ``ValueError`` naming what is wrong."""

    def golds(self, gold: Any) -> list[Any]:
        """The acceptable golds of an example's gold value, as a list."""
        return list(gold) if isinstance(gold, list | tuple) else [gold]

    @abstractmethod
    def as_gold(self, answer: Any) -> Any:
        """One answer (an annotator's target, a model's original prediction) in the dataset's gold form."""

    @abstractmethod
    def claim_problem(self, answer: Any, labels: Sequence[str], inputs: Mapping[str, str],
                      span_of: str | None) -> str | None:
        """Why an annotator's claimed answer is not acceptable for the task (None: it is)."""

    def output_problem(self, output: Any, labels: Sequence[str]) -> str | None:
        """Why a model's output is not an answer of this kind (None: it is); probabilities checked too."""
        if not isinstance(output, Mapping) or not isinstance(output.get(self.output_key), str):
            return f"without a '{self.output_key}' string"
        probs = output.get("probs", {})
        if not isinstance(probs, Mapping) or not all(
                isinstance(p, int | float) and not isinstance(p, bool) and math.isfinite(p) for p in probs.values()):
            return f"with malformed probabilities {str(probs)[:80]}"
        return None

    def answer(self, output: Mapping[str, Any]) -> str:
        """The answer string of a checked model output."""
        return str(output[self.output_key])

    def fooled(self, rule: str, threshold: float | None, output: Mapping[str, Any], golds: Sequence[Any]) -> bool:
        """Whether ``output`` fools the model under the task's ``rule`` against every acceptable gold."""
        return FOOLED_RULES[rule](self.answer(output), [str(g) for g in golds], threshold)


class LabelKind(OutputKind):
    name = "label"
    gold_field = "label"
    output_key = "label"
    metrics = ("accuracy", "macro_f1")
    fooled_rules = ("label_mismatch",)
    chooses_labels = True

    def as_gold(self, answer: Any) -> Any:
        return answer

    def check_gold(self, gold: Any, labels: Sequence[str], multi_gold: bool, inputs: Mapping[str, str],
                   span_of: str | None, unanswerable_allowed: bool = False) -> Any:
        if isinstance(gold, list) and multi_gold:
            if not gold or not all(isinstance(g, str) for g in gold):
                raise ValueError("field 'label' must be a non-empty list of labels")
            bad = [g for g in gold if g not in labels]
            if bad:
                raise ValueError(f"label(s) {bad} not among the task's labels {list(labels)}")
            return gold if len(gold) > 1 else gold[0]
        if isinstance(gold, str):
            if gold not in labels:
                raise ValueError(f"label '{gold}' is not one of {', '.join(labels)}")
            return gold
        raise ValueError(f"field 'label' must be one of {', '.join(labels)}")

    def claim_problem(self, answer: Any, labels: Sequence[str], inputs: Mapping[str, str],
                      span_of: str | None) -> str | None:
        if answer not in labels:
            return f"{answer!r} is not one of the task's labels: {', '.join(labels)}"
        return None

    def output_problem(self, output: Any, labels: Sequence[str]) -> str | None:
        problem = super().output_problem(output, labels)
        if problem is None and output["label"] not in labels:
            return f"predicting '{output['label']}', not a label of the task"
        return problem


class SpanKind(OutputKind):
    name = "span"
    gold_field = "answers"
    output_key = "answer"
    metrics = ("squad_f1", "exact_match")
    fooled_rules = ("answer_f1_below",)

    def as_gold(self, answer: Any) -> Any:
        return [answer]

    def row_gold(self, row: dict[str, Any]) -> None:
        if "answer" in row and "answers" not in row:  # Dynabench QA: one string, or a list of acceptable ones
            value = row.pop("answer")
            row["answers"] = list(value) if isinstance(value, list) else [value]

    def check_gold(self, gold: Any, labels: Sequence[str], multi_gold: bool, inputs: Mapping[str, str],
                   span_of: str | None, unanswerable_allowed: bool = False) -> Any:
        if unanswerable_allowed and gold == []:
            return gold  # an unanswerable question: its gold is the empty answer under the v2.0 rule
        if not isinstance(gold, list) or not gold or not all(isinstance(a, str) and a.strip() for a in gold):
            raise ValueError("field 'answers' must be a non-empty list of non-empty strings"
                             + (" (or [] for an unanswerable SQuAD 2.0 question)" if unanswerable_allowed else ""))
        for a in gold:
            if a not in inputs.get(str(span_of), ""):
                raise ValueError(f"answer {a[:60]!r} is not a substring of the '{span_of}' field")
        return gold

    def claim_problem(self, answer: Any, labels: Sequence[str], inputs: Mapping[str, str],
                      span_of: str | None) -> str | None:
        if not isinstance(answer, str) or not answer.strip():
            return "answer must be a non-empty string"
        if answer not in inputs.get(str(span_of), ""):
            return f"answer {answer[:60]!r} is not a substring of the '{span_of}' input"
        return None


# Third-party task kinds: an OutputKind as a `dynadesk.task_kinds` entry point (evaluator/registry.py).
KINDS: Registry[OutputKind] = Registry(
    "task_kinds", "task output kind", OutputKind,
    check=lambda name, kind: None if kind.name == name else f"is registered as '{name}' but names itself '{kind.name}'")
for _kind in (LabelKind(), SpanKind()):
    KINDS.add(_kind.name, _kind)
"""The output kinds a task file may name (``output.kind``)."""


def kind_of(task: Any) -> OutputKind:
    """The kind object of a task (a :class:`~dynadesk.tasks.Task` or its dict form, as the spec carries it)."""
    name = task.get("output_kind") if isinstance(task, Mapping) else getattr(task, "output_kind", None)
    try:
        return KINDS[str(name)]
    except KeyError:
        raise ValueError(f"unknown task output kind {name!r} (known: {', '.join(KINDS)})") from None
