"""What every reader shares: source rows, field/label mapping, validation into examples.

A reader only turns a file into source rows (a location, a raw object); a
format's ``convert`` turns one row into the task's example shape, or drops it
with a reason that is counted (SNLI's no-consensus '-', SQuAD 2.0's
unanswerable questions). Validation, duplicate ids and the all-or-nothing rule
live here once, so every format reports bad rows the same numbered way.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from dynadesk.datasets import example_fields, validate_example
from dynadesk.errors import ValidationError
from dynadesk.formats.schema import (
    apply_aliases,
    mapping_hint,
    normalise_label,
    required_fields,
)
from dynadesk.tasks import Task


@dataclass(frozen=True)
class SourceRow:
    """One record of a source file: where it is (``line 3``, ``data[0].paragraphs[1].qas[2]``) and its object."""

    where: str
    row: Any
    fallback_id: str


@dataclass(frozen=True)
class Dropped:
    """A row left out on purpose by a documented rule; ``reason`` is counted and reported."""

    reason: str


@dataclass(frozen=True)
class Mapping:
    """``--map task_field=source_field``, ``--label-map source=target`` and ``--keep-extra``."""

    fields: dict[str, str] = field(default_factory=dict)
    labels: dict[str, str] = field(default_factory=dict)
    keep_extra: bool = False  # ``--keep-extra``: fields the task has no place for go under ``metadata``
    squad_v2: bool = False  # ``--squad-v2``: keep unanswerable questions, score the dataset by the v2.0 rule
    quoting: str = "auto"  # ``--quoting none``: a table's '"' is an ordinary character (tweets, SST)


Converter = Callable[[Task, dict[str, Any]], "dict[str, Any] | Dropped"]
Reader = Callable[[Path, list[str]], Iterable[SourceRow]]


@dataclass(frozen=True)
class Format:
    name: str
    title: str
    read: Reader
    convert: Converter
    tasks: tuple[str, ...] = ()  # the tasks this format holds; () = any task
    sample: Callable[[Path], dict[str, str]] | None = None  # a table's header (+ first row), checked once
    pre_labels: bool = False  # --label-map applies before convert, so a drop rule sees the mapped label
    convert_v2: Converter | None = None  # the convert of --squad-v2 (formats that carry unanswerable questions)
    detect: Callable[[Any], bool] | None = None  # Sniff -> whether a file is in this format (formats/detect.py)
    detect_order: int = 0  # hooks are asked lowest first (then in registration order); generic formats come last
    read_unquoted: Reader | None = None  # the reader of ``--quoting none`` (tables only)
    fits: Callable[[Task], bool] | None = None  # own tasks this format also feeds (of the same kind as ``tasks``)


@dataclass
class ReadResult:
    """The examples of a file, the format that read them and what was left out (reason -> count)."""

    examples: list[dict[str, Any]]
    format: str
    detected: bool
    dropped: dict[str, int] = field(default_factory=dict)


def parse_pairs(pairs: Iterable[str], option: str) -> dict[str, str]:
    """``["a=b", ...]`` -> ``{"a": "b"}``; a malformed or repeated pair names the option."""
    out: dict[str, str] = {}
    for pair in pairs:
        left, sep, right = pair.partition("=")
        if not sep or not left.strip() or not right.strip():
            raise ValidationError(f"{option} {pair!r}: expected NAME=VALUE")
        if left.strip() in out:
            raise ValidationError(f"{option} {left.strip()!r} is given twice")
        out[left.strip()] = right.strip()
    return out


def rename_fields(row: dict[str, Any], fields: dict[str, str]) -> dict[str, Any]:
    """Apply ``--map``: each source field is read as its task field."""
    out = dict(row)
    for task_field, source in fields.items():
        if source not in out:
            raise ValueError(f"--map {task_field}={source}: the row has no field '{source}'")
        value = out.pop(source)
        if task_field in out and task_field != source:
            raise ValueError(f"--map {task_field}={source}: the row already has a field '{task_field}'")
        out[task_field] = value
    return out


def convert_native(task: Task, row: dict[str, Any]) -> dict[str, Any]:
    """DynaDesk's own rows: public field-name aliases are accepted when the task's name is absent."""
    return apply_aliases(task, row)


def _example(task: Task, fmt: Format, src: SourceRow, mapping: Mapping) -> dict[str, Any] | Dropped:
    row = src.row
    if not isinstance(row, dict):
        return validate_example(task, row, src.fallback_id)  # raises the "expected a JSON object" reason
    row = rename_fields(row, mapping.fields)
    if fmt.pre_labels:
        row = _pre_map_labels(row, mapping.labels)
    convert = fmt.convert_v2 if mapping.squad_v2 and fmt.convert_v2 is not None else fmt.convert
    converted = convert(task, row)
    if isinstance(converted, Dropped):
        return converted
    if task.gold_field == "label" and "label" in converted:
        converted["label"] = normalise_label(task, converted["label"], mapping.labels)
    unknown = sorted(set(converted) - set(example_fields(task)) - {"answer"})
    if unknown and mapping.keep_extra:
        converted = keep_extra(converted, unknown)
        unknown = []
    if unknown:
        raise ValueError(f"unknown field(s) {', '.join(unknown)} (allowed: {', '.join(example_fields(task))})"
                         + mapping_hint(task, converted, unknown))
    return validate_example(task, converted, src.fallback_id)


def _pre_map_labels(row: dict[str, Any], labels: dict[str, str]) -> dict[str, Any]:
    out = dict(row)
    for name in ("label", "gold_label"):
        value = out.get(name)
        if isinstance(value, str) and value in labels:
            out[name] = labels[value]
    return out


def keep_extra(row: dict[str, Any], unknown: list[str]) -> dict[str, Any]:
    """``--keep-extra``: move the ``unknown`` fields under ``metadata`` (a field already there is kept)."""
    meta = row.get("metadata", {})
    if not isinstance(meta, dict):
        return row  # validation names the bad 'metadata' field
    out = {k: v for k, v in row.items() if k not in unknown}
    out["metadata"] = {**{k: row[k] for k in unknown}, **meta}
    return out


def build_examples(task: Task, fmt: Format, path: Path, mapping: Mapping, detected: bool) -> ReadResult:
    """Read, convert and validate every row; raise one :class:`ValidationError` listing every bad row."""
    if mapping.squad_v2 and (fmt.convert_v2 is None or task.kind.chooses_labels):
        raise ValidationError(f"{path}: --squad-v2 applies to qa files in the squad or hf format, not to "
                              f"{task.name} {fmt.name} files")
    if fmt.tasks and task.name not in fmt.tasks and not (fmt.fits is not None and fmt.fits(task)):
        raise ValidationError(f"{path}: the {fmt.title} format holds {' or '.join(fmt.tasks)} examples, "
                              f"not {task.name} ones (pass --task {fmt.tasks[0]}, or another --format)")
    read = fmt.read
    if mapping.quoting == "none":
        if fmt.read_unquoted is None:
            raise ValidationError(f"{path}: --quoting none applies to tables (csv, tsv, dynahate), not to "
                                  f"{fmt.name} files")
        read = fmt.read_unquoted
    elif mapping.quoting != "auto":
        raise ValidationError(f"--quoting {mapping.quoting!r}: expected 'auto' or 'none'")
    if fmt.sample is not None:
        _check_header(task, fmt.sample(path), path, mapping)
    problems: list[str] = []
    examples: list[dict[str, Any]] = []
    seen: dict[str, str] = {}
    dropped: Counter[str] = Counter()
    for src in read(path, problems):
        try:
            ex = _example(task, fmt, src, mapping)
        except ValueError as exc:
            problems.append(f"{src.where}: {exc}")
            continue
        if isinstance(ex, Dropped):
            dropped[ex.reason] += 1
            continue
        if ex["id"] in seen:
            problems.append(f"{src.where}: duplicate id '{ex['id']}' (first at {seen[ex['id']]})")
            continue
        seen[ex["id"]] = src.where
        examples.append(ex)
    if problems:
        unit = "line(s)" if all(p.startswith("line ") for p in problems) else "record(s)"
        raise ValidationError(f"{path}: {len(problems)} bad {unit}; nothing was imported", problems)
    if not examples:
        left_out = f" ({_dropped_text(dict(dropped))} left out)" if dropped else ""
        raise ValidationError(f"{path}: no examples found{left_out}")
    return ReadResult(examples, fmt.name, detected, dict(dropped))


def _check_header(task: Task, sample: dict[str, str], path: Path, mapping: Mapping) -> None:
    """A table whose header lacks a task field fails once, on line 1, with the mapping that would fix it."""
    try:
        row = apply_aliases(task, rename_fields(sample, mapping.fields))
    except ValueError as exc:
        raise ValidationError(f"{path}: line 1: {exc}") from exc
    present = set(row) | ({"answers"} if "answer" in row else set())  # one answer per row is accepted
    missing = [f for f in required_fields(task) if f not in present]
    if missing:
        unknown = [c for c in row if c not in example_fields(task)]
        hint = mapping_hint(task, row, unknown) if unknown else ""
        raise ValidationError(f"{path}: line 1: header lacks column(s) {', '.join(missing)}{hint}; "
                              "nothing was imported")


def _dropped_text(dropped: dict[str, int]) -> str:
    return ", ".join(f"{n} {reason}" for reason, n in dropped.items())

