"""Creating examples: the target model answers live and the verdict is recorded.

``submit_example`` checks everything it is given before calling the model and
stores nothing unless the whole example is valid; once it returns, the
example (with its HMAC) is committed.
"""

from __future__ import annotations

import json
import random
import uuid
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from dynadesk.annotation.annotators import resolve_annotator
from dynadesk.annotation.integrity import compute_hmac, workspace_id, workspace_secret
from dynadesk.annotation.rounds import open_round
from dynadesk.errors import AnnotationError, ModelError, ValidationError
from dynadesk.store import annotation_meta
from dynadesk.store.annotation import AnnotatedExample
from dynadesk.store.datasets import now_iso
from dynadesk.task_extras import check_metadata
from dynadesk.tasks import Task, get_task

if TYPE_CHECKING:
    from dynadesk.store import Store

MAX_INPUT_CHARS = 20_000
MAX_EXPLANATION_CHARS = 2_000

Predict = Callable[[Any, str, dict[str, Any]], dict[str, Any]]


@dataclass(frozen=True)
class Context:
    id: str
    text: str
    field: str  # the task input it fills (``context``)

    def to_dict(self) -> dict[str, str]:
        return dict(self.__dict__)


def next_context(store: Store, task_name: str, annotator: str | None = None, seed: int | None = None) -> Context | None:
    """A random context of the open round that ``annotator`` has not used yet.

    None when the round has no context pool (the annotator writes every field);
    an :class:`AnnotationError` when they have used every context of the pool."""
    task = get_task(task_name)
    ann = resolve_annotator(store, annotator)
    rnd = open_round(store, task.name)
    pool = store.annotation.contexts(rnd.id)
    if not pool or task.context_field is None:
        return None
    used = store.annotation.used_context_ids(rnd.id, ann.name)
    fresh = [(cid, text) for cid, text in pool if cid not in used]
    if not fresh:
        raise AnnotationError(f"annotator '{ann.name}' has used all {len(pool)} contexts of round {rnd.number}"
                              f" of '{task.name}'")
    cid, text = random.Random(seed).choice(fresh)
    return Context(cid, text, task.context_field)


def is_fooled(task: Task, target: Any, output: dict[str, Any]) -> bool:
    """The task's fooled rule against the annotator's claimed answer (see :meth:`Task.is_fooled`)."""
    return task.is_fooled(output, task.kind.golds(target))


def check_inputs(task: Task, inputs: Any, pool_text: str | None) -> dict[str, str]:
    """Exactly the task's inputs as non-empty text (the pool context filled in when given)."""
    if not isinstance(inputs, dict):
        raise ValidationError(f"inputs must be a mapping of {', '.join(task.input_names)}")
    inputs = dict(inputs)
    if pool_text is not None:
        given = inputs.get(task.context_field)
        if given is not None and given != pool_text:
            raise ValidationError(f"input '{task.context_field}' differs from the chosen pool context;"
                                  " leave it out and pass the context id")
        inputs[task.context_field] = pool_text
    problems = [f"unknown input '{k}' (task '{task.name}' takes {', '.join(task.input_names)})"
                for k in inputs if k not in task.input_names]
    for name in task.input_names:
        value = inputs.get(name)
        if not isinstance(value, str) or not value.strip():
            problems.append(f"input '{name}' must be a non-empty string")
        elif len(value) > MAX_INPUT_CHARS:
            problems.append(f"input '{name}' has {len(value)} characters, over the {MAX_INPUT_CHARS} limit")
    if problems:
        raise ValidationError("the example was not stored", problems)
    return {name: inputs[name] for name in task.input_names}


def check_target(task: Task, target: Any, inputs: dict[str, str], what: str = "target") -> Any:
    """A label of the task, or (QA) a non-empty answer that is a substring of the context."""
    problem = task.kind.claim_problem(target, task.labels, inputs, task.span_of)
    if problem is not None:
        raise ValidationError(f"{what} {problem}")
    return target


def check_output(task: Task, model: str, output: Any) -> dict[str, Any]:
    try:
        output = json.loads(json.dumps(output, allow_nan=False))
    except (TypeError, ValueError) as exc:
        raise ModelError(f"model '{model}' returned a response that is not plain JSON: {exc}") from exc
    problem = task.kind.output_problem(output, task.labels)
    if problem is not None:
        raise ModelError(f"model '{model}' returned {str(output)[:80]!r} for task '{task.name}', {problem}")
    return dict(output)


