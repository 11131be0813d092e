"""Validation: other annotators judge examples; votes decide "verified" status.

Rules: nobody validates their own example or one example twice. An
example is *verified correct* at ``votes_needed`` ``correct`` votes and
*verified not correct* at ``votes_needed`` ``incorrect`` votes or
``votes_needed`` ``flagged`` votes (N of one kind, never a pool of the two:
Dynabench's ``validations`` controller counts each label on its own against
``num_matching_validations``), whichever is reached first in time; a single
owner vote decides at once. *Verified fooled* = fooled the model and
verified correct.
"""

from __future__ import annotations

import hashlib
import uuid
from collections.abc import Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Protocol, TypeVar

from dynadesk.annotation.annotators import resolve_annotator
from dynadesk.annotation.create import check_target
from dynadesk.annotation.integrity import workspace_id
from dynadesk.errors import AnnotationError, ValidationError
from dynadesk.store import annotation_meta
from dynadesk.store.annotation import VERDICTS, AnnotatedExample, Validation
from dynadesk.store.datasets import now_iso
from dynadesk.task_extras import check_metadata
from dynadesk.tasks import get_task

if TYPE_CHECKING:
    from dynadesk.store import Store

UNVERIFIED = "unverified"
VERIFIED_CORRECT = "verified-correct"
VERIFIED_NOT_CORRECT = "verified-not-correct"
MAX_REASON_CHARS = 2_000


class Judged(Protocol):
    """What deciding an example's status reads: an :class:`AnnotatedExample` or the lighter
    :class:`~dynadesk.store.annotation_records.ExampleFacts` a round's statistics load."""

    @property
    def uid(self) -> str: ...
    @property
    def fooled(self) -> bool: ...
    @property
    def validations(self) -> list[Validation]: ...


@dataclass
class ExampleStatus:
    status: str
    verified_fooled: bool
    correct: int
    incorrect: int
    flagged: int
    decided_by: str | None = None  # "votes" or the owner's name

    @property
    def decided(self) -> bool:
        return self.status != UNVERIFIED

    def to_dict(self) -> dict[str, Any]:
        return {**self.__dict__, "decided": self.decided}


def example_status(ex: Judged, votes_needed: int) -> ExampleStatus:
    """Replay ``ex.validations`` in time order until a rule decides the example. Votes cast in the same millisecond
    keep the order they are given in (the store's insertion order; a stable sort), never that of their random
    uids: a later vote must not count before the one that decided."""
    if not ex.validations:  # most of a busy round: nothing to replay (the hub's statistics ask for every example)
        return ExampleStatus(UNVERIFIED, False, 0, 0, 0, None)
    counts = {v: 0 for v in VERDICTS}
    status, decided_by = UNVERIFIED, None
    for v in sorted(ex.validations, key=lambda v: v.created_at):
        counts[v.verdict] += 1
        if status != UNVERIFIED:
            continue
        if v.role == "owner":
            status = VERIFIED_CORRECT if v.verdict == "correct" else VERIFIED_NOT_CORRECT
            decided_by = v.annotator
        elif counts["correct"] >= votes_needed:
            status, decided_by = VERIFIED_CORRECT, "votes"
        elif counts["incorrect"] >= votes_needed or counts["flagged"] >= votes_needed:
            status, decided_by = VERIFIED_NOT_CORRECT, "votes"
    return ExampleStatus(status, ex.fooled and status == VERIFIED_CORRECT, counts["correct"], counts["incorrect"],
                         counts["flagged"], decided_by)


J = TypeVar("J", bound=Judged)


def _order_key(seed: int, ex: Judged) -> tuple[Any, ...]:
    shuffle = hashlib.sha256(f"{seed}:{ex.uid}".encode()).hexdigest()
    return (not ex.fooled, len(ex.validations), shuffle)


def _first_in_order(todo: list[J], seed: int, limit: int | None) -> list[J]:
    """The first ``limit`` of ``todo`` in :func:`_order_key`'s order (all of them for None). Its seeded shuffle (a
    SHA-256 each) is computed only for the examples that tie with the ``limit``-th on (fooled, votes): the hub asks
    for the head of the queue, and hashing every undecided example of a round was a tenth of that."""
    todo.sort(key=lambda ex: (not ex.fooled, len(ex.validations)))
    if limit is not None and len(todo) > limit:
        last = (not todo[limit - 1].fooled, len(todo[limit - 1].validations))
        end = limit
        while end < len(todo) and (not todo[end].fooled, len(todo[end].validations)) == last:
            end += 1
        todo = todo[:end]
    todo.sort(key=lambda ex: _order_key(seed, ex))
    return todo if limit is None else todo[:limit]


