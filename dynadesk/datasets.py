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
import json
from collections import Counter
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import IO, Any

from dynadesk.canonical import digest
from dynadesk.evaluator.metrics import SQUAD_V2_KEY
from dynadesk.tasks import Task

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
    unanswerable_left_out: int = 0  # unanswerable questions the import left out (SQuAD 2.0 without --squad-v2)

    @property
    def answerable_only(self) -> bool:
        """Imported without its unanswerable questions: not the dataset as published (e.g. SQuAD 2.0)."""
        return self.unanswerable_left_out > 0

    def to_dict(self) -> dict[str, Any]:
        return {**self.__dict__, "answerable_only": self.answerable_only}


@dataclass(frozen=True)
class DatasetOrigin:
    """Where a stored dataset came from, the four facts that travel together from an import, a recipe, an export
    or a perturbation into its row: the ``source`` it was read from, the dataset it was ``derived_from`` and how
    (``derivation``), and how many unanswerable questions the import left out (which makes it answerable-only).
    One value, so :meth:`~dynadesk.store.datasets.DatasetRepo.add` takes what was read and where it came from."""

    source: str = ""
    derived_from: str | None = None
    derivation: dict[str, Any] | None = None
    unanswerable_left_out: int = 0


def example_fields(task: Task) -> list[str]:
    return ["id", *task.input_names, task.gold_field, *OPTIONAL_FIELDS]


def validate_example(task: Task, raw: Any, fallback_id: str) -> dict[str, Any]:
    """Return the normalised example, or raise ``ValueError`` with the reason."""
    if not isinstance(raw, dict):
        raise ValueError(f"expected a JSON object, got {type(raw).__name__}")
    raw = dict(raw)
    task.kind.row_gold(raw)
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
    for f in task.inputs:
        name, value = f.name, raw.get(f.name)
        if f.optional and value is None:
            value = ""  # an optional input (the task file says so) may be absent: the model reads it empty
        if not isinstance(value, str) or not (value.strip() or f.optional):
            raise ValueError(f"field '{name}' must be a {'' if f.optional else 'non-empty '}string")
        out[name] = value
    gold = raw.get(task.gold_field)
    meta = raw.get("metadata")
    v2 = isinstance(meta, dict) and meta.get(SQUAD_V2_KEY) is True  # SQuAD 2.0 kept as published
    out[task.gold_field] = task.kind.check_gold(gold, task.labels, task.multi_gold, out, task.span_of,
                                                unanswerable_allowed=v2)
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
    if not task.kind.chooses_labels:
        return {}
    counts: Counter[str] = Counter()
    for ex in examples:
        gold = ex["label"]
        counts.update(gold if isinstance(gold, list) else [gold])
    return {label: counts.get(label, 0) for label in task.labels}


def write_jsonl(examples: Iterable[dict[str, Any]], out: IO[str]) -> int:
    n = 0
    for ex in examples:
        out.write(json.dumps(ex, ensure_ascii=False, separators=(", ", ": ")) + "\n")
        n += 1
    return n


def write_csv(task: Task, examples: Iterable[dict[str, Any]], out: IO[str]) -> int:
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
