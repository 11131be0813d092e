"""The generative annotation assistant (Bartolo et al., 2022, "Models in the loop: aiding crowdworkers with
generative annotation assistants"): opt-in, a generative target of the open round drafts the example's free-text
field, the annotator edits it and submits; the use is recorded per example and counted in the round statistics.

What is drafted: the task's last input that is not the passage (``statement`` for sentiment, ``hypothesis`` for
NLI, ``question`` for QA), given the other inputs the annotator has (the premise, the pool's passage) and, for a
label task, the label the annotator wants the example to have. The model writes greedily (its manifest's
generation settings), so the same model, inputs and label give the same draft. Which draft an example was written
from is the one the hub proposed to that session (kept on the server), never what the client claims; how much of
it was kept is the similarity of the draft and the submitted text (difflib's ratio; 1.0: submitted unedited).
"""

from __future__ import annotations

import difflib
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from dynadesk.errors import AnnotationError, ModelError, ValidationError
from dynadesk.models.registry import GENERATIVE_KINDS
from dynadesk.store.annotation import AnnotatedExample
from dynadesk.store.assists import Assist
from dynadesk.tasks import Task, get_task

if TYPE_CHECKING:
    from collections.abc import Sequence

    from dynadesk.annotation.validate import Judged
    from dynadesk.models.live import LivePredictor
    from dynadesk.store import Store


@dataclass(frozen=True)
class Draft:
    """One proposal: the model, the field it wrote and the text, from the given inputs and label."""

    task: str
    model: str
    field: str
    text: str
    given: dict[str, str]
    label: str | None

    def to_dict(self) -> dict[str, Any]:
        return {"task": self.task, "model": self.model, "field": self.field, "text": self.text,
                "given": dict(self.given), "label": self.label}


def drafted_field(task: Task) -> str:
    """The free-text input the assistant writes: the last one that is not the passage."""
    passage = task.span_of if not task.kind.chooses_labels else None
    fields = [f for f in task.input_names if f != passage]
    return fields[-1] if fields else task.input_names[-1]


def assistant_models(store: Store, task_name: str) -> list[str]:
    """The open round's generative targets (the ones that can draft), in the round's order."""
    from dynadesk import annotation as ann

    rnd = ann.open_round(store, get_task(task_name).name)
    out = []
    for m in rnd.models:
        if store.models.exists(m.name) and store.models.get(m.name).kind in GENERATIVE_KINDS:
            out.append(m.name)
    return out


def assistant_prompt(task: Task, field: str, given: dict[str, str], label: str | None) -> str:
    """The instruction the model continues: the task, what the annotator has, and what to write."""
    lines = [f"Task: {task.title}."]
    lines += [f"{name}: {given[name]}" for name in task.input_names if name in given and name != field]
    if label is not None:
        lines.append(f"Write a {field} whose correct label is \"{label}\".")
    else:
        lines.append(f"Write a {field} answered by a span of the {task.span_of}.")
    lines.append(f"{field}:")
    return "\n".join(lines)


def propose(store: Store, task_name: str, *, given: dict[str, Any] | None = None, label: str | None = None,
            model: str | None = None, predictor: LivePredictor | None = None) -> Draft:
    """A draft from a generative target of the open round (``model``: which one; default the first)."""
    from dynadesk.models.live import default_predictor

    task = get_task(task_name)
    choices = assistant_models(store, task.name)
    if not choices:
        raise AnnotationError(f"the open round of '{task.name}' has no generative target (hf-causal-lm or "
                              "hf-seq2seq-lm), so no assistant can draft; open a round with one")
    if model is not None and model not in choices:
        raise ValidationError(f"model '{model}' is not a generative target of the open round of '{task.name}' "
                              f"({', '.join(choices)})")
    field = drafted_field(task)
    given = {k: v for k, v in (given or {}).items() if k in task.input_names and k != field}
    bad = [k for k, v in given.items() if not isinstance(v, str)]
    if bad:
        raise ValidationError(f"given input(s) {', '.join(bad)} must be text")
    if task.kind.chooses_labels:
        if label not in task.labels:
            raise ValidationError(f"the assistant needs the label the example should have: one of "
                                  f"{', '.join(task.labels)}")
    else:
        label = None
        if not given.get(str(task.span_of), "").strip():
            raise ValidationError(f"the assistant needs the {task.span_of} to write a {field} about")
    name = model or choices[0]
    record = store.models.get(name)
    text = (predictor or default_predictor()).draft(record, assistant_prompt(task, field, given, label))
    return Draft(task.name, name, field, text.strip(), given, label)


def similarity(draft: str, submitted: str) -> float:
    """How much of the draft the submitted text kept: 1.0 unedited, toward 0 rewritten."""
    if draft == submitted:
        return 1.0
    return round(difflib.SequenceMatcher(None, draft, submitted, autojunk=False).ratio(), 4)


def record_use(store: Store, example: AnnotatedExample, draft: Draft) -> Assist:
    """Record that ``example`` was written from ``draft`` (the one proposed to its writer)."""
    if draft.task != example.task:
        raise ModelError(f"a draft for '{draft.task}' cannot be recorded on an example of '{example.task}'")
    submitted = str(example.inputs.get(draft.field, ""))
    return store.assists.record(example.uid, draft.model, draft.field, draft.text,
                                similarity(draft.text, submitted))


def assistant_stats(store: Store, examples: Sequence[Judged]) -> dict[str, Any]:
    """The assistant's share of a round: examples written from a draft, edited or not, and the model error
    rate with and without it (Bartolo et al. compare exactly these)."""
    used = store.assists.of([ex.uid for ex in examples])
    assisted = [ex for ex in examples if ex.uid in used]
    plain = [ex for ex in examples if ex.uid not in used]

    def rate(group: list[Judged]) -> float | None:
        return sum(ex.fooled for ex in group) / len(group) if group else None

    kept = [used[ex.uid].similarity for ex in assisted]
    return {"assisted": len(assisted), "edited": sum(s < 1.0 for s in kept), "unassisted": len(plain),
            "fooled_assisted": sum(ex.fooled for ex in assisted), "mer_assisted": rate(assisted),
            "mer_unassisted": rate(plain), "mean_similarity": sum(kept) / len(kept) if kept else None}
