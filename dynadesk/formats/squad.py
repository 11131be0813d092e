"""SQuAD v1.1 and v2.0 JSON: ``data`` → articles → ``paragraphs`` → ``qas``.

Each question becomes one example: ``id``, ``context`` (its paragraph),
``question``, ``answers`` (the answer texts, in order, duplicates kept as
published), and ``metadata`` with the article ``title`` and the
``answer_start`` offsets. Rule for unanswerable questions (SQuAD 2.0
``is_impossible: true``, or an empty ``answers`` list): the qa task scores
answer spans, and such a question has none, so it is left out and counted
(its ``plausible_answers`` are not gold answers); the dataset is then
answerable-only, and the import says so. With ``--squad-v2`` (a per-dataset
setting) every question is kept as SQuAD 2.0 publishes it: an unanswerable one
with ``answers: []``, and every example marked ``metadata.squad_v2`` so that
it is scored with the official v2.0 rule (see ``evaluator.metrics``).
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from dynadesk.errors import ValidationError
from dynadesk.evaluator.metrics import SQUAD_V2_KEY
from dynadesk.formats.base import Dropped, SourceRow
from dynadesk.formats.schema import pair_inputs, to_task_inputs
from dynadesk.formats.source import read_source_bytes
from dynadesk.jsonio import loads_bounded
from dynadesk.tasks import Task

UNANSWERABLE = ("unanswerable questions (no gold answer): the dataset is answerable-only, not SQuAD 2.0 as "
                "published; --squad-v2 keeps them and scores with the v2.0 rule")
MAX_SQUAD_BYTES = 1 << 30


def load_squad(path: Path) -> dict[str, Any]:
    """The whole file as a SQuAD mapping, or a :class:`ValidationError` saying what is not SQuAD about it."""
    if path.stat().st_size > MAX_SQUAD_BYTES:
        raise ValidationError(f"{path}: over {MAX_SQUAD_BYTES} bytes; split it into smaller files")
    try:
        doc = loads_bounded(read_source_bytes(path).decode("utf-8"), str(path))
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


def convert_squad(task: Task, row: dict[str, Any], keep_unanswerable: bool = False) -> dict[str, Any] | Dropped:
    row = dict(row)
    impossible = row.pop("is_impossible", False)
    plausible = row.pop("plausible_answers", None)
    texts, starts = _answer_texts(row.pop("answers", []))
    if impossible is True and keep_unanswerable:
        texts, starts = [], []  # the v2.0 script scores an impossible question against the empty answer
    elif impossible is True or not texts:
        if not keep_unanswerable:
            return Dropped(UNANSWERABLE)
    meta = dict(row.pop("metadata", {}) or {})
    if "title" in row:
        meta["title"] = row.pop("title")
    meta["answer_start"] = starts
    if keep_unanswerable:
        mark_squad_v2(meta, impossible is True or not texts, plausible)
    if "uid" in row and "id" not in row:
        row["id"] = row.pop("uid")  # Dynabench's own QA rows
    return to_task_inputs(task, {**row, "answers": texts, "metadata": meta}, ("context", "question"))


def fits_squad(task: Task) -> bool:
    """An own span task of two inputs, the span's source one of them (as qa: a passage and a question)."""
    return not task.kind.chooses_labels and task.span_of is not None and pair_inputs(task) is not None


def mark_squad_v2(meta: dict[str, Any], unanswerable: bool, plausible: Any = None) -> None:
    """Mark an example as scored by the SQuAD v2.0 rule (and keep its plausible answers, not gold)."""
    meta[SQUAD_V2_KEY] = True
    if unanswerable:
        meta["is_impossible"] = True
        if plausible:
            meta["plausible_answers"] = plausible


def convert_squad_v2(task: Task, row: dict[str, Any]) -> dict[str, Any] | Dropped:
    return convert_squad(task, row, keep_unanswerable=True)
