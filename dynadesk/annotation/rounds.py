"""Numbered annotation rounds per task: target models and optional context pools.

Opening a round closes the task's previous one for creation (its examples
can still be validated, exported and packed). Context pools are read by
:mod:`dynadesk.formats.contexts` (ids the file gives are kept).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from dynadesk.store import Store

from pathlib import Path

from dynadesk.errors import AnnotationError, ValidationError
from dynadesk.formats.contexts import MAX_CONTEXT_CHARS, context_id, read_contexts  # noqa: F401 - re-exported
from dynadesk.store.annotation import Round, RoundModel
from dynadesk.tasks import get_task


def new_round(store: Store, task_name: str, models: list[str], contexts_file: str | Path | None = None,
              created_by: str | None = None) -> Round:
    """Open the next round of ``task_name`` against registered ``models`` of that task."""
    task = get_task(task_name)
    if not models:
        raise ValidationError("a round needs at least one target model (--model NAME)")
    if len(set(models)) != len(models):
        raise ValidationError(f"target models listed twice: {', '.join(models)}")
    targets = []
    for name in models:
        rec = store.models.get(name)
        if rec.task != task.name:
            raise ValidationError(f"model '{name}' is a '{rec.task}' model, not a '{task.name}' one")
        targets.append(RoundModel(rec.name, rec.digest))
    contexts = read_contexts(task, contexts_file) if contexts_file else []
    if created_by is not None:
        store.annotation.get_annotator(created_by)
    return store.annotation.open_round(task.name, targets, contexts, created_by)


def list_rounds(store: Store, task: str | None = None) -> list[Round]:
    if task is not None:
        get_task(task)
    return store.annotation.list_rounds(task)


def get_round(store: Store, task: str, number: int | None = None) -> Round:
    get_task(task)
    return store.annotation.get_round(task, number)


def open_round(store: Store, task: str) -> Round:
    """The round currently open for creation; an error naming the fix when there is none."""
    rnd = get_round(store, task)
    if not rnd.is_open:
        raise AnnotationError(f"round {rnd.number} of '{task}' is closed; open a new one with 'dynadesk rounds new'")
    return rnd
