"""Context pools for annotation rounds: ``.txt`` (one passage per line) or JSON lines.

A JSONL object gives its passage as ``text``, ``context`` or the task's
context field, and may give an ``id``: that id is kept (so a lab's passage ids
survive into annotated examples), and an id given twice is refused. Without an
id, the id is a content hash, so two machines importing the same passages
agree on every id; a passage repeated without an id is kept once.
"""

from __future__ import annotations

import hashlib
import json
from pathlib import Path
from typing import Any

from dynadesk.errors import JSONDepthError, ValidationError
from dynadesk.jsonio import MAX_DEPTH, loads_bounded
from dynadesk.tasks import Task

MAX_CONTEXT_CHARS = 20_000


def context_id(text: str) -> str:
    return "ctx-" + hashlib.sha256(text.encode("utf-8")).hexdigest()[:16]


def _given_id(obj: dict[str, Any]) -> str | None:
    """The object's own id, or None; a malformed one raises ``ValueError``."""
    if "id" not in obj:
        return None
    value = obj["id"]
    if isinstance(value, bool) or not isinstance(value, (str, int)):
        raise ValueError("field 'id' must be a string or an integer")
    cid = str(value)
    if not cid or len(cid) > 200 or any(c in cid for c in "/\\\x00"):
        raise ValueError(f"field 'id' {cid[:40]!r} must be 1-200 characters without '/', '\\' or NUL")
    return cid


def _jsonl_context(task: Task, line: str) -> tuple[str | None, Any]:
    try:
        obj = loads_bounded(line, "the line")
    except json.JSONDecodeError as exc:
        raise ValueError(f"not valid JSON ({exc.msg})") from exc
    except JSONDepthError as exc:
        raise ValueError(f"JSON nested deeper than {MAX_DEPTH} levels; refused") from exc
    keys = [k for k in ("text", "context", task.context_field) if isinstance(obj, dict) and k in obj]
    if not keys:
        raise ValueError(f"expected an object with a 'text' or '{task.context_field}' field")
    return _given_id(obj), obj[keys[0]]


def read_contexts(task: Task, path: str | Path) -> list[tuple[str, str]]:
    """``[(context_id, text)]`` in file order; every bad line is reported and nothing is returned then."""
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
    given_at: dict[str, int] = {}
    for lineno, line in enumerate(lines, 1):
        if not line.strip():
            continue
        try:
            cid, text = _jsonl_context(task, line) if is_jsonl else (None, line)
        except ValueError as exc:
            problems.append(f"line {lineno}: {exc}")
            continue
        if not isinstance(text, str) or not text.strip():
            problems.append(f"line {lineno}: the context must be a non-empty string")
            continue
        if len(text) > MAX_CONTEXT_CHARS:
            problems.append(f"line {lineno}: {len(text)} characters, over the {MAX_CONTEXT_CHARS} limit")
            continue
        if cid is None:
            out.setdefault(context_id(text), text)
            continue
        if cid in out:
            first = f"line {given_at[cid]}" if cid in given_at else "a passage without an id"
            problems.append(f"line {lineno}: duplicate context id '{cid}' (first: {first})")
            continue
        given_at[cid] = lineno
        out[cid] = text
    if problems:
        raise ValidationError(f"{path}: {len(problems)} bad line(s); no round was opened", problems)
    if not out:
        raise ValidationError(f"{path}: no contexts found")
    return list(out.items())
