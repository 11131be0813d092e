"""Hugging Face ``datasets``-style rows, as ``Dataset.to_json()`` (JSON lines) or ``to_parquet()`` write them.

QA rows carry ``answers: {"text": [...], "answer_start": [...]}``: the texts
become ``answers``, the offsets go under ``metadata``; an empty ``text`` list
(squad_v2's unanswerable questions) is left out and counted, as for SQuAD
JSON. NLI rows (snli, multi_nli, anli) carry ``premise``/``hypothesis`` and an
integer ``label`` in the datasets' ClassLabel order; ``-1`` (no gold label)
is left out and counted. Other columns are kept under ``metadata``
(parse-tree columns, ``*_parse``, are dropped).
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

from dynadesk.errors import ValidationError
from dynadesk.formats.base import Dropped, SourceRow
from dynadesk.formats.dynabench import split_extras
from dynadesk.formats.schema import apply_aliases
from dynadesk.formats.snli import parse_columns
from dynadesk.formats.squad import UNANSWERABLE, mark_squad_v2
from dynadesk.tasks import Task

NO_LABEL = "rows without a gold label (label -1)"


def convert_hf(task: Task, row: dict[str, Any], keep_unanswerable: bool = False) -> dict[str, Any] | Dropped:
    row = apply_aliases(task, row)
    answers = row.get("answers")
    starts: list[Any] | None = None
    if isinstance(answers, dict):
        texts = answers.get("text")
        if not isinstance(texts, list):
            raise ValueError("field 'answers' must hold a 'text' list")
        if not texts and not keep_unanswerable:
            return Dropped(UNANSWERABLE)
        starts = list(answers.get("answer_start") or [])
        row["answers"] = list(texts)
    if row.get("label") == -1:
        return Dropped(NO_LABEL)
    out = split_extras(task, row, drop=parse_columns(row))
    if starts is not None:
        out["metadata"] = {**out.get("metadata", {}), "answer_start": starts}
        if keep_unanswerable:
            mark_squad_v2(out["metadata"], not out.get("answers"))
    return out


def convert_hf_v2(task: Task, row: dict[str, Any]) -> dict[str, Any] | Dropped:
    return convert_hf(task, row, keep_unanswerable=True)


def read_parquet_rows(path: Path, problems: list[str]) -> Iterator[SourceRow]:
    """Rows of a Parquet file; needs ``pyarrow`` (the `parquet` extra: `pip install dynadesk[parquet]`)."""
    try:
        import pyarrow.parquet as pq  # type: ignore[import-not-found,unused-ignore]
    except ImportError as exc:
        raise ValidationError(
            f"{path}: reading Parquet needs pyarrow, which is not installed here: run "
            "`pip install pyarrow` in DynaDesk's environment, or write the split as JSON lines "
            "(datasets: `ds.to_json('split.jsonl')`) and import that") from exc
    try:
        rows = pq.read_table(path).to_pylist()
    except (OSError, ValueError) as exc:  # pyarrow's ArrowInvalid is a ValueError
        raise ValidationError(f"{path}: not a readable Parquet file: {exc}") from exc
    for i, row in enumerate(rows, 1):
        yield SourceRow(f"row {i}", row, str(i))
