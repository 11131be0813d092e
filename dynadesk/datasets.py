"""Datasets: per-task example validation, JSONL/CSV import and export, digests.

An example is a flat JSON object: ``id`` (string), the task's input fields
(non-empty strings), the gold field (``label``: one of the task's labels, or a
list of acceptable labels for multi-gold tasks; ``answers``: a list of spans
of the context for QA, ``answer`` accepted on import), optional ``tags`` (list
of strings) and optional ``metadata`` (any JSON object). Import is
all-or-nothing: every bad line is reported with its number and reason, and a
file with any error stores nothing.
"""

from __future__ import annotations

import csv
import io
import json
from collections import Counter
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from dynadesk.canonical import digest
from dynadesk.errors import ValidationError
from dynadesk.tasks import Task

MAX_EXAMPLE_BYTES = 1 << 20  # one example (line) may hold at most 1 MiB
OPTIONAL_FIELDS = ("tags", "metadata")


@dataclass
class DatasetSummary:
    name: str
    task: str
    split: str
    size: int
    digest: str
    label_counts: dict[str, int] = field(default_factory=dict)
    source: str = ""
    derived_from: str | None = None
    derivation: dict[str, Any] | None = None
    created_at: str = ""

    def to_dict(self) -> dict[str, Any]:
        return dict(self.__dict__)


def example_fields(task: Task) -> list[str]:
    return ["id", *task.input_names, task.gold_field, *OPTIONAL_FIELDS]


def validate_example(task: Task, raw: Any, fallback_id: str) -> dict[str, Any]:
    """Return the normalised example, or raise ``ValueError`` with the reason."""
    if not isinstance(raw, dict):
        raise ValueError(f"expected a JSON object, got {type(raw).__name__}")
    raw = dict(raw)
    if task.output_kind == "span" and "answer" in raw and "answers" not in raw:
        raw["answers"] = [raw.pop("answer")]
    allowed = set(example_fields(task))
    unknown = sorted(set(raw) - allowed)
    if unknown:
        raise ValueError(f"unknown field(s) {', '.join(unknown)} (allowed: {', '.join(example_fields(task))})")
    out: dict[str, Any] = {}
    ex_id = raw.get("id", fallback_id)
    if isinstance(ex_id, bool) or not isinstance(ex_id, (str, int)):
        raise ValueError("field 'id' must be a string or an integer")
    ex_id = str(ex_id)
    if not ex_id or len(ex_id) > 200 or any(c in ex_id for c in "/\\\x00") or ex_id in (".", ".."):
        raise ValueError(f"field 'id' {ex_id[:40]!r} must be 1-200 characters without '/', '\\' or NUL")
    out["id"] = ex_id
    for name in task.input_names:
        value = raw.get(name)
        if not isinstance(value, str) or not value.strip():
            raise ValueError(f"field '{name}' must be a non-empty string")
        out[name] = value
    gold = raw.get(task.gold_field)
    if task.output_kind == "label":
        if isinstance(gold, list) and task.multi_gold:
            if not gold or not all(isinstance(g, str) for g in gold):
                raise ValueError("field 'label' must be a non-empty list of labels")
            bad = [g for g in gold if g not in task.labels]
            if bad:
                raise ValueError(f"label(s) {bad} not among the task's labels {list(task.labels)}")
            out["label"] = gold if len(gold) > 1 else gold[0]
        elif isinstance(gold, str):
            if gold not in task.labels:
                raise ValueError(f"label '{gold}' is not one of {', '.join(task.labels)}")
            out["label"] = gold
        else:
            raise ValueError(f"field 'label' must be one of {', '.join(task.labels)}")
    else:
        if not isinstance(gold, list) or not gold or not all(isinstance(a, str) and a.strip() for a in gold):
            raise ValueError("field 'answers' must be a non-empty list of non-empty strings")
        context = out[str(task.span_of)]
        for a in gold:
            if a not in context:
                raise ValueError(f"answer {a[:60]!r} is not a substring of the '{task.span_of}' field")
        out["answers"] = gold
    if "tags" in raw:
        tags = raw["tags"]
        if not isinstance(tags, list) or not all(isinstance(t, str) for t in tags):
            raise ValueError("field 'tags' must be a list of strings")
        out["tags"] = tags
    if "metadata" in raw:
        if not isinstance(raw["metadata"], dict):
            raise ValueError("field 'metadata' must be a JSON object")
        out["metadata"] = raw["metadata"]
    return out


def dataset_digest(examples: list[dict[str, Any]]) -> str:
    """Content digest: sha256 of the canonical JSON list of examples, in order."""
    return digest(examples)


def label_counts(task: Task, examples: Iterable[dict[str, Any]]) -> dict[str, int]:
    if task.output_kind != "label":
        return {}
    counts: Counter[str] = Counter()
    for ex in examples:
        gold = ex["label"]
        counts.update(gold if isinstance(gold, list) else [gold])
    return {label: counts.get(label, 0) for label in task.labels}


def _decode(line: bytes, lineno: int, problems: list[str]) -> str | None:
    try:
        return line.decode("utf-8")
    except UnicodeDecodeError as exc:
        problems.append(f"line {lineno}: not valid UTF-8 (byte {exc.start})")
        return None


