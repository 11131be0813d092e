"""The DynaHate CSV as published (``Dynamically Generated Hate Dataset v0.2.x.csv``).

R's ``write.csv`` wrote it: the first column has an empty name and holds the
row number (ignored), a bare ``NA`` is a missing cell (left out of the row; R
quotes every string, so a quoted ``"NA"`` is the text NA and is kept), ``acl.id``
is the example id, ``text`` the statement and ``label`` ``hate``/``nothate``.
Every other column (``X1``, ``type``, ``target``, ``level``, ``split``,
``round``, ``round.base``, ``annotator``, ``acl.id.matched`` ...) is kept
under ``metadata``.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

from dynadesk.formats.base import SourceRow
from dynadesk.formats.delimited import header, iter_records
from dynadesk.formats.dynabench import split_extras
from dynadesk.formats.schema import apply_aliases
from dynadesk.tasks import Task

MISSING = "NA"


def is_dynahate(path: Path) -> bool:
    columns = header(path, ",")
    return "acl.id" in columns and "text" in columns and "label" in columns


def read_dynahate_rows(path: Path, problems: list[str], unquoted: bool = False) -> Iterator[SourceRow]:
    """Each data row without its row-number column and its bare (unquoted) ``NA`` cells."""
    for rec in iter_records(path, problems, ",", unquoted):
        raw = {k: v for k, v in rec.row.items() if k.strip() and (v != MISSING or k in rec.quoted)}
        yield SourceRow(f"line {rec.lineno}", raw, str(rec.lineno))


def read_dynahate_rows_unquoted(path: Path, problems: list[str]) -> Iterator[SourceRow]:
    return read_dynahate_rows(path, problems, unquoted=True)


def convert_dynahate(task: Task, row: dict[str, Any]) -> dict[str, Any]:
    row = dict(row)
    if "id" not in row and "acl.id" in row:
        row["id"] = row.pop("acl.id")
    return split_extras(task, apply_aliases(task, row))
