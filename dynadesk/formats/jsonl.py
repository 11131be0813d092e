"""JSON lines: one object per line, read in bounded chunks (a 100 MB line never sits in memory)."""

from __future__ import annotations

import json
import zlib
from collections.abc import Iterator
from pathlib import Path

from dynadesk.errors import JSONDepthError, ValidationError
from dynadesk.formats.base import SourceRow
from dynadesk.formats.source import open_source
from dynadesk.jsonio import loads_bounded

MAX_EXAMPLE_BYTES = 1 << 20  # one example (line) may hold at most 1 MiB


def iter_lines(path: Path) -> Iterator[tuple[int, bytes | None, int]]:
    """``(lineno, line, size)``; ``line`` is None for a line over the limit, which is skipped in chunks.

    Gzip and a BOM are undone by :func:`open_source`; a gzip stream cut short is refused, naming the file."""
    try:
        yield from _lines(path)
    except (EOFError, OSError, zlib.error) as exc:
        raise ValidationError(f"{path}: the gzip stream is damaged or cut short ({exc}); nothing was imported") \
            from exc


def _lines(path: Path) -> Iterator[tuple[int, bytes | None, int]]:
    with open_source(path) as fh:
        lineno = 0
        while True:
            line = fh.readline(MAX_EXAMPLE_BYTES + 1)
            if not line:
                return
            lineno += 1
            if len(line) > MAX_EXAMPLE_BYTES:
                size = len(line)
                while not line.endswith(b"\n"):
                    line = fh.readline(1 << 20)
                    if not line:
                        break
                    size += len(line)
                yield lineno, None, size
                continue
            yield lineno, line, len(line)


def read_jsonl_rows(path: Path, problems: list[str]) -> Iterator[SourceRow]:
    """Every non-empty line as a parsed JSON value; bad lines go to ``problems`` with their number."""
    for lineno, line, size in iter_lines(path):
        if line is None:
            problems.append(f"line {lineno}: {size} bytes, over the {MAX_EXAMPLE_BYTES} byte limit per example")
            continue
        try:
            text = line.decode("utf-8")
        except UnicodeDecodeError as exc:
            problems.append(f"line {lineno}: not valid UTF-8 (byte {exc.start})")
            continue
        if not text.strip():
            continue
        try:
            raw = loads_bounded(text, f"line {lineno}")
        except json.JSONDecodeError as exc:
            problems.append(f"line {lineno}: not valid JSON ({exc.msg} at column {exc.colno})")
            continue
        except JSONDepthError as exc:
            problems.append(str(exc))
            continue
        yield SourceRow(f"line {lineno}", raw, str(lineno))


def first_object(path: Path) -> object:
    """The first non-empty line's JSON value (None when it is not one), for format detection."""
    for _lineno, line, _size in iter_lines(path):
        if line is None:
            return None
        if line.strip():
            try:
                return loads_bounded(line.decode("utf-8"), "the first line")
            except (UnicodeDecodeError, json.JSONDecodeError, JSONDepthError):
                return None
    return None
