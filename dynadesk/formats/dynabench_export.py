"""Dynabench's platform round export (a task owner's "Export current round data").

Dynabench (``facebookresearch/dynabench``, ``get_round_data_for_export``) writes one object per example:
the example's own columns (``id``, ``cid``, ``tag``, ``input_json``, ``output_json``, ``metadata_json``,
``model_wrong``, ``retracted``, ``flagged``, ``total_verified`` ...), its ``context`` object (whose
``context_json`` holds the context inputs), an ``anon_uid`` and its ``validations`` (``[label, mode,
anon validator id, metadata?]`` each). ``input_json``/``context_json`` are JSON-encoded strings (an object is
accepted too). The file is the JSON array the endpoint returns, or the same objects one per line.

The example is the union of the context's inputs and the example's inputs (with their target, e.g.
``label``), read as the ``dynabench`` format reads Dynabench rows (label spellings, an empty context of a
single-input task). Rule: an example its writer retracted is left out and counted; the rest are kept with
``model_wrong``, ``flagged``, ``tag``, ``anon_uid`` and the validation labels under ``metadata``.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from dynadesk.errors import JSONDepthError, ValidationError
from dynadesk.formats.base import Dropped, SourceRow
from dynadesk.formats.dynabench import convert_dynabench
from dynadesk.formats.jsonl import read_jsonl_rows
from dynadesk.formats.source import open_source, read_source_bytes
from dynadesk.jsonio import loads_bounded
from dynadesk.tasks import Task

RETRACTED = "examples retracted by their writer (retracted: true)"
_KEPT = ("tag", "model_wrong", "flagged", "anon_uid", "total_verified", "model_endpoint_name")


def _starts_with_array(path: Path) -> bool:
    with open_source(path) as fh:
        head = fh.read(4096).lstrip()
    return head[:1] == b"["


def is_export_array(path: Path) -> bool:
    """A JSON array whose first example carries ``input_json`` (the endpoint's own output); JSON lines are
    recognised by their first object's keys instead (see the registry's hook)."""
    try:
        with open_source(path) as fh:
            head = fh.read(1 << 16).lstrip()
    except (OSError, ValidationError):
        return False
    return head[:1] == b"[" and re.match(rb'\[\s*\{', head) is not None and b'"input_json"' in head


def read_export_rows(path: Path, problems: list[str]) -> Iterator[SourceRow]:
    """Each exported example, located as ``[i]`` in an array or ``line N`` in JSON lines."""
    if not _starts_with_array(path):
        yield from read_jsonl_rows(path, problems)
        return
    try:
        doc = loads_bounded(read_source_bytes(path).decode("utf-8"), str(path))
    except UnicodeDecodeError as exc:
        raise ValidationError(f"{path}: not valid UTF-8 (byte {exc.start}); nothing was imported") from exc
    except json.JSONDecodeError as exc:
        raise ValidationError(f"{path}: line {exc.lineno}: not valid JSON ({exc.msg} at column {exc.colno})"
                              "; nothing was imported") from exc
    except JSONDepthError as exc:
        raise ValidationError(f"{path}: {exc}") from exc
    for i, row in enumerate(doc, 1):
        yield SourceRow(f"example [{i - 1}]", row, str(i))


def _object(value: Any, name: str) -> dict[str, Any]:
    if value is None or value == "":
        return {}
    if isinstance(value, str):
        try:
            value = loads_bounded(value, f"field '{name}'")
        except json.JSONDecodeError as exc:
            raise ValueError(f"field '{name}' is not valid JSON ({exc.msg})") from exc
    if not isinstance(value, dict):
        raise ValueError(f"field '{name}' must hold a JSON object")
    return value


def convert_dynabench_export(task: Task, row: dict[str, Any]) -> dict[str, Any] | Dropped:
    if row.get("retracted") is True:
        return Dropped(RETRACTED)
    if "input_json" not in row:
        raise ValueError("no 'input_json' field (not a Dynabench round export row)")
    context = row.get("context")
    inputs = _object(context.get("context_json") if isinstance(context, dict) else row.get("context_json"),
                     "context_json")
    inputs.update(_object(row["input_json"], "input_json"))
    meta = {k: row[k] for k in _KEPT if row.get(k) is not None}
    validations = row.get("validations")
    if isinstance(validations, list):
        meta["validations"] = [v[0] if isinstance(v, list) and v else v for v in validations]
    example_meta = _object(row.get("metadata_json"), "metadata_json")
    if example_meta:
        meta["example_metadata"] = example_meta
    out: dict[str, Any] = {**inputs, "metadata": meta}
    if row.get("id") is not None:
        out["id"] = str(row["id"])
    return convert_dynabench(task, out)
