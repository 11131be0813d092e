"""Dynabench's own files, for every task, and the DynaSent rounds.

Dynabench eval/train JSON lines carry ``uid``, the task's inputs and ``label``
(nli: ``entailed``/``neutral``/``contradictory``, or ANLI's ``e``/``n``/``c``;
sentiment: positive/negative/neutral; hate speech: hateful/not-hateful), or
``answer`` for QA (a string or a list of strings). Single-input tasks carry
``"context": ""`` beside ``statement``: an empty context is no input, so it is
dropped; a non-empty one is kept under ``metadata``. The published ANLI rows
also carry ``reason``, ``tag``, ``model_label``, ``emturk``, ``genre`` ...;
every field the task has no place for is kept under ``metadata``, so nothing
of the source is lost.

DynaSent (rounds 1 and 2, every split): ``text_id`` is the id, ``sentence``
the statement, ``gold_label`` the label. Rule for non-ternary gold: DynaSent's
README keeps only positive/negative/neutral, so a ``mixed`` gold and a null
gold (no majority among the five workers) are left out and counted;
``--label-map mixed=neutral`` (or any other target) keeps the mixed rows as
that label instead.
"""

from __future__ import annotations

from typing import Any

from dynadesk.formats.base import Dropped
from dynadesk.formats.schema import apply_aliases
from dynadesk.tasks import Task

NO_GOLD = "rows without a gold label (gold_label null: no majority)"
MIXED = "mixed-sentiment rows (gold_label 'mixed'; --label-map mixed=LABEL keeps them)"
DYNASENT_KEYS = {"text_id", "sentence", "gold_label"}


def split_extras(task: Task, row: dict[str, Any], drop: tuple[str, ...] = ()) -> dict[str, Any]:
    """Keep the task's fields; move every other field (bar ``drop``) under ``metadata``."""
    keep = {"id", *task.input_names, task.gold_field, "tags"}
    out = {k: v for k, v in row.items() if k in keep}
    meta = dict(row["metadata"]) if isinstance(row.get("metadata"), dict) else {}
    meta.update({k: v for k, v in row.items() if k not in keep and k != "metadata" and k not in drop})
    if "metadata" in row and not isinstance(row["metadata"], dict):
        out["metadata"] = row["metadata"]  # let validation name the bad field
    elif meta:
        out["metadata"] = meta
    return out


def _answers(task: Task, row: dict[str, Any]) -> None:
    """Dynabench QA's ``answer``: one string, or a list of acceptable strings."""
    task.kind.row_gold(row)


def convert_dynabench(task: Task, row: dict[str, Any]) -> dict[str, Any]:
    row = dict(row)
    if "context" not in task.input_names and row.get("context") == "":
        del row["context"]  # a single-input task's placeholder, not an input
    row = apply_aliases(task, row)
    _answers(task, row)
    return split_extras(task, row)


def convert_dynasent(task: Task, row: dict[str, Any]) -> dict[str, Any] | Dropped:
    row = dict(row)
    if "id" not in row and "text_id" in row:
        row["id"] = row.pop("text_id")
    if "label" not in row and "gold_label" in row:
        row["label"] = row.pop("gold_label")
    if row.get("label") is None:
        return Dropped(NO_GOLD)
    if row.get("label") == "mixed":
        return Dropped(MIXED)
    return split_extras(task, apply_aliases(task, row))
