"""The round-over-round report: every model's error rate on every round's verified-fooled
examples and on the task's base test sets — Dynabench's central table, which says whether
the next round's target got stronger.

An error is the task's own fooling rule applied to the gold answer (label mismatch; QA:
answer F1 below the task's threshold against the best gold). A round's column holds out
every example that any reported model was trained on (found through the models'
lineage), so no model is scored on its own training data; the column says how many
were held out.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import asdict, dataclass, field
from typing import TYPE_CHECKING, Any

from dynadesk.annotation.validate import example_status
from dynadesk.errors import ValidationError
from dynadesk.tasks import Task, get_task

if TYPE_CHECKING:
    from dynadesk.store import Store


@dataclass(frozen=True)
class Column:
    name: str  # "round N" or a dataset name
    kind: str  # "round" or "test set"
    n: int
    held_out: int = 0  # round examples left out because a reported model trained on them


@dataclass
class ModelRow:
    model: str
    errors: dict[str, float | None] = field(default_factory=dict)  # column -> error rate 0-100 (None: no examples)
    note: str = ""


@dataclass
class RoundReport:
    task: str
    columns: list[Column]
    rows: list[ModelRow]

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


def _golds(task: Task, ex: dict[str, Any]) -> list[Any]:
    return task.kind.golds(ex[task.gold_field])


def _trained_ids(store: Store, models: Sequence[Any]) -> set[str]:
    ids: set[str] = set()
    for rec in models:
        for src in (rec.manifest.get("lineage") or {}).get("train", []):
            if store.datasets.exists(src["dataset"]):
                ids.update(str(ex["id"]) for ex in store.datasets.examples(src["dataset"]))
    return ids


def round_report(store: Store, task_name: str, models: Sequence[str] | None = None,
                 test_sets: Sequence[str] | None = None, batch_size: int = 32) -> RoundReport:
    """Error rates of ``models`` (default: every registered model of the task) per round and test set."""
    from dynadesk.models import default_predictor

    task = get_task(task_name)
    records = [store.models.get(m) for m in models] if models else store.models.list(task.name)
    if not records:
        raise ValidationError(f"no registered models for task '{task.name}' to report on")
    for rec in records:
        if rec.task != task.name:
            raise ValidationError(f"model '{rec.name}' serves task '{rec.task}', not '{task.name}'")
    trained = _trained_ids(store, records)
    sets: list[tuple[Column, list[dict[str, Any]], list[list[Any]]]] = []
    for rnd in store.annotation.list_rounds(task.name):
        verified = [ex for ex in store.annotation.examples(task.name, rnd.number)
                    if example_status(ex, task.votes_needed).verified_fooled]
        kept = [ex for ex in verified if ex.uid not in trained]
        sets.append((Column(f"round {rnd.number}", "round", len(kept), len(verified) - len(kept)),
                     [dict(ex.inputs) for ex in kept], [[ex.target] for ex in kept]))
    names = list(test_sets) if test_sets is not None else [
        d.name for d in store.datasets.list(task.name, include_derived=False) if d.split == "test"]
    for name in names:
        examples = store.datasets.examples(name)
        sets.append((Column(name, "test set", len(examples)),
                     [{f: ex[f] for f in task.input_names} for ex in examples], [_golds(task, ex) for ex in examples]))
    rows = []
    for rec in records:
        row = ModelRow(rec.name)
        if rec.has_pickle:
            row.note = "pickle weights: runs only in the sandbox"
            rows.append(row)
            continue
        adapter = default_predictor().adapter(rec)
        for column, inputs, golds in sets:
            if not inputs:
                row.errors[column.name] = None
                continue
            outputs: list[dict[str, Any]] = []
            for i in range(0, len(inputs), batch_size):
                outputs += adapter.predict(inputs[i:i + batch_size])
            wrong = sum(task.is_fooled(out, g) for out, g in zip(outputs, golds))
            row.errors[column.name] = 100.0 * wrong / len(inputs)
        rows.append(row)
    return RoundReport(task.name, [c for c, _i, _g in sets], rows)
