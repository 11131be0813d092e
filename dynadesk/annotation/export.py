"""Export a round as a dataset in the task's schema, closing the loop to evaluation.

Each exported example is ``id`` (the example's stable uid), the task inputs,
the gold (the annotator's target: ``label``, or ``answers`` for QA), ``tags``
(round, fooled / not-fooled, verification status) and ``metadata.annotation``
(model output, fooled, validations ...). Output is deterministic, so the same
round exports to the same bytes and imports to the same digest every time.
CSV cells that a spreadsheet would run as formulas get a leading ``'``; the
lossless forms are JSONL and ``--register``.
"""

from __future__ import annotations

from pathlib import Path
from typing import IO, TYPE_CHECKING, Any

from dynadesk.annotation.validate import VERIFIED_CORRECT, example_status
from dynadesk.data import SPLITS
from dynadesk.datasets import (
    DatasetOrigin,
    DatasetSummary,
    dataset_digest,
    label_counts,
    validate_example,
    write_csv,
    write_jsonl,
)
from dynadesk.errors import ValidationError
from dynadesk.store import annotation_meta
from dynadesk.store.annotation import AnnotatedExample
from dynadesk.tasks import Task, get_task

if TYPE_CHECKING:
    from dynadesk.store import Store

STATUSES = ("all", "fooled", "verified-correct", "verified-fooled")
FORMULA_LEADS = ("=", "+", "-", "@", "\t", "\r")


def _fields(meta: dict[str, dict[str, str]], uid: str) -> dict[str, Any]:
    return {"fields": meta[uid]} if meta.get(uid) else {}


def _to_dataset_example(task: Task, ex: AnnotatedExample, meta: dict[str, dict[str, str]]) -> dict[str, Any]:
    st = example_status(ex, task.votes_needed)
    raw: dict[str, Any] = {"id": ex.uid, **ex.inputs}
    raw[task.gold_field] = task.kind.as_gold(ex.target)
    raw["tags"] = [f"round-{ex.round}", "fooled" if ex.fooled else "not-fooled", st.status]
    raw["metadata"] = {"annotation": {
        "task": ex.task, "round": ex.round, "annotator": ex.annotator, "created_at": ex.created_at,
        "model": ex.model_name, "model_digest": ex.model_digest, "model_output": ex.model_output,
        "fooled": ex.fooled, "status": st.status, "verified_fooled": st.verified_fooled,
        "explanation": ex.explanation, "time_ms": ex.time_ms, "context_id": ex.context_id,
        **_fields(meta, ex.uid),  # the task file's metadata.create fields (present only when given)
        "validations": [{"annotator": v.annotator, "verdict": v.verdict, "label": v.label, "reason": v.reason,
                         "created_at": v.created_at, **_fields(meta, v.uid)} for v in ex.validations],
    }}
    return validate_example(task, raw, fallback_id=ex.uid)


def export_examples(store: Store, task_name: str, round_number: int | None = None,
                    status: str = "all") -> list[dict[str, Any]]:
    """The round's examples (default: latest round) that match ``status``, as dataset examples."""
    task = get_task(task_name)
    if status not in STATUSES:
        raise ValidationError(f"status '{status}' is not one of {', '.join(STATUSES)}")
    rnd = store.annotation.get_round(task.name, round_number)
    out = []
    examples = store.annotation.examples(task.name, rnd.number)
    meta = annotation_meta.of(store, [ex.uid for ex in examples] + [v.uid for ex in examples for v in ex.validations])
    for ex in examples:
        st = example_status(ex, task.votes_needed)
        keep = (status == "all" or (status == "fooled" and ex.fooled)
                or (status == "verified-correct" and st.status == VERIFIED_CORRECT)
                or (status == "verified-fooled" and st.verified_fooled))
        if keep:
            out.append(_to_dataset_example(task, ex, meta))
    if not out:
        raise ValidationError(f"round {rnd.number} of '{task.name}' has no examples with status '{status}'")
    return out


def export_round(store: Store, task_name: str, out: str | Path | IO[str], round_number: int | None = None,
                 status: str = "all", fmt: str | None = None) -> int:
    """Write the round as JSONL or CSV (format from ``fmt`` or the file suffix); returns the count."""
    task = get_task(task_name)
    examples = export_examples(store, task.name, round_number, status)
    if isinstance(out, (str, Path)):
        fmt = fmt or ("csv" if str(out).lower().endswith(".csv") else "jsonl")
    fmt = fmt or "jsonl"
    if fmt not in ("jsonl", "csv"):
        raise ValidationError(f"unknown export format '{fmt}' (use jsonl or csv)")
    if isinstance(out, (str, Path)):
        with open(out, "w", encoding="utf-8", newline="") as fh:
            return _write(task, examples, fh, fmt)
    return _write(task, examples, out, fmt)


def _write(task: Task, examples: list[dict[str, Any]], out: IO[str], fmt: str) -> int:
    if fmt != "csv":
        return write_jsonl(examples, out)
    return write_csv(task, [neutralise_formulas(ex) for ex in examples], out)


def neutralise_formulas(example: dict[str, Any]) -> dict[str, Any]:
    """``example`` with ``'`` before each text cell a spreadsheet would run as a formula (=, +, -, @, tab, CR).

    Annotators write these cells and a round's CSV is opened in spreadsheets;
    list and object cells are written as JSON (``[``/``{``), so only text needs it.
    JSONL and ``--register`` keep the text exactly as written."""
    return {k: "'" + v if isinstance(v, str) and v.startswith(FORMULA_LEADS) else v for k, v in example.items()}


def register_round(store: Store, task_name: str, name: str, round_number: int | None = None, status: str = "all",
                   split: str = "test", replace: bool = False) -> DatasetSummary:
    """Register the exported round as an evaluation dataset named ``name``."""
    task = get_task(task_name)
    if split not in SPLITS:
        raise ValidationError(f"split '{split}' is not one of {', '.join(SPLITS)}")
    rnd = store.annotation.get_round(task.name, round_number)
    examples = export_examples(store, task.name, rnd.number, status)
    source = f"annotation:{task.name}/round-{rnd.number}/{status}"
    return store.datasets.add(name, task.name, split, examples, dataset_digest(examples),
                              label_counts(task, examples), DatasetOrigin(source=source), replace=replace)
