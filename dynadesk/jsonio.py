"""Bounded JSON parsing for every file or body a user or peer hands us.

``json.loads`` recurses once per nesting level, so a 100k-deep ``[[[...]]]``
ends in a raw ``RecursionError`` far from where the file came in. The depth is
measured first, in linear time and outside string literals, and an over-deep
document is refused with an error naming where it came from and the limit.
"""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

from dynadesk.errors import DynaDeskError, JSONDepthError, ValidationError

MAX_DEPTH = 64
_STRING_TEXT = re.compile(r'"(?:[^"\\]|\\.)*"', re.DOTALL)
_STRING_BYTES = re.compile(rb'"(?:[^"\\]|\\.)*"', re.DOTALL)
_BRACKET_TEXT = re.compile(r"[\[\]{}]")
_BRACKET_BYTES = re.compile(rb"[\[\]{}]")


def nesting_depth(text: str | bytes, stop_above: int | None = None) -> int:
    """The deepest nesting of arrays/objects in ``text`` (stops counting once past ``stop_above``)."""
    if isinstance(text, str):
        brackets = [m.group() for m in _BRACKET_TEXT.finditer(_STRING_TEXT.sub("", text))]
    else:
        brackets = [m.group().decode("ascii") for m in _BRACKET_BYTES.finditer(_STRING_BYTES.sub(b"", text))]
    depth = deepest = 0
    for bracket in brackets:
        if bracket in "[{":
            depth += 1
            if depth > deepest:
                deepest = depth
                if stop_above is not None and deepest > stop_above:
                    break
        else:
            depth -= 1
    return deepest


def check_depth(text: str | bytes, where: str, max_depth: int = MAX_DEPTH,
                error: type[DynaDeskError] = JSONDepthError) -> None:
    """Raise ``error`` when ``text`` nests deeper than ``max_depth``."""
    if nesting_depth(text, stop_above=max_depth) > max_depth:
        raise error(f"{where}: JSON nested deeper than {max_depth} levels; refused")


def loads_bounded(text: str | bytes, where: str, max_depth: int = MAX_DEPTH, **kwargs: Any) -> Any:
    """``json.loads`` that refuses over-deep nesting first (``kwargs`` go to ``json.loads``)."""
    check_depth(text, where, max_depth)
    try:
        return json.loads(text, **kwargs)
    except RecursionError:  # a stack smaller than max_depth needs: still a clear refusal
        raise JSONDepthError(f"{where}: JSON nested too deeply to parse") from None


def load_file(path: str | Path, max_depth: int = MAX_DEPTH) -> Any:
    """Read and parse a UTF-8 JSON file; every failure names the file."""
    path = Path(path)
    try:
        text = path.read_text(encoding="utf-8")
    except OSError as exc:
        raise ValidationError(f"{path}: cannot read: {exc}") from exc
    except UnicodeDecodeError as exc:
        raise ValidationError(f"{path}: not valid UTF-8 (byte {exc.start})") from exc
    try:
        return loads_bounded(text, str(path), max_depth)
    except json.JSONDecodeError as exc:
        raise ValidationError(f"{path}: not valid JSON ({exc.msg} at line {exc.lineno} column {exc.colno})") from exc
