"""The file schema of each task: fields, types, aliases and label spellings.

One table serves the readers (aliases are applied when the task's own name is
absent), ``dynadesk tasks show`` and the unknown-field hints, so what the
documentation shows is what the importer accepts.
"""

from __future__ import annotations

import difflib
from typing import Any

from dynadesk.tasks import Task

# Source field names that mean a task field, as public datasets spell them.
FIELD_ALIASES: dict[str, tuple[str, ...]] = {
    "id": ("uid", "pairID", "guid", "idx"),
    "context": ("premise", "sentence1", "passage"),
    "hypothesis": ("sentence2",),
    "statement": ("text", "sentence"),
    "question": ("query",),
    "label": ("gold_label",),
}

# Label spellings of public datasets, per task: source spelling -> task label.
LABEL_ALIASES: dict[str, dict[str, str]] = {
    "nli": {"e": "entailment", "n": "neutral", "c": "contradiction",
            "entailed": "entailment", "contradictory": "contradiction"},  # ANLI; Dynabench's NLI files
    "hate_speech": {"hate": "hateful", "nothate": "not-hateful", "not_hateful": "not-hateful"},
}

# Integer labels whose meaning is fixed by the public datasets' ClassLabel order
# (snli, multi_nli, anli on the Hugging Face hub: 0 entailment, 1 neutral, 2 contradiction).
INT_LABELS: dict[str, tuple[str, ...]] = {
    "nli": ("entailment", "neutral", "contradiction"),
}


def task_field_aliases(task: Task) -> dict[str, tuple[str, ...]]:
    """The aliases of each field of ``task`` (id, inputs, gold)."""
    names = ["id", *task.input_names, task.gold_field]
    return {n: FIELD_ALIASES.get(n, ()) + (("answer",) if n == "answers" else ()) for n in names}


def apply_aliases(task: Task, row: dict[str, Any]) -> dict[str, Any]:
    """Rename an alias to its task field when the task's own name is absent (first alias present wins)."""
    out = dict(row)
    for name, aliases in task_field_aliases(task).items():
        if name in out or name == "answers":
            continue
        for alias in aliases:
            if alias in out:
                out[name] = out.pop(alias)
                break
    return out


def normalise_label(task: Task, value: Any, label_map: dict[str, str]) -> Any:
    """Map one label value (or a list of them) through ``--label-map``, then the task's public spellings."""
    if isinstance(value, list):
        return [normalise_label(task, v, label_map) for v in value]
    if isinstance(value, bool) or not isinstance(value, (str, int)):
        return value
    key = str(value)
    if key in label_map:
        return label_map[key]
    if isinstance(value, str) and value.lstrip("-").isdigit() and value not in task.labels:
        value = int(value)  # a CSV/TSV cell holding a class number
    if isinstance(value, int):
        fixed = INT_LABELS.get(task.name)
        if fixed is not None and 0 <= value < len(fixed):
            return fixed[value]
        raise ValueError(f"label {value} is a number: say what it means with --label-map {value}=LABEL "
                         f"(LABEL one of {', '.join(task.labels)})")
    return LABEL_ALIASES.get(task.name, {}).get(value, value)


def required_fields(task: Task) -> list[str]:
    return [*task.input_names, task.gold_field]


# Column names that hold row numbers or positions, never a task's field (GLUE's ``index``, R's unnamed column).
ROW_NUMBER_NAMES = {"", "index", "idx", "row", "rownum", "row_number", "unnamed: 0", "x"}


def is_meaningless(source: str) -> bool:
    """A source name no ``--map`` should propose: empty, or a row-number column."""
    return source.strip().lower() in ROW_NUMBER_NAMES


def _fit(task: Task, name: str, source: str, value: Any) -> tuple[int, float]:
    """How well a source field's value fits a task field: its kind first, then the names' likeness."""
    likeness = difflib.SequenceMatcher(None, name.lower(), source.lower()).ratio()
    looks_like_id = source.lower().endswith("id")
    if name == "id":
        kind = 2 if looks_like_id and isinstance(value, (str, int)) else 0
    elif name == "label":
        known = {*task.labels, *LABEL_ALIASES.get(task.name, {})}
        values = value if isinstance(value, list) and value else [value]
        if all(isinstance(v, str) and v in known for v in values):
            kind = 2
        elif isinstance(value, (str, int)) and not isinstance(value, bool) and str(value).lstrip("-").isdigit() \
                and not is_meaningless(source) and not looks_like_id:  # GLUE's promptID is an id, not a label
            kind = 1
        else:
            kind = 0
    elif name == "answers":
        kind = 2 if isinstance(value, (list, dict)) else 0
    else:
        kind = 2 if isinstance(value, str) and not looks_like_id and value not in task.labels \
            and not value.lstrip("-").isdigit() else 0
    return kind, likeness


