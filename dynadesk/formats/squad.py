"""SQuAD v1.1 and v2.0 JSON: ``data`` → articles → ``paragraphs`` → ``qas``.

Each question becomes one example: ``id``, ``context`` (its paragraph),
``question``, ``answers`` (the answer texts, in order, duplicates kept as
published), and ``metadata`` with the article ``title`` and the
``answer_start`` offsets. Rule for unanswerable questions (SQuAD 2.0
``is_impossible: true``, or an empty ``answers`` list): the qa task scores
answer spans, and such a question has none, so it is left out and counted
(its ``plausible_answers`` are not gold answers).
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from dynadesk.errors import ValidationError
from dynadesk.formats.base import Dropped, SourceRow
from dynadesk.jsonio import loads_bounded
from dynadesk.tasks import Task

UNANSWERABLE = "unanswerable questions (no gold answer)"
MAX_SQUAD_BYTES = 1 << 30


def load_squad(path: Path) -> dict[str, Any]:
    """The whole file as a SQuAD mapping, or a :class:`ValidationError` saying what is not SQuAD about it."""
    if path.stat().st_size > MAX_SQUAD_BYTES:
        raise ValidationError(f"{path}: over {MAX_SQUAD_BYTES} bytes; split it into smaller files")
    try:
        doc = loads_bounded(path.read_bytes().decode("utf-8"), str(path))
    except UnicodeDecodeError as exc:
        raise ValidationError(f"{path}: not valid UTF-8 (byte {exc.start})") from exc
    except json.JSONDecodeError as exc:
        raise ValidationError(f"{path}: line {exc.lineno}: not valid JSON ({exc.msg} at column {exc.colno})") \
            from exc
    if not isinstance(doc, dict) or not isinstance(doc.get("data"), list):
        raise ValidationError(f"{path}: a SQuAD file is a JSON object with a 'data' list of articles")
    return doc


def is_squad(path: Path) -> bool:
    try:
        load_squad(path)
    except ValidationError:
        return False
    return True


def read_squad_rows(path: Path, problems: list[str]) -> Iterator[SourceRow]:
    """One row per question, located as ``data[i].paragraphs[j].qas[k]``."""
    doc = load_squad(path)
    n = 0
    for i, article in enumerate(doc["data"]):
        where = f"data[{i}]"
        if not isinstance(article, dict) or not isinstance(article.get("paragraphs"), list):
            problems.append(f"{where}: expected an article object with a 'paragraphs' list")
            continue
        title = article.get("title")
        for j, para in enumerate(article["paragraphs"]):
            pwhere = f"{where}.paragraphs[{j}]"
            if not isinstance(para, dict) or not isinstance(para.get("qas"), list):
                problems.append(f"{pwhere}: expected a paragraph object with 'context' and a 'qas' list")
                continue
            for k, qa in enumerate(para["qas"]):
                n += 1
                row = dict(qa) if isinstance(qa, dict) else qa
                if isinstance(row, dict):
                    row.setdefault("context", para.get("context"))
                    if title is not None:
                        row.setdefault("title", title)
                yield SourceRow(f"{pwhere}.qas[{k}]", row, str(n))


def _answer_texts(answers: Any) -> tuple[list[Any], list[Any]]:
    if not isinstance(answers, list) or not all(isinstance(a, dict) for a in answers):
        raise ValueError("field 'answers' must be a list of {text, answer_start} objects")
    return [a.get("text") for a in answers], [a.get("answer_start") for a in answers]


def convert_squad(task: Task, row: dict[str, Any]) -> dict[str, Any] | Dropped:
    row = dict(row)
    impossible = row.pop("is_impossible", False)
    row.pop("plausible_answers", None)
    texts, starts = _answer_texts(row.pop("answers", []))
    if impossible is True or not texts:
        return Dropped(UNANSWERABLE)
    meta = dict(row.pop("metadata", {}) or {})
    if "title" in row:
        meta["title"] = row.pop("title")
    meta["answer_start"] = starts
    return {**row, "answers": texts, "metadata": meta}
