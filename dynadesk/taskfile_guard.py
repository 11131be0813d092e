"""Hostile task files cost nothing: the reading and the text rules every task file passes before it is parsed.

A task file comes from whoever wrote it (``dynadesk tasks add``, ``dynadesk-server tasks add``), so reading it
must be bounded before anything is built from it:

- **no aliases or anchors**: a 556-byte file of nested aliases ("billion laughs") expands to gigabytes the
  moment anything walks or prints it. :class:`_Loader` refuses the first anchor or alias *event*, before a node
  is composed, so nothing is ever expanded; nesting deeper than :data:`MAX_DEPTH` is refused the same way (the
  composer recurses once per level);
- **a size cap** (:data:`MAX_TASK_FILE_BYTES`, checked before the file is read) and a **label cap**
  (:data:`MAX_LABELS`): a task with thousands of labels is a mistake, and a 100,000-label list is an attack on
  every page that draws the labels; duplicates are found in one pass (a counter, not ``list.count``);
- **text a person reads is what was written**: labels are printable (no NUL, no control, no zero-width or
  bidi character such as U+202E, which shows text reversed), carry no markup characters (``< > &``), are in
  NFC form and at most :data:`MAX_LABEL_CHARS` characters; titles and descriptions may hold line breaks but no
  other control or bidi character;
- **names are checked like model names**: a task name is NFKC-stable (no full-width letters), in one script,
  and its look (:func:`dynadesk.lookalike.look`: case folding and UTS #39 confusable skeletons) differs from
  every known task's, so "Sentiment" or a Cyrillic "ѕentiment" cannot pass for "sentiment".
"""

from __future__ import annotations

import unicodedata
from collections import Counter
from collections.abc import Iterable
from pathlib import Path
from typing import Any

import yaml
from confusable_homoglyphs import confusables

from dynadesk.errors import ConfigError
from dynadesk.lookalike import look

MAX_TASK_FILE_BYTES = 256 * 1024
MAX_LABELS = 1000
MAX_LABEL_CHARS = 100
MAX_DEPTH = 32
MARKUP = "<>&"
# Bidi embeddings, overrides and isolates, and the marks: each changes the order a reader sees.
BIDI = frozenset("\u061c\u200e\u200f\u202a\u202b\u202c\u202d\u202e\u2066\u2067\u2068\u2069")

Problem = tuple[tuple[Any, ...], str]


class _Refused(Exception):
    """Raised inside the loader; :func:`load_yaml` turns it into a ConfigError naming the file and line."""

    def __init__(self, line: int, message: str):
        super().__init__(message)
        self.line, self.message = line, message


class _Loader(yaml.SafeLoader):
    """``SafeLoader`` that refuses every anchor and alias event, and nesting deeper than :data:`MAX_DEPTH`,
    before the node is composed: nothing is ever expanded or shared."""

    _depth = 0

    def compose_node(self, parent: Any, index: Any) -> Any:
        event = self.peek_event()  # type: ignore[no-untyped-call]  # PyYAML ships no annotations for it
        line = event.start_mark.line + 1 if event.start_mark else 1
        if isinstance(event, yaml.AliasEvent):
            raise _Refused(line, f"YAML alias '*{event.anchor}' refused: task files may not use anchors or aliases"
                                 " (write the value out)")
        if getattr(event, "anchor", None) is not None:
            raise _Refused(line, f"YAML anchor '&{event.anchor}' refused: task files may not use anchors or "
                                 "aliases (write the value out)")
        self._depth += 1
        try:
            if self._depth > MAX_DEPTH:
                raise _Refused(line, f"nested deeper than {MAX_DEPTH} levels; refused")
            return super().compose_node(parent, index)
        finally:
            self._depth -= 1


def read_task_text(path: Path) -> str:
    """The text of a task file, refused unread when over :data:`MAX_TASK_FILE_BYTES` (never read whole first)."""
    try:
        with open(path, "rb") as fh:
            data = fh.read(MAX_TASK_FILE_BYTES + 1)
    except OSError as exc:
        raise ConfigError(f"{path}: cannot read task file: {exc}") from exc
    if len(data) > MAX_TASK_FILE_BYTES:
        raise ConfigError(f"{path}: task file over the {MAX_TASK_FILE_BYTES // 1024} KiB limit; refused unread "
                          "(a task file lists inputs, labels and rules: a few KiB)")
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise ConfigError(f"{path}: cannot read task file: not UTF-8 (byte {exc.start})") from exc