def mapping_hint(task: Task, row: dict[str, Any], unknown: list[str]) -> str:
    """A ``--map`` suggestion pairing each missing task field with the unknown source field that fits it best."""
    missing = [f for f in [*required_fields(task), "id"] if f not in row]
    named = [src for src in unknown if not is_meaningless(src)]
    fits = sorted(((_fit(task, name, src, row.get(src)), name, src) for name in missing for src in named),
                  key=lambda t: t[0], reverse=True)
    chosen: dict[str, str] = {}
    for (kind, _likeness), name, src in fits:
        if kind and name not in chosen and src not in chosen.values():
            chosen[name] = src
    pairs = [f"--map {name}={chosen[name]}" for name in missing if name in chosen]
    if task.gold_field in missing and task.gold_field not in chosen:
        gold = (f"; no column holds the gold {task.gold_field} (an unlabelled test split, such as GLUE's "
                "test files, cannot be imported for scoring)")
    else:
        gold = ""
    if pairs:
        return f"; if these hold the task's fields, pass {' '.join(pairs)}{gold}"
    if not named:
        return gold + "; a row-number column is not a task field: pass --keep-extra to keep it as metadata, " \
            "or leave it out of the file"
    return (gold + f"; the task has no such field: rename it to one of {', '.join(['id', *required_fields(task)])} "
            f"with --map FIELD={named[0]}, keep it as metadata with --keep-extra, or leave it out of the file")


def file_schema(task: Task) -> dict[str, Any]:
    """What a data file for ``task`` holds; shown by ``dynadesk tasks show`` and documented in data-formats.md."""
    aliases = task_field_aliases(task)
    fields: list[dict[str, Any]] = [
        {"name": "id", "type": "string or integer", "required": False, "aliases": list(aliases["id"]),
         "description": "unique in the file; default: the line number"}]
    for f in task.inputs:
        fields.append({"name": f.name, "type": "non-empty string", "required": True,
                       "aliases": list(aliases[f.name]), "description": f.description})
    if task.kind.chooses_labels:
        kind = "label, or a list of labels" if task.multi_gold else "label"
        fields.append({"name": "label", "type": kind, "required": True, "aliases": list(aliases["label"]),
                       "description": f"one of {', '.join(task.labels)}"})
    else:
        fields.append({"name": "answers", "type": "non-empty list of strings", "required": True,
                       "aliases": list(aliases["answers"]),
                       "description": f"acceptable answers, each a substring of '{task.span_of}'"})
    fields.append({"name": "tags", "type": "list of strings", "required": False, "aliases": [], "description": ""})
    fields.append({"name": "metadata", "type": "JSON object", "required": False, "aliases": [],
                   "description": "kept as-is; readers of public formats put the source's extra fields here"})
    fixed = INT_LABELS.get(task.name)
    return {
        "fields": fields,
        "labels": list(task.labels),
        "label_aliases": dict(LABEL_ALIASES.get(task.name, {})),
        "integer_labels": {str(i): lab for i, lab in enumerate(fixed)} if fixed else {},
    }


def pair_inputs(task: Task) -> tuple[str, str] | None:
    """A two-input task's (context, other) input names: the context is the ``is_context`` input (or the span's
    source, or the first); None when the task does not have exactly two inputs."""
    names = task.input_names
    if len(names) != 2:
        return None
    first = task.context_field or task.span_of or names[0]
    if first not in names:
        return None
    return first, next(n for n in names if n != first)


def to_task_inputs(task: Task, row: dict[str, Any], canonical: tuple[str, str]) -> dict[str, Any]:
    """Rename a public format's two canonical inputs (``context``/``question``, ``context``/``hypothesis``) to the
    task's own input names, so that SQuAD and SNLI files feed an own task of the same kind."""
    pair = pair_inputs(task)
    if pair is None or pair == canonical:
        return row
    out = dict(row)
    values = [out.pop(c) for c in canonical if c in out]
    if len(values) != 2:
        return row
    return {**out, pair[0]: values[0], pair[1]: values[1]}
