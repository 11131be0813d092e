"""CSV and TSV files with a header row; DynaDesk's own cells (JSON lists for labels, answers, tags)."""

from __future__ import annotations

import csv
import json
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from dynadesk.datasets import OPTIONAL_FIELDS
from dynadesk.errors import JSONDepthError, ValidationError
from dynadesk.formats.base import SourceRow
from dynadesk.formats.jsonl import MAX_EXAMPLE_BYTES
from dynadesk.formats.source import read_source_bytes
from dynadesk.jsonio import loads_bounded

_LIST_FIELDS = {"answers", "tags"}


def read_text(path: Path) -> str:
    """The file as text (gzip undone, a UTF-8 BOM dropped); bad UTF-8 names its line and byte."""
    raw_bytes = read_source_bytes(path, "table")  # refused unread when over the cap
    try:
        return raw_bytes.decode("utf-8")
    except UnicodeDecodeError as exc:
        line = raw_bytes[: exc.start].count(b"\n") + 1
        raise ValidationError(f"{path}: line {line}: not valid UTF-8 (byte {exc.start}); nothing was imported") \
            from exc


@dataclass(frozen=True)
class Record:
    """One data row of a table: its first physical line, its cells by column, the columns whose cell was quoted."""

    lineno: int
    row: dict[str, str]
    quoted: frozenset[str]


class _Feed:
    """The file's physical lines, handed to :mod:`csv` one at a time, so each record knows the lines it took."""

    def __init__(self, text: str):
        self.lines = text.split("\n")
        if self.lines and self.lines[-1] == "":
            self.lines.pop()
        self.lines = [line + "\n" for line in self.lines]
        self.pos = 0

    def __iter__(self) -> _Feed:
        return self

    def __next__(self) -> str:
        if self.pos >= len(self.lines):
            raise StopIteration
        self.pos += 1
        return self.lines[self.pos - 1]


def quoted_cells(text: str, delimiter: str) -> list[bool]:
    """For each cell of one record's raw text, whether it opens with a '"' (so it was quoted, not bare)."""
    out, in_quote, at_start, i = [], False, True, 0
    while i < len(text):
        ch = text[i]
        if at_start:
            out.append(ch == '"')
            at_start = False
            if ch == '"':
                in_quote = True
                i += 1
                continue
        if in_quote:
            if ch == '"':
                if text[i + 1: i + 2] == '"':
                    i += 1
                else:
                    in_quote = False
        elif ch == delimiter:
            at_start = True
        i += 1
    return out


def _looks_like_a_row(line: str, delimiter: str, width: int) -> bool:
    """A physical line that, read by itself (its own quotes honoured), has exactly the header's number of cells."""
    if width < 2:
        return False
    try:
        cells = next(csv.reader([line.rstrip("\r\n")], delimiter=delimiter), [])
    except csv.Error:
        return False
    return len(cells) == width


def iter_records(path: Path, problems: list[str], delimiter: str, unquoted: bool = False) -> Iterator[Record]:
    """Each data row of a headed table with its physical line; ragged or guessed rows go to ``problems``.

    ``unquoted``: a '"' is part of the cell (the published SNLI/MultiNLI TSV files, ``--quoting none``).
    A quoted cell may span lines, but not when a line it would swallow reads as a whole row by itself: that is
    a lone '"' in a file whose rows are single lines (tweets, SST), which :mod:`csv` would silently merge with
    the following rows. Such a row is refused naming its line, and reading goes on at the next line, so every
    later refusal names its own physical line."""
    csv.field_size_limit(MAX_EXAMPLE_BYTES)
    feed = _Feed(read_text(path))
    reader = csv.reader(feed, delimiter=delimiter, quoting=csv.QUOTE_NONE if unquoted else csv.QUOTE_MINIMAL)
    columns: list[str] | None = None
    while True:
        start = feed.pos + 1
        try:
            cells = next(reader)
        except StopIteration:
            return
        except csv.Error as exc:
            problems.append(f"line {start}: {exc}")
            feed.pos = start
            continue
        end = feed.pos
        if columns is None:
            columns = cells or None  # blank lines before the header are skipped
            continue
        if not cells:
            continue
        if end > start and not unquoted:
            swallowed = next((k for k in range(start, end) if _looks_like_a_row(feed.lines[k], delimiter,
                                                                               len(columns))), None)
            if swallowed is not None:
                problems.append(
                    f"line {start}: a cell opens a quote ('\"') that is not closed on this line, so lines "
                    f"{start}-{end} would be read as one row although line {swallowed + 1} reads as a row by "
                    "itself; close the quote (a '\"' inside a quoted cell is written '\"\"'), or pass "
                    "--quoting none to read '\"' as an ordinary character")
                feed.pos = start
                continue
        if len(cells) > len(columns):
            problems.append(f"line {start}: more cells than header columns")
            continue
        if len(cells) < len(columns):
            problems.append(f"line {start}: fewer cells than header columns")
            continue
        flags = [False] * len(columns) if unquoted else quoted_cells("".join(feed.lines[start - 1:end]), delimiter)
        quoted = frozenset(c for c, q in zip(columns, flags) if q)
        yield Record(start, dict(zip(columns, cells)), quoted)


def iter_table(path: Path, problems: list[str], delimiter: str, unquoted: bool = False
               ) -> Iterator[tuple[int, dict[str, str]]]:
    """``(lineno, row)`` for each data row of a headed table (see :func:`iter_records`)."""
    for record in iter_records(path, problems, delimiter, unquoted):
        yield record.lineno, record.row


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


def _rows(path: Path, problems: list[str], delimiter: str, unquoted: bool = False) -> Iterator[SourceRow]:
    for lineno, row in iter_table(path, problems, delimiter, unquoted):
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


def read_csv_rows_unquoted(path: Path, problems: list[str]) -> Iterator[SourceRow]:
    """``--quoting none``: every '"' is an ordinary character of its cell."""
    return _rows(path, problems, ",", unquoted=True)


def read_tsv_rows_unquoted(path: Path, problems: list[str]) -> Iterator[SourceRow]:
    """``--quoting none``: every '"' is an ordinary character of its cell (tweets, SST phrases)."""
    return _rows(path, problems, "\t", unquoted=True)
