"""One validator for the names people give things (datasets, models, annotators, trusted keys).

Names end up in file names, CLI tables, bundle payloads and pack files on
other machines, so each is checked where it enters: printable (no newline,
tab or control character), 1-100 characters, no path separator, not starting
with '-' (it would read as an option) or '.' (a hidden or parent folder), and
no surrounding whitespace, and in Unicode NFKC form (no full-width letters).
"""

from __future__ import annotations

import unicodedata
from typing import Any

from dynadesk.errors import ValidationError

MAX_NAME_CHARS = 100


def check_name(name: Any, what: str = "name", max_chars: int = MAX_NAME_CHARS) -> str:
    """Return ``name`` unchanged when it is a valid name, else raise :class:`ValidationError` saying why."""
    if not isinstance(name, str) or not name:
        raise ValidationError(f"{what} must be a non-empty string, got {name!r:.60}")
    shown = f"{what} {name[:60]!r}{'...' if len(name) > 60 else ''}"
    if len(name) > max_chars:
        raise ValidationError(f"{shown} has {len(name)} characters, over the {max_chars} limit")
    if not name.isprintable():
        raise ValidationError(f"{shown} holds a newline, tab or other control character")
    if unicodedata.normalize("NFKC", name) != name:  # full-width "ＢＥＲＴ" would pass for "BERT"
        raise ValidationError(f"{shown} holds full-width or compatibility characters; write it as "
                              f"{unicodedata.normalize('NFKC', name)!r}")
    if "/" in name or "\\" in name:
        raise ValidationError(f"{shown} holds a path separator ('/' or '\\')")
    if name[0] in "-." or name != name.strip():
        raise ValidationError(f"{shown} must not start with '-' or '.', nor start or end with whitespace")
    return name
