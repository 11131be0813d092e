"""Bounded JSON parsing for every file or body a user or peer hands us.

``json.loads`` recurses once per nesting level, so a 100k-deep ``[[[...]]]``
ends in a raw ``RecursionError`` far from where the file came in. Here an
over-deep document is refused with an error naming where it came from and the
limit. Counting every bracket (C speed, strings included) is an upper bound
that settles almost every document; only one over the limit is parsed and its
containers walked to get the true depth.
"""

from __future__ import annotations

import json
import os
from itertools import accumulate
from pathlib import Path
from typing import Any

from dynadesk.errors import DynaDeskError, JSONDepthError, ValidationError

MAX_DEPTH = 64
MAX_FILE_BYTES = 64 << 20  # a JSON file a person hands the CLI (tables, proofs, manifests); data files have their own
_NOT_BRACKETS = bytes(b for b in range(256) if b not in b"[]{}")
_STEP = [1 if b in b"[{" else -1 for b in range(256)]


def _bracket_bound(text: str | bytes) -> int:
    """Deepest bracket nesting counting every bracket, those inside strings too: >= the JSON depth."""
    data = text.encode("utf-8", "surrogatepass") if isinstance(text, str) else bytes(text)
    return max(accumulate(map(_STEP.__getitem__, data.translate(None, _NOT_BRACKETS))), default=0)


def _depth_over(doc: Any, limit: int) -> bool:
    """Whether parsed ``doc`` nests arrays/objects deeper than ``limit`` (iterative, stops early)."""
    stack: list[tuple[Any, int]] = [(doc, 1)]
    while stack:
        node, depth = stack.pop()
        children = node.values() if isinstance(node, dict) else node if isinstance(node, list) else None
        if children is None:
            continue
        if depth > limit:
            return True
        stack.extend((child, depth + 1) for child in children if isinstance(child, (dict, list)))
    return False


def _refuse(where: str, max_depth: int, error: type[DynaDeskError] = JSONDepthError) -> DynaDeskError:
    return error(f"{where}: JSON nested deeper than {max_depth} levels; refused")


def check_depth(text: str | bytes, where: str, max_depth: int = MAX_DEPTH,
                error: type[DynaDeskError] = JSONDepthError) -> None:
    """Raise ``error`` when the JSON ``text`` nests deeper than ``max_depth`` (text that is not JSON passes:
    the caller's own parse reports it)."""
    if _bracket_bound(text) <= max_depth:
        return
    try:
        doc = json.loads(text)
    except RecursionError:
        raise _refuse(where, max_depth, error) from None
    except ValueError:
        return
    if _depth_over(doc, max_depth):
        raise _refuse(where, max_depth, error)


def loads_bounded(text: str | bytes, where: str, max_depth: int = MAX_DEPTH, **kwargs: Any) -> Any:
    """``json.loads`` that refuses documents nested deeper than ``max_depth`` (``kwargs`` go to ``json.loads``)."""
    try:
        doc = json.loads(text, **kwargs)
    except RecursionError:
        raise _refuse(where, max_depth) from None
    if _bracket_bound(text) > max_depth and _depth_over(doc, max_depth):
        raise _refuse(where, max_depth)
    return doc


def read_capped(path: str | Path, max_bytes: int = MAX_FILE_BYTES, what: str = "file") -> bytes:
    """A file's bytes, refused unread when over ``max_bytes`` (at most ``max_bytes + 1`` are ever read: a 3 GB file
    costs nothing); every failure names the file."""
    try:
        with open(path, "rb") as fh:
            if Path(path).is_file() and os.fstat(fh.fileno()).st_size > max_bytes:  # a pipe is read up to the cap
                raise ValidationError(f"{path}: {what} over the {max_bytes:,}-byte limit; refused unread")
            data = fh.read(max_bytes + 1)
    except OSError as exc:
        raise ValidationError(f"{path}: cannot read: {exc}") from exc
    if len(data) > max_bytes:
        raise ValidationError(f"{path}: {what} over the {max_bytes:,}-byte limit; refused unread")
    return data


def read_text_capped(path: str | Path, max_bytes: int = MAX_FILE_BYTES, what: str = "file") -> str:
    """:func:`read_capped`, decoded as UTF-8."""
    try:
        return read_capped(path, max_bytes, what).decode("utf-8")
    except UnicodeDecodeError as exc:
        raise ValidationError(f"{path}: not valid UTF-8 (byte {exc.start})") from exc


def load_file(path: str | Path, max_depth: int = MAX_DEPTH, max_bytes: int = MAX_FILE_BYTES) -> Any:
    """Read and parse a UTF-8 JSON file of at most ``max_bytes``; every failure names the file."""
    path = Path(path)
    text = read_text_capped(path, max_bytes, "JSON file")
    try:
        return loads_bounded(text, str(path), max_depth)
    except json.JSONDecodeError as exc:
        raise ValidationError(f"{path}: not valid JSON ({exc.msg} at line {exc.lineno} column {exc.colno})") from exc
