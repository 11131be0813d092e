"""Numbered annotation rounds per task: target models and optional context pools.

Opening a round closes the task's previous one for creation (its examples
can still be validated, exported and packed). Context ids are content hashes,
so two machines importing the same passages agree on every id.
"""

from __future__ import annotations

import hashlib
import json
from pathlib import Path
from typing import TYPE_CHECKING

from dynadesk.errors import AnnotationError, ValidationError
from dynadesk.store.annotation import Round, RoundModel
from dynadesk.tasks import Task, get_task

if TYPE_CHECKING:
    from dynadesk.store import Store

MAX_CONTEXT_CHARS = 20_000


def context_id(text: str) -> str:
    return "ctx-" + hashlib.sha256(text.encode("utf-8")).hexdigest()[:16]


def read_contexts(task: Task, path: str | Path) -> list[tuple[str, str]]:
    """Read a context pool: ``.txt`` (one per line) or ``.jsonl`` (objects with ``text``,
    ``context`` or the task's context field). Every bad line is reported; duplicates are dropped."""
    path = Path(path)
    if task.context_field is None:
        raise ValidationError(f"task '{task.name}' has no context field, so its rounds take no context pool")
    if not path.is_file():
        raise ValidationError(f"{path}: no such context file")
    try:
        lines = path.read_text(encoding="utf-8").splitlines()
    except UnicodeDecodeError as exc:
        raise ValidationError(f"{path}: not valid UTF-8 (byte {exc.start})") from exc
    is_jsonl = path.suffix.lower() in (".jsonl", ".json")
    problems: list[str] = []
    out: dict[str, str] = {}
    for lineno, line in enumerate(lines, 1):
        if not line.strip():
            continue
        text = line
        if is_jsonl:
            try:
                obj = json.loads(line)
            except json.JSONDecodeError as exc:
                problems.append(f"line {lineno}: not valid JSON ({exc.msg})")
                continue
            keys = [k for k in ("text", "context", task.context_field) if isinstance(obj, dict) and k in obj]
            if not keys:
                problems.append(f"line {lineno}: expected an object with a 'text' or '{task.context_field}' field")
                continue
            text = obj[keys[0]]
        if not isinstance(text, str) or not text.strip():
            problems.append(f"line {lineno}: the context must be a non-empty string")
            continue
        if len(text) > MAX_CONTEXT_CHARS:
            problems.append(f"line {lineno}: {len(text)} characters, over the {MAX_CONTEXT_CHARS} limit")
            continue
        out.setdefault(context_id(text), text)
    if problems:
        raise ValidationError(f"{path}: {len(problems)} bad line(s); no round was opened", problems)
    if not out:
        raise ValidationError(f"{path}: no contexts found")
    return list(out.items())


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
