"""CSV and TSV files with a header row; DynaDesk's own cells (JSON lists for labels, answers, tags)."""

from __future__ import annotations

import csv
import io
import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from dynadesk.datasets import OPTIONAL_FIELDS
from dynadesk.errors import JSONDepthError, ValidationError
from dynadesk.formats.base import SourceRow
from dynadesk.formats.jsonl import MAX_EXAMPLE_BYTES
from dynadesk.jsonio import loads_bounded, read_capped

_LIST_FIELDS = {"answers", "tags"}
MAX_TABLE_BYTES = 1 << 30  # as a SQuAD file: split a larger table


def read_text(path: Path) -> str:
    """The file as text (a UTF-8 BOM is dropped); bad UTF-8 names its line and byte."""
    raw_bytes = read_capped(path, MAX_TABLE_BYTES, "table")  # refused unread when over the cap
    try:
        return raw_bytes.decode("utf-8-sig")
    except UnicodeDecodeError as exc:
        line = raw_bytes[: exc.start].count(b"\n") + 1
        raise ValidationError(f"{path}: line {line}: not valid UTF-8 (byte {exc.start}); nothing was imported") \
            from exc


def iter_table(path: Path, problems: list[str], delimiter: str, unquoted: bool = False
               ) -> Iterator[tuple[int, dict[str, str]]]:
    """``(lineno, row)`` for each data row of a headed table; ragged rows go to ``problems``.

    ``unquoted``: a '"' is part of the cell (the published SNLI/MultiNLI TSV files)."""
    csv.field_size_limit(MAX_EXAMPLE_BYTES)
    reader = csv.DictReader(io.StringIO(read_text(path), newline=""), delimiter=delimiter,
                            quoting=csv.QUOTE_NONE if unquoted else csv.QUOTE_MINIMAL)
    try:
        if not reader.fieldnames:
            return
        start = 2
        for row in reader:
            lineno = start
            start = reader.line_num + 1
            if None in row:
                problems.append(f"line {lineno}: more cells than header columns")
            elif any(v is None for v in row.values()):
                problems.append(f"line {lineno}: fewer cells than header columns")
            else:
                yield lineno, row
    except csv.Error as exc:
        problems.append(f"line {reader.line_num}: {exc}")


def header(path: Path, delimiter: str) -> list[str]:
    """The header row's column names ([] for an empty file)."""
    first = read_text(path).split("\n", 1)[0].rstrip("\r")
    return next(csv.reader([first], delimiter=delimiter), [])


def first_row(path: Path, delimiter: str) -> dict[str, str]:
    """The header's columns with the first data row's cells ('' where there is none), for header checks."""
    columns = header(path, delimiter)
    for _lineno, row in iter_table(path, [], delimiter):
        return {c: row.get(c) or "" for c in columns}
    return dict.fromkeys(columns, "")


def csv_sample(path: Path) -> dict[str, str]:
    return first_row(path, ",")


def tsv_sample(path: Path) -> dict[str, str]:
    return first_row(path, "\t")


def _cell(name: str, value: str) -> Any:
    if value.startswith("[") and (name in _LIST_FIELDS or name == "label"):
        return loads_bounded(value, f"the '{name}' cell")
    if name in _LIST_FIELDS:
        return [value] if value else []
    if name == "metadata":
        return loads_bounded(value, "the 'metadata' cell") if value else {}
    return value


def _rows(path: Path, problems: list[str], delimiter: str) -> Iterator[SourceRow]:
    for lineno, row in iter_table(path, problems, delimiter):
        try:
            raw = {k: _cell(k, v) for k, v in row.items() if not (k in OPTIONAL_FIELDS and v == "")}
        except json.JSONDecodeError as exc:
            problems.append(f"line {lineno}: a list cell is not valid JSON ({exc.msg})")
            continue
        except JSONDepthError as exc:
            problems.append(f"line {lineno}: {exc}")
            continue
        if raw.get("id") == "":
            del raw["id"]
        yield SourceRow(f"line {lineno}", raw, str(lineno))


def read_csv_rows(path: Path, problems: list[str]) -> Iterator[SourceRow]:
    return _rows(path, problems, ",")


def read_tsv_rows(path: Path, problems: list[str]) -> Iterator[SourceRow]:
    return _rows(path, problems, "\t")
