"""Library API for datasets (the CLI and GUI call these)."""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import IO, TYPE_CHECKING, Any

from dynadesk.datasets import DatasetOrigin, DatasetSummary, dataset_digest, label_counts, write_csv, write_jsonl
from dynadesk.errors import ValidationError
from dynadesk.formats import Mapping, read_examples
from dynadesk.formats.squad import UNANSWERABLE
from dynadesk.tasks import Task, get_task

if TYPE_CHECKING:
    from dynadesk.store import Store

SPLITS = ("train", "dev", "test", "other")
EXPORT_FORMATS = ("jsonl", "csv")


@dataclass(frozen=True)
class FileReading:
    """How a data file's rows are read: its format (detected from the file when None) and the field and label
    mapping (with its quoting and SQuAD 2.0 choices), the two options :func:`~dynadesk.formats.read_examples` reads
    a file with. One value, so :func:`import_file` takes where the rows go apart from how they are read."""

    fmt: str | None = None
    mapping: Mapping | None = None


@dataclass
class ImportOutcome:
    """A stored dataset, the format that read it (and whether it was detected) and what was left out."""

    summary: DatasetSummary
    format: str
    detected: bool
    dropped: dict[str, int] = field(default_factory=dict)
    splits_found: dict[str, int] = field(default_factory=dict)  # the file's own split column: rows per split
    also: list[DatasetSummary] = field(default_factory=list)  # --all-splits: the other splits' datasets

    def to_dict(self) -> dict[str, Any]:
        return {**self.summary.to_dict(), "format": self.format, "format_detected": self.detected,
                "dropped": dict(self.dropped), "splits_found": dict(self.splits_found),
                "also": [d.to_dict() for d in self.also]}


def import_file(store: Store, task_name: str, path: str | Path, name: str | None = None, split: str = "test",
                reading: FileReading | None = None, replace: bool = False, all_splits: bool = False
                ) -> ImportOutcome:
    """Validate a whole file in any supported format and store it; nothing is stored if any row is bad
    (``reading``: how its rows are read; the format detected and no mapping when not given).

    A file that holds several splits (a ``split`` column, as DynaHate publishes train, dev and test in one
    CSV) is never stored whole under one split: the rows of ``split`` are imported, or with ``all_splits``
    each split under its own dataset name (``NAME-train`` ...); the counts found are in the outcome."""
    task = get_task(task_name)
    path = Path(path)
    if split not in SPLITS:
        raise ValidationError(f"split '{split}' is not one of {', '.join(SPLITS)}")
    reading = reading or FileReading()
    result = read_examples(task, path, reading.fmt, reading.mapping)
    base = name or (Path(path.stem).stem if path.suffix.lower() == ".gz" else path.stem)  # train.jsonl.gz: train
    try:
        parts = by_source_split(result.examples)
    except ValidationError as exc:
        raise ValidationError(f"{path}: {exc}") from None
    found = {s: len(rows) for s, rows in parts.items()}
    if not parts:
        if all_splits:
            raise ValidationError(f"{path}: --all-splits needs a file with a split column; this one has none "
                                  f"(import it with --split)")
        parts, names = {split: result.examples}, {split: base}
    elif all_splits:
        names = {s: f"{base}-{s}" for s in parts}
    elif split not in parts:
        raise ValidationError(f"{path}: the file's split column holds {_found_text(found)} rows and none of "
                              f"'{split}': pass --split {next(iter(parts))}, or --all-splits to import each "
                              "split under its own name; nothing was imported")
    else:
        parts, names = {split: parts[split]}, {split: base}
    taken = [n for n in names.values() if store.datasets.exists(n)] if not replace and len(names) > 1 else []
    if taken:  # all or nothing: no split is stored when another one's name is taken
        raise ValidationError(f"{path}: dataset(s) {', '.join(taken)} already exist (use another --name or "
                              "--replace); nothing was imported")
    stored = []
    for part, examples in parts.items():
        stored.append(store.datasets.add(
            names[part], task.name, part if part in SPLITS else "other", examples, dataset_digest(examples),
            label_counts(task, examples),
            DatasetOrigin(source=str(path.resolve()), unanswerable_left_out=result.dropped.get(UNANSWERABLE, 0)),
            replace=replace))
    return ImportOutcome(stored[0], result.format, result.detected, result.dropped, found, stored[1:])


_SPLIT_NAMES = {"validation": "dev", "val": "dev", "valid": "dev", "development": "dev", "testing": "test",
                "training": "train"}


def by_source_split(examples: list[dict[str, Any]]) -> dict[str, list[dict[str, Any]]]:
    """The examples by the file's own ``split`` (kept under metadata); {} when no row names one.

    Some rows naming a split and others none (an ``NA`` cell) is refused, naming them: storing the file whole
    would mix splits without a word, and guessing theirs would be a guess."""
    parts: dict[str, list[dict[str, Any]]] = {}
    unnamed: list[str] = []
    for ex in examples:
        value = (ex.get("metadata") or {}).get("split")
        if not isinstance(value, str) or not value.strip():
            unnamed.append(str(ex.get("id")))
            continue
        key = _SPLIT_NAMES.get(value.strip().lower(), value.strip().lower())
        parts.setdefault(key, []).append(ex)
    if parts and unnamed:
        shown = ", ".join(unnamed[:5]) + (" ..." if len(unnamed) > 5 else "")
        raise ValidationError(f"{len(unnamed)} row(s) name no split (ids {shown}) while the others do "
                              f"({_found_text({k: len(v) for k, v in parts.items()})}): fill their split cell, or "
                              "drop the split column to import the file as one split; nothing was imported")
    return parts


def _found_text(found: dict[str, int]) -> str:
    return ", ".join(f"{n} {s}" for s, n in found.items())


def import_dataset(store: Store, task_name: str, path: str | Path, name: str | None = None, split: str = "test",
                   fmt: str | None = None, replace: bool = False) -> DatasetSummary:
    """:func:`import_file` returning only the stored summary."""
    return import_file(store, task_name, path, name=name, split=split, reading=FileReading(fmt),
                       replace=replace).summary


def export_dataset(store: Store, name: str, out: str | Path | IO[str], fmt: str | None = None) -> int:
    """Write a dataset as JSONL or CSV; re-importing it gives the same digest."""
    summary = store.datasets.get(name)
    task = get_task(summary.task)
    examples = store.datasets.iter_examples(name)
    if isinstance(out, (str, Path)):
        fmt = fmt or ("csv" if str(out).lower().endswith(".csv") else "jsonl")
        with open(out, "w", encoding="utf-8", newline="") as fh:
            return _write(task, examples, fh, fmt)
    return _write(task, examples, out, fmt or "jsonl")


def _write(task: Task, examples: Iterable[dict[str, Any]], fh: IO[str], fmt: str) -> int:
    if fmt == "csv":
        return write_csv(task, examples, fh)
    if fmt == "jsonl":
        return write_jsonl(examples, fh)
    raise ValidationError(f"unknown export format '{fmt}' (use {' or '.join(EXPORT_FORMATS)})")

