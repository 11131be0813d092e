"""Library API for datasets (the CLI and GUI call these)."""

from __future__ import annotations

import io
from collections.abc import Iterable
from pathlib import Path
from typing import TYPE_CHECKING, Any

from dynadesk.datasets import DatasetSummary, dataset_digest, label_counts, read_file, write_csv, write_jsonl
from dynadesk.errors import ValidationError
from dynadesk.tasks import Task, get_task

if TYPE_CHECKING:
    from dynadesk.store import Store

SPLITS = ("train", "dev", "test", "other")


def import_dataset(store: Store, task_name: str, path: str | Path, name: str | None = None, split: str = "test",
                   fmt: str | None = None, replace: bool = False) -> DatasetSummary:
    """Validate a whole JSONL/CSV file and store it; nothing is stored if any line is bad."""
    task = get_task(task_name)
    path = Path(path)
    if split not in SPLITS:
        raise ValidationError(f"split '{split}' is not one of {', '.join(SPLITS)}")
    name = name or path.stem
    examples = read_file(task, path, fmt)
    return store.datasets.add(name, task.name, split, examples, dataset_digest(examples),
                              label_counts(task, examples), source=str(path.resolve()), replace=replace)


def export_dataset(store: Store, name: str, out: str | Path | io.TextIOBase, fmt: str | None = None) -> int:
    """Write a dataset as JSONL or CSV; re-importing it gives the same digest."""
    summary = store.datasets.get(name)
    task = get_task(summary.task)
    examples = store.datasets.iter_examples(name)
    if isinstance(out, (str, Path)):
        fmt = fmt or ("csv" if str(out).lower().endswith(".csv") else "jsonl")
        with open(out, "w", encoding="utf-8", newline="") as fh:
            return _write(task, examples, fh, fmt)
    return _write(task, examples, out, fmt or "jsonl")


def _write(task: Task, examples: Iterable[dict[str, Any]], fh: io.TextIOBase, fmt: str) -> int:
    if fmt == "csv":
        return write_csv(task, examples, fh)
    if fmt == "jsonl":
        return write_jsonl(examples, fh)
    raise ValidationError(f"unknown export format '{fmt}' (use jsonl or csv)")