def _iter_lines(path: Path) -> Iterator[tuple[int, bytes | None, int]]:
    """``(lineno, line, size)``; ``line`` is None for a line over the limit.

    An overlong line is skipped in chunks, so a 100 MB line never sits in memory.
    """
    with open(path, "rb") as fh:
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


def read_jsonl(task: Task, path: Path) -> list[dict[str, Any]]:
    problems: list[str] = []
    examples: list[dict[str, Any]] = []
    seen: dict[str, int] = {}
    for lineno, line, size in _iter_lines(Path(path)):
        if line is None:
            problems.append(f"line {lineno}: {size} bytes, over the {MAX_EXAMPLE_BYTES} byte limit per example")
            continue
        text = _decode(line, lineno, problems)
        if text is None or not text.strip():
            continue
        try:
            raw = json.loads(text)
        except json.JSONDecodeError as exc:
            problems.append(f"line {lineno}: not valid JSON ({exc.msg} at column {exc.colno})")
            continue
        _accept(task, raw, lineno, examples, seen, problems)
    return _finish(path, examples, problems)


def _accept(task: Task, raw: Any, lineno: int, examples: list[dict[str, Any]], seen: dict[str, int],
            problems: list[str]) -> None:
    try:
        ex = validate_example(task, raw, fallback_id=str(lineno))
    except ValueError as exc:
        problems.append(f"line {lineno}: {exc}")
        return
    if ex["id"] in seen:
        problems.append(f"line {lineno}: duplicate id '{ex['id']}' (first on line {seen[ex['id']]})")
        return
    seen[ex["id"]] = lineno
    examples.append(ex)


def _finish(path: str | Path, examples: list[dict[str, Any]], problems: list[str]) -> list[dict[str, Any]]:
    if problems:
        raise ValidationError(f"{path}: {len(problems)} bad line(s); nothing was imported", problems)
    if not examples:
        raise ValidationError(f"{path}: no examples found")
    return examples


_LIST_FIELDS = {"answers", "tags"}


def _csv_cell(name: str, value: str) -> Any:
    if value.startswith("[") and (name in _LIST_FIELDS or name == "label"):
        return json.loads(value)
    if name in _LIST_FIELDS:
        return [value] if value else []
    if name == "metadata":
        return json.loads(value) if value else {}
    return value


def read_csv(task: Task, path: Path) -> list[dict[str, Any]]:
    problems: list[str] = []
    examples: list[dict[str, Any]] = []
    seen: dict[str, int] = {}
    try:
        raw_bytes = Path(path).read_bytes()
        text = raw_bytes.decode("utf-8-sig")
    except UnicodeDecodeError as exc:
        line = raw_bytes[: exc.start].count(b"\n") + 1
        raise ValidationError(f"{path}: line {line}: not valid UTF-8 (byte {exc.start}); nothing was imported") from exc
    csv.field_size_limit(MAX_EXAMPLE_BYTES)
    reader = csv.DictReader(io.StringIO(text, newline=""))
    try:
        header = reader.fieldnames or []
        missing = [f for f in ("id", *task.input_names) if f not in header and f != "id"]
        if missing:
            raise ValidationError(f"{path}: line 1: header lacks column(s) {', '.join(missing)}")
        start = 2
        for row in reader:
            lineno = start
            start = reader.line_num + 1
            if None in row:
                problems.append(f"line {lineno}: more cells than header columns")
                continue
            if any(v is None for v in row.values()):
                problems.append(f"line {lineno}: fewer cells than header columns")
                continue
            try:
                raw = {k: _csv_cell(k, v) for k, v in row.items() if not (k in OPTIONAL_FIELDS and v == "")}
            except json.JSONDecodeError as exc:
                problems.append(f"line {lineno}: a list cell is not valid JSON ({exc.msg})")
                continue
            if "id" in raw and raw["id"] == "":
                del raw["id"]
            _accept(task, raw, lineno, examples, seen, problems)
    except csv.Error as exc:
        problems.append(f"line {reader.line_num}: {exc}")
    return _finish(path, examples, problems)


def read_file(task: Task, path: Path, fmt: str | None = None) -> list[dict[str, Any]]:
    path = Path(path)
    if not path.is_file():
        raise ValidationError(f"{path}: no such file")
    fmt = fmt or ("csv" if path.suffix.lower() == ".csv" else "jsonl")
    if fmt == "csv":
        return read_csv(task, path)
    if fmt == "jsonl":
        return read_jsonl(task, path)
    raise ValidationError(f"{path}: unknown format '{fmt}' (use jsonl or csv)")


def write_jsonl(examples: Iterable[dict[str, Any]], out: io.TextIOBase) -> int:
    n = 0
    for ex in examples:
        out.write(json.dumps(ex, ensure_ascii=False, separators=(", ", ": ")) + "\n")
        n += 1
    return n


def write_csv(task: Task, examples: Iterable[dict[str, Any]], out: io.TextIOBase) -> int:
    examples = list(examples)
    cols = [c for c in example_fields(task) if c in {"id", *task.input_names, task.gold_field}
            or any(c in ex for ex in examples)]
    writer = csv.DictWriter(out, fieldnames=cols, lineterminator="\n")
    writer.writeheader()
    for ex in examples:
        row = {}
        for c in cols:
            v = ex.get(c, "")
            if isinstance(v, (list, dict)):
                v = json.dumps(v, ensure_ascii=False)
            row[c] = v
        writer.writerow(row)
    return len(examples)
