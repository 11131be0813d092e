"""SNLI and MultiNLI, as published: JSON lines and tab-separated files.

Fields: ``pairID`` (the id), ``sentence1`` (context), ``sentence2``
(hypothesis), ``gold_label`` (entailment / neutral / contradiction, or '-'
when the five annotators reached no consensus). Rows with '-' have no gold
label: they are left out and counted. The parse-tree columns
(``*_parse``) are dropped, being derived text; the annotators' labels
(``annotator_labels``, or the TSV's ``label1`` … ``label5``), ``captionID``,
``promptID`` and ``genre`` are kept under ``metadata``.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from dynadesk.formats.base import Dropped, SourceRow
from dynadesk.formats.delimited import iter_table
from dynadesk.formats.dynabench import split_extras
from dynadesk.formats.schema import pair_inputs, to_task_inputs
from dynadesk.tasks import Task

NO_CONSENSUS = "no-consensus rows (gold_label '-')"
_LABEL_COLUMN = re.compile(r"^label[1-5]$")
_SNLI_NAMES = {"id": "pairID", "context": "sentence1", "hypothesis": "sentence2", "label": "gold_label"}


def parse_columns(row: dict[str, Any]) -> tuple[str, ...]:
    return tuple(k for k in row if k.endswith("_parse"))


def convert_snli(task: Task, row: dict[str, Any]) -> dict[str, Any] | Dropped:
    row = dict(row)
    for name, source in _SNLI_NAMES.items():
        if name not in row and source in row:
            row[name] = row.pop(source)
    if row.get("label") == "-":
        return Dropped(NO_CONSENSUS)
    label_columns = sorted(k for k in row if _LABEL_COLUMN.match(k))
    if label_columns:
        votes = [row.pop(k) for k in label_columns]
        row.setdefault("annotator_labels", [v for v in votes if v])
    return split_extras(task, to_task_inputs(task, row, ("context", "hypothesis")), drop=parse_columns(row))


def fits_snli(task: Task) -> bool:
    """An own label task of two inputs (a premise and a hypothesis, by whatever names): its labels are checked
    row by row, with the ``--label-map`` that fixes a spelling."""
    return task.kind.chooses_labels and pair_inputs(task) is not None


def read_snli_tsv_rows(path: Path, problems: list[str]) -> Iterator[SourceRow]:
    """The published TSV (snli_1.0_*.txt, MultiNLI *.tsv): unquoted tab-separated cells, a header row."""
    for lineno, row in iter_table(path, problems, "\t", unquoted=True):
        yield SourceRow(f"line {lineno}", dict(row), str(lineno))
