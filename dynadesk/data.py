"""Library API for datasets (the CLI and GUI call these)."""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import IO, TYPE_CHECKING, Any

from dynadesk.datasets import DatasetSummary, dataset_digest, label_counts, write_csv, write_jsonl
from dynadesk.errors import ValidationError
from dynadesk.formats import Mapping, read_examples
from dynadesk.formats.squad import UNANSWERABLE
from dynadesk.tasks import Task, get_task

if TYPE_CHECKING:
    from dynadesk.store import Store

SPLITS = ("train", "dev", "test", "other")
EXPORT_FORMATS = ("jsonl", "csv")


@dataclass
class ImportOutcome:
    """A stored dataset, the format that read it (and whether it was detected) and what was left out."""

    summary: DatasetSummary
    format: str
    detected: bool
    dropped: dict[str, int] = field(default_factory=dict)

    def to_dict(self) -> dict[str, Any]:
        return {**self.summary.to_dict(), "format": self.format, "format_detected": self.detected,
                "dropped": dict(self.dropped)}


def import_file(store: Store, task_name: str, path: str | Path, name: str | None = None, split: str = "test",
                fmt: str | None = None, replace: bool = False, mapping: Mapping | None = None) -> ImportOutcome:
    """Validate a whole file in any supported format and store it; nothing is stored if any row is bad."""
    task = get_task(task_name)
    path = Path(path)
    if split not in SPLITS:
        raise ValidationError(f"split '{split}' is not one of {', '.join(SPLITS)}")
    result = read_examples(task, path, fmt, mapping)
    examples = result.examples
    summary = store.datasets.add(name or path.stem, task.name, split, examples, dataset_digest(examples),
                                 label_counts(task, examples), source=str(path.resolve()), replace=replace,
                                 unanswerable_left_out=result.dropped.get(UNANSWERABLE, 0))
    return ImportOutcome(summary, result.format, result.detected, result.dropped)


def import_dataset(store: Store, task_name: str, path: str | Path, name: str | None = None, split: str = "test",
                   fmt: str | None = None, replace: bool = False) -> DatasetSummary:
    """:func:`import_file` returning only the stored summary."""
    return import_file(store, task_name, path, name=name, split=split, fmt=fmt, replace=replace).summary


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