def validation_queue(store: Store, task_name: str, annotator: str | None = None, round_number: int | None = None,
                     seed: int = 0, limit: int | None = 20) -> list[AnnotatedExample]:
    """Undecided examples ``annotator`` may judge: fooled first, then fewest votes, then seeded shuffle.

    Ranked on the round's :meth:`~dynadesk.store.annotation.AnnotationRepo.example_facts`; only the examples
    returned are read whole (the hub asks for the head of the queue on every validator's turn, and reading every
    example of the round with its JSON was 16 % of its CPU under 30 users)."""
    task = get_task(task_name)
    ann = resolve_annotator(store, annotator)
    rnd = store.annotation.get_round(task.name, round_number)
    todo = [ex for ex in store.annotation.example_facts(task.name, rnd.number)
            if ex.annotator != ann.name and all(v.annotator != ann.name for v in ex.validations)
            and not example_status(ex, task.votes_needed).decided]
    chosen = _first_in_order(todo, seed, limit)
    if len(chosen) > WHOLE_ONE_BY_ONE:
        whole = {ex.uid: ex for ex in store.annotation.examples(task.name, rnd.number)}
        return [whole[ex.uid] for ex in chosen]
    return [store.annotation.get_example(ex.uid) for ex in chosen]


WHOLE_ONE_BY_ONE = 50  # more examples than this are read in one query of the round rather than one by one


def next_to_validate(store: Store, task_name: str, annotator: str | None = None, round_number: int | None = None,
                     seed: int = 0) -> AnnotatedExample | None:
    """The head of :func:`validation_queue`, or None when nothing is left for this annotator."""
    queue = validation_queue(store, task_name, annotator, round_number, seed, limit=1)
    return queue[0] if queue else None


def validate(store: Store, example_uid: str, annotator: str | None, verdict: str, label: Any = None,
             reason: str = "", metadata: Mapping[str, str] | None = None) -> tuple[Validation, ExampleStatus]:
    """Record one vote (committed on return) and give the example's status after it. ``metadata``: the values of
    the task file's ``metadata.validate`` fields asked with this verdict (stored with the vote)."""
    ann = resolve_annotator(store, annotator)
    ex = store.annotation.get_example(example_uid)
    task = get_task(ex.task)
    if ex.annotator == ann.name:
        raise AnnotationError(f"'{ann.name}' wrote example '{ex.uid}' and cannot validate it")
    if any(v.annotator == ann.name for v in ex.validations):
        raise AnnotationError(f"'{ann.name}' has already validated example '{ex.uid}'")
    if verdict not in VERDICTS:
        raise ValidationError(f"verdict '{verdict}' is not one of {', '.join(VERDICTS)}")
    reason = (reason or "").strip()
    if len(reason) > MAX_REASON_CHARS:
        raise ValidationError(f"reason has {len(reason)} characters, over the {MAX_REASON_CHARS} limit")
    if verdict == "incorrect":
        if label is None:
            raise ValidationError("an 'incorrect' verdict needs the corrected label (--label)")
        label = check_target(task, label, ex.inputs, what="corrected label")
        if label == ex.target:
            raise ValidationError(f"the corrected label {label!r} equals the example's own target;"
                                  " use the verdict 'correct'")
    elif label is not None:
        raise ValidationError(f"only an 'incorrect' verdict takes a corrected label, not '{verdict}'")
    meta = check_metadata(task.validate_metadata, metadata, f"validation of example '{ex.uid}'", verdict)
    if verdict == "flagged" and not reason:
        if not meta:
            raise ValidationError("a 'flagged' verdict needs a reason (--reason)")
        reason = "; ".join(f"{k}: {v}" for k, v in meta.items())  # the task's declared flag fields say why
    v = Validation(uid=uuid.uuid4().hex, example_uid=ex.uid, annotator=ann.name, verdict=verdict, label=label,
                   reason=reason, origin=workspace_id(store), created_at=now_iso(), role=ann.role)
    with store.atomic() as db:
        store.annotation.insert_validation(v)
        annotation_meta.put(db, v.uid, "validation", meta)
    ex.validations.append(v)
    return v, example_status(ex, task.votes_needed)


def list_examples(store: Store, task_name: str, round_number: int | None = None,
                  annotator: str | None = None) -> list[tuple[AnnotatedExample, ExampleStatus]]:
    """Examples (all rounds, or one) in creation order, each with its current status."""
    task = get_task(task_name)
    if round_number is not None:
        store.annotation.get_round(task.name, round_number)
    return [(ex, example_status(ex, task.votes_needed))
            for ex in store.annotation.examples(task.name, round_number, annotator)]