def choose_target(store: Store, rnd: Any, annotator: str) -> str:
    """The model that answers the annotator's next example: with several targets, one at random, seeded by
    (task, round, annotator, how many examples the annotator wrote in the round), so a rerun replays it."""
    if len(rnd.models) == 1:
        return str(rnd.models[0].name)
    n = len(store.annotation.examples(rnd.task, rnd.number, annotator))
    return str(random.Random(f"{rnd.task}:{rnd.number}:{annotator}:{n}").choice(rnd.models).name)


@dataclass(frozen=True)
class ExampleDetails:
    """What an annotator gives beside an example's inputs and target: the pool context it was written against,
    the explanation, the time it took (milliseconds) and the values of the task file's ``metadata.create`` fields.
    One value, so the CLI, the GUI and the hub hand :func:`submit_example` what was written as one thing; each
    field is still checked there (a JSON line or a form may put anything in it)."""

    context_id: str | None = None
    explanation: str = ""
    time_ms: int = 0
    metadata: Mapping[str, str] | None = None


def submit_example(store: Store, task_name: str, annotator: str | None, inputs: dict[str, str], target: Any,
                   details: ExampleDetails | None = None, *, model: str | None = None,
                   predict: Predict | None = None) -> AnnotatedExample:
    """Ask the round's target model, decide whether it was fooled, and store the signed example.

    ``details``: none when not given. ``predict`` defaults to :func:`dynadesk.models.predict_live`, which keeps
    the model warm. ``details.metadata``: the values of the task file's ``metadata.create`` fields (checked before
    the model is asked; stored with the example in one transaction)."""
    details = details or ExampleDetails()
    context_id, explanation, time_ms, metadata = (details.context_id, details.explanation, details.time_ms,
                                                  details.metadata)
    task = get_task(task_name)
    ann = resolve_annotator(store, annotator)
    rnd = open_round(store, task.name)
    targets = {m.name: m.digest for m in rnd.models}
    model = model or choose_target(store, rnd, ann.name)
    if model not in targets:
        raise AnnotationError(f"model '{model}' is not a target of round {rnd.number} of '{task.name}'"
                              f" (targets: {', '.join(targets)})")
    digest = store.models.get(model).digest
    if digest != targets[model]:
        raise AnnotationError(f"model '{model}' changed since round {rnd.number} opened ({targets[model][:19]} ->"
                              f" {digest[:19]}); open a new round to target the new version")
    pool_text = None
    if context_id is not None:
        pool_text = store.annotation.get_context(rnd.id, context_id)
        if pool_text is None:
            raise ValidationError(f"context '{context_id}' is not in the pool of round {rnd.number} of '{task.name}'")
    elif rnd.n_contexts and task.context_field:
        raise ValidationError(f"round {rnd.number} of '{task.name}' has a context pool: pass a context id"
                              " (see next_context / 'dynadesk annotate context')")
    clean = check_inputs(task, inputs, pool_text)
    target = check_target(task, target, clean)
    if not isinstance(explanation, str) or len(explanation) > MAX_EXPLANATION_CHARS:
        raise ValidationError(f"explanation must be text of at most {MAX_EXPLANATION_CHARS} characters")
    if isinstance(time_ms, bool) or not isinstance(time_ms, int) or time_ms < 0:
        raise ValidationError(f"time spent must be a whole number of milliseconds >= 0, got {time_ms!r}")
    meta = check_metadata(task.create_metadata, metadata, f"example for task '{task.name}'")
    if predict is None:
        from dynadesk.models import predict_live

        predict = predict_live
    output = check_output(task, model, predict(store, model, dict(clean)))
    ex = AnnotatedExample(
        uid=uuid.uuid4().hex, task=task.name, round=rnd.number, annotator=ann.name, inputs=clean, target=target,
        model_name=model, model_digest=digest, model_output=output, fooled=is_fooled(task, target, output),
        explanation=explanation.strip(), time_ms=time_ms, hmac="", origin=workspace_id(store),
        created_at=now_iso(), context_id=context_id)
    ex.hmac = compute_hmac(workspace_secret(store), ex)
    with store.atomic() as db:
        store.annotation.insert_example(ex, rnd.id)
        annotation_meta.put(db, ex.uid, "example", meta)
    stored: AnnotatedExample = store.annotation.get_example(ex.uid)
    return stored