def load_yaml(text: str, source: str) -> tuple[Any, Any]:
    """``(node, value)`` of a task file's YAML text: the node tree (for line numbers) and the plain value.

    Refused with one :class:`ConfigError` naming ``source`` and the line: over the size cap, an anchor or alias,
    too deep, or not YAML."""
    if len(text) > MAX_TASK_FILE_BYTES or len(text.encode("utf-8", "surrogatepass")) > MAX_TASK_FILE_BYTES:
        raise ConfigError(f"{source}: task file over the {MAX_TASK_FILE_BYTES // 1024} KiB limit; refused")
    loader = _Loader(text)
    try:
        node = loader.get_single_node()
        value = loader.construct_document(node) if node is not None else None
    except _Refused as exc:
        raise ConfigError(f"{source}:{exc.line}: {exc.message}") from None
    except yaml.YAMLError as exc:
        raise ConfigError(f"{source}: not valid YAML: {exc}") from exc
    finally:
        loader.dispose()
    return node, value


def _char(c: str) -> str:
    return f"U+{ord(c):04X} {unicodedata.name(c, 'unnamed')}"


def text_problem(text: str, what: str, *, multiline: bool = False) -> str | None:
    """Why ``text`` would not show a reader what was written (a control, zero-width or bidi character), or None.
    ``multiline`` allows line breaks and tabs (descriptions)."""
    for i, c in enumerate(text):
        if multiline and c in "\n\t":
            continue
        if c in BIDI:
            return f"{what} holds the bidi control {_char(c)} at position {i} (it reorders what a reader sees)"
        if not c.isprintable() and c != " ":
            return f"{what} holds the invisible or control character {_char(c)} at position {i}"
    return None


def label_problem(label: str, i: int) -> str | None:
    """Why label ``i`` is refused, or None."""
    what = f"output.labels[{i}] {label[:40]!r}"
    if not label or label != label.strip():
        return f"{what} is empty or starts or ends with whitespace"
    if len(label) > MAX_LABEL_CHARS:
        return f"{what} has {len(label)} characters, over the {MAX_LABEL_CHARS} limit"
    found = text_problem(label, what)
    if found:
        return found
    if unicodedata.normalize("NFC", label) != label:
        return f"{what} is not in Unicode NFC form"
    markup = sorted(set(label) & set(MARKUP))
    if markup:
        return f"{what} holds the markup character(s) {' '.join(markup)}; labels are plain words"
    return None


def labels_problems(labels: list[Any]) -> list[Problem]:
    """The label cap, each label's text, and duplicates found in one pass (all at once, each with its path)."""
    if len(labels) > MAX_LABELS:
        return [(("output", "labels"), f"output.labels lists {len(labels)} labels, over the {MAX_LABELS} limit")]
    out: list[Problem] = []
    for i, label in enumerate(labels):
        if isinstance(label, str):
            found = label_problem(label, i)
            if found:
                out.append((("output", "labels", i), found))
    counts = Counter(v for v in labels if isinstance(v, str))
    dup = sorted(v for v, n in counts.items() if n > 1)
    if dup:
        shown = ", ".join(dup[:10]) + (f" (and {len(dup) - 10} more)" if len(dup) > 10 else "")
        out.append((("output", "labels"), f"output.labels has duplicate labels: {shown}"))
    return out


def _looks(name: str) -> set[str]:
    """The looks of a name, case folded before the skeleton too (the skeleton alone reads "I" as "l", so "NLI"
    and "nli" would differ)."""
    return {look(name), look(name.casefold())}


def name_problem(name: str, known: Iterable[str]) -> str | None:
    """Why task name ``name`` is refused beside the ``known`` task names (the same name is not a look-alike of
    itself: adding the same task again is decided by its digest), or None."""
    if unicodedata.normalize("NFKC", name) != name:
        return (f"field 'name' {name!r} is not in Unicode NFKC form (full-width or compatibility letters); "
                f"write it as {unicodedata.normalize('NFKC', name)!r}")
    mine = _looks(name)
    for other in sorted(known):
        if other != name and _looks(other) & mine:
            return (f"field 'name' {name!r} looks like the task '{other}' (case or look-alike letters); "
                    "choose a name that reads differently")
    if confusables.is_mixed_script(name):
        return f"field 'name' {name!r} mixes scripts (a look-alike of another name); use one script"
    return None


def file_problems(raw: dict[str, Any], known: Iterable[str]) -> list[Problem]:
    """Every problem of the guard's rules in a task mapping: the name, the labels, the texts people read."""
    out: list[Problem] = []
    name = raw.get("name")
    if isinstance(name, str) and name.isidentifier():
        found = name_problem(name, known)
        if found:
            out.append((("name",), found))
    output = raw.get("output")
    if isinstance(output, dict) and isinstance(output.get("labels"), list):
        out.extend(labels_problems(output["labels"]))
    for key in ("title", "description"):
        if isinstance(raw.get(key), str):
            found = text_problem(raw[key], f"field '{key}'", multiline=key == "description")
            if found:
                out.append(((key,), found))
    inputs = raw.get("inputs")
    for i, f in enumerate(inputs if isinstance(inputs, list) else []):
        if not isinstance(f, dict):
            continue
        for key in ("name", "description"):
            if isinstance(f.get(key), str):
                found = text_problem(f[key], f"inputs[{i}].{key}", multiline=key == "description")
                if found:
                    out.append((("inputs", i, key), found))
    return out
