"""What a model may see of a run's data: each example's id and the task's input fields, nothing else.

Why: code from the model folder (a handler's ``handler.py``, a pickle, custom modelling code) runs in the
worker's process, so whatever the worker is given, the model can read. The host therefore never gives the
worker the gold: ``data/`` (the full examples, labels and answers, whose sha256 the spec records and a bundle
signs) stays on the host, and the worker gets ``inputs/``, a copy of each data file cut down to ``id`` and the
task's declared inputs (a whitelist: labels, answers, SQuAD 2.0 flags, tags, perturbation sources and any field
the task does not name as an input are left out, as is an input that shares its name with the task's gold
field). The host computes every deterministic figure from the predictions and ``data/``
(:mod:`dynadesk.orchestration.recompute`, :mod:`dynadesk.scoring.bootstrap`, :mod:`.squad_dev`); the load
generator issues the timed queries from ``inputs/`` too, so the timed windows carry no gold either.

One function writes the view (:func:`write_model_view`); every path that starts a worker calls it: the run
folder's ``open_inputs`` (local and Docker runs, the queue worker's copy of a job), and the audit pre-flight's
repeats.
"""

from __future__ import annotations

import hashlib
import json
import os
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from dynadesk.errors import DynaDeskError, RunFolderError
from dynadesk.evaluator.kinds import kind_of
from dynadesk.evaluator.schema import DatasetSpec, Spec

__all__ = ["view_fields", "view_row", "write_model_view"]


def view_fields(task: Mapping[str, Any]) -> tuple[str, ...]:
    """The fields of an example the model may see: ``id`` and the task's inputs, never its gold field."""
    gold = kind_of(task).gold_field
    inputs = [str(f["name"]) for f in task.get("inputs") or () if str(f["name"]) not in (gold, "id")]
    return ("id", *inputs)


def view_row(fields: tuple[str, ...], example: Mapping[str, Any]) -> dict[str, Any]:
    """One example as the model sees it (fields it lacks stay absent, as optional inputs do)."""
    return {f: example[f] for f in fields if f in example}


def read_spec_data(data_dir: Path, ds: DatasetSpec, error: type[DynaDeskError], what: str,
                   remedy: str = "") -> tuple[Path, bytes]:
    """One spec dataset's host-written file (``data_dir/<file>``) and its bytes, refused with ``error`` (naming the
    dataset and the file, called ``what``, then ``remedy``) when it cannot be read or is not the bytes the spec's
    sha256 names: the model's view and the host's recomputation read exactly the data the run signs."""
    path = Path(data_dir) / ds.file
    try:
        raw = path.read_bytes()
    except OSError as exc:
        raise error(f"dataset '{ds.name}': cannot read {what} {path}: {exc}") from exc
    if hashlib.sha256(raw).hexdigest() != ds.sha256:
        raise error(f"dataset '{ds.name}': {path} does not match the spec's sha256 {ds.sha256}{remedy}")
    return path, raw


def write_model_view(spec: Spec, data_dir: Path, view_dir: Path) -> None:
    """Write ``view_dir/<file>`` for every dataset of ``spec`` from ``data_dir/<file>`` (checked against the spec's
    sha256 first: the view is cut from exactly the data the run signs), readable by the sandbox's user."""
    fields = view_fields(spec.task)
    view_dir = Path(view_dir)
    view_dir.mkdir(exist_ok=True)
    for ds in spec.datasets:
        _, raw = read_spec_data(data_dir, ds, RunFolderError, "the host's data file", "; start a new run")
        lines = [json.dumps(view_row(fields, json.loads(line)), ensure_ascii=False, sort_keys=True)
                 for line in raw.decode("utf-8").splitlines() if line.strip()]
        target = view_dir / ds.file
        target.write_text("".join(line + "\n" for line in lines), encoding="utf-8")
        os.chmod(target, 0o644)
    os.chmod(view_dir, 0o755)
