"""What format detection looks at: a file's suffix, its first JSON object, a table's header, each read once.

Every format in the registry (:data:`dynadesk.formats.FORMATS`) may have a ``detect`` hook that takes a
:class:`Sniff` and says whether the file is in that format; :func:`dynadesk.formats.detect_format` asks the
hooks in their ``detect_order``, so one file is opened a few times at most, whatever the number of formats.
"""

from __future__ import annotations

from functools import cached_property
from pathlib import Path

from dynadesk.formats.delimited import header
from dynadesk.formats.jsonl import first_object
from dynadesk.formats.source import source_suffix

TABLE_SUFFIXES = frozenset({".parquet", ".csv", ".tsv", ".txt"})  # files that are never JSON lines


class Sniff:
    """One file under detection; each view is read on first use and kept."""

    def __init__(self, path: Path):
        self.path = path
        self.suffix = source_suffix(path)  # ``.jsonl`` for ``train.jsonl.gz``
        self._headers: dict[str, list[str]] = {}

    @property
    def json_lines(self) -> bool:
        """Whether the file may be JSON lines (its suffix is not a table's)."""
        return self.suffix not in TABLE_SUFFIXES

    @cached_property
    def first(self) -> object:
        """The first non-empty line's JSON value (None when it is not one)."""
        return first_object(self.path)

    @property
    def keys(self) -> set[str]:
        """The first JSON object's keys (empty when the first line is not an object)."""
        return set(self.first) if self.json_lines and isinstance(self.first, dict) else set()

    def columns(self, delimiter: str) -> list[str]:
        """The header row's column names with ``delimiter``."""
        if delimiter not in self._headers:
            self._headers[delimiter] = header(self.path, delimiter)
        return self._headers[delimiter]
