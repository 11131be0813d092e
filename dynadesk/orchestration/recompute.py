"""The host's own deterministic metrics: recomputed from a run folder, never taken from the worker.

The worker runs beside the model's code (a handler, a pickle), so it is given no gold at all: only
the model's view of the data (ids and input fields, :mod:`.model_view`). Every deterministic
figure the workspace stores, a bundle signs or an audit checks is therefore computed here, on
the host, from two things the host can check: the run's ``predictions.jsonl`` and the gold
labels of the data files the host itself wrote (``data/``, each checked against the spec's
sha256). The worker's ``metrics.json`` holds its measured figures only; a deterministic row in
it fails the run.

One function is the whole boundary, :func:`verified_rows`; every store path calls it
(``evaluate.store_results``, which the local runner, the Docker runner and the queue's
``collect`` all end in), and ``bundle create`` and the audit call it again on the run folder.
It reuses the evaluator's pure-stdlib metric code (``dynadesk.evaluator.metrics``) in the
order the worker once computed them in, so values are bit-identical to runs recorded before.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from dynadesk.errors import EvaluationError
from dynadesk.evaluator import metrics as M
from dynadesk.evaluator.schema import (
    METRIC_UNITS,
    DatasetSpec,
    Spec,
    SpecError,
    metric_row,
)
from dynadesk.orchestration.folder import RunFolder
from dynadesk.orchestration.model_view import read_spec_data

__all__ = ["MISMATCH_VERDICT", "HostResults", "ResultMismatch", "check_worker_measured_only", "check_worker_rows",
           "has_spec", "host_rows", "read_predictions", "recompute", "stored_rows_checked", "tag_rows",
           "verified_rows"]

MISMATCH_VERDICT = "mismatch"
MAX_NAMED = 10  # ids named in one message; the rest are counted


class ResultMismatch(EvaluationError):
    """The run's results do not hold together (verdict ``mismatch``): the message names the ids or the metric."""

    def __init__(self, message: str):
        super().__init__(message, verdict=MISMATCH_VERDICT)


def _named(ids: Sequence[str]) -> str:
    shown = ", ".join(ids[:MAX_NAMED])
    return shown + (f" and {len(ids) - MAX_NAMED} more" if len(ids) > MAX_NAMED else "")


def load_gold(data_dir: Path, ds: DatasetSpec) -> list[dict[str, Any]]:
    """The examples of one spec dataset, from the host-written data file, checked against the spec's sha256."""
    path, raw = read_spec_data(data_dir, ds, ResultMismatch, "the gold file")
    try:
        return [json.loads(line) for line in raw.decode("utf-8").splitlines() if line.strip()]
    except ValueError as exc:
        raise ResultMismatch(f"dataset '{ds.name}': {path} is not JSON lines: {exc}") from exc


def read_predictions(path: Path, gold: Mapping[str, Sequence[Mapping[str, Any]]]
                     ) -> dict[str, dict[Any, Any]]:
    """``{dataset: {id: prediction}}`` from ``predictions.jsonl``: exactly one record per gold example id.

    A duplicate record (even with the same prediction), a missing id or a record for a dataset or
    id the spec does not hold raises :class:`ResultMismatch` naming them (``dataset/id``)."""
    expected = {name: {ex.get("id") for ex in exs} for name, exs in gold.items()}
    preds: dict[str, dict[Any, Any]] = {name: {} for name in gold}
    dupes: list[str] = []
    unknown: list[str] = []
    try:
        lines = Path(path).read_text(encoding="utf-8").splitlines()
    except (OSError, UnicodeDecodeError) as exc:
        raise ResultMismatch(f"cannot read the predictions file {path}: {exc}") from exc
    for n, line in enumerate(lines, 1):
        if not line.strip():
            continue
        try:
            row = json.loads(line)
            name, ex_id, pred = row["dataset"], row["id"], row["prediction"]
            known = isinstance(name, str) and name in expected and ex_id in expected[name]
        except (ValueError, KeyError, TypeError) as exc:
            raise ResultMismatch(f"{path} line {n} is not a prediction record: {exc}") from exc
        key = f"{name}/{ex_id}"
        if not known:
            unknown.append(key)
        elif ex_id in preds[name]:
            dupes.append(key)
        else:
            preds[name][ex_id] = pred
    missing = [f"{name}/{ex.get('id')}" for name, exs in gold.items() for ex in exs if ex.get("id") not in preds[name]]
    problems = [f"{label} prediction ids: {_named(ids)}" for label, ids in
                (("duplicate", dupes), ("missing", missing), ("unknown", unknown)) if ids]
    if problems:
        raise ResultMismatch(f"{path} must hold exactly one prediction per example id; " + "; ".join(problems))
    return preds


def host_rows(spec: Spec, gold: Mapping[str, Sequence[Mapping[str, Any]]],
              preds: Mapping[str, Mapping[Any, Any]]) -> tuple[list[dict[str, Any]], list[str]]:
    """The deterministic metric rows and notes of a run (the only place they are computed).

    Perf and the secondary metrics per test set, robustness and fairness (with their coverage rows),
    and the whole-run values, in the order the worker computed them before it lost the gold (runs
    recorded then keep bit-identical float sums)."""
    task = spec.task
    rows: list[dict[str, Any]] = []
    notes: list[str] = []
    per_metric: dict[str, list[float]] = {}
    tests = [d for d in spec.datasets if d.role == "test"]
    try:
        for ds in tests:
            exs = gold[ds.name]
            scores = M.task_score(task, [preds[ds.name][ex["id"]] for ex in exs], exs)
            for kind in ("robustness", "fairness"):
                derived = [d for d in spec.datasets if d.derived_from == ds.name and d.kind == kind]
                if not derived:
                    notes.append(f"{ds.name}: no {kind} perturbation sets, {kind} not measured")
                    continue
                by_source: dict[str, list[Any]] = {}
                for d in derived:
                    for ex in gold[d.name]:
                        src = (ex.get("metadata") or {}).get("source_id")
                        if src is None:
                            raise ResultMismatch(f"dataset '{d.name}': example '{ex['id']}' lacks "
                                                 "metadata.source_id")
                        by_source.setdefault(src, []).append(preds[d.name][ex["id"]])
                originals = {ex["id"]: preds[ds.name][ex["id"]] for ex in exs}
                try:
                    scores.update(M.consistency_rows(kind, M.consistency_report(task, originals, by_source)))
                except M.MetricError as exc:
                    notes.append(f"{ds.name}: {kind} not measured: {exc}")
            for metric, value in scores.items():
                rows.append(metric_row(ds.name, metric, value))
                per_metric.setdefault(metric, []).append(value)
    except M.MetricError as exc:
        raise ResultMismatch(f"the predictions cannot be scored: {exc}") from exc
    for metric, values in per_metric.items():
        if len(values) == len(tests):
            rows.append(metric_row("", metric, M.run_value(metric, values)))
    return rows, notes


def tag_rows(spec: Spec, gold: Mapping[str, Sequence[Mapping[str, Any]]],
             preds: Mapping[str, Mapping[Any, Any]]) -> dict[str, dict[str, dict[str, float]]]:
    """Per test set, the per-tag results (``metrics.tag_breakdown``) from the host's own inputs."""
    out = {}
    for ds in (d for d in spec.datasets if d.role == "test"):
        exs = gold[ds.name]
        try:
            out[ds.name] = M.tag_breakdown(spec.task, [preds[ds.name][ex["id"]] for ex in exs], exs)
        except M.MetricError as exc:
            raise ResultMismatch(f"dataset '{ds.name}': the per-tag results cannot be computed: {exc}") from exc
    return out


def _key(row: Mapping[str, Any]) -> tuple[str, str]:
    return str(row.get("dataset")), str(row.get("metric"))


def _where(key: tuple[str, str]) -> str:
    return f"'{key[1]}'" + (f" on '{key[0]}'" if key[0] else " (whole run)")


def check_worker_rows(host: Iterable[Mapping[str, Any]], worker: Iterable[Mapping[str, Any]],
                      who: str = "the worker reported") -> None:
    """Deterministic rows someone else holds (a stored run's) must be exactly the host's: same metrics, same values.

    A deterministic metric the worker reports but the host does not compute, one it leaves out, or any
    value that differs raises :class:`ResultMismatch` naming the metric and both values."""
    mine = {_key(r): float(r["value"]) for r in host}
    theirs: dict[tuple[str, str], float] = {}
    for r in worker:
        metric = str(r.get("metric"))
        if metric not in METRIC_UNITS:
            raise ResultMismatch(f"{who} an unknown metric '{metric}'")
        if METRIC_UNITS[metric][1]:
            if _key(r) in theirs:
                raise ResultMismatch(f"{who} {_where(_key(r))} twice")
            theirs[_key(r)] = float(r["value"])
    differ = [f"metric {_where(key)}: the host computes "
              f"{'nothing' if mine.get(key) is None else repr(mine.get(key))} from the predictions, "
              f"{who} {'nothing' if theirs.get(key) is None else repr(theirs.get(key))}"
              for key in sorted(set(mine) | set(theirs)) if mine.get(key) != theirs.get(key)]
    if differ:
        raise ResultMismatch("; ".join(differ[:MAX_NAMED]) + (f"; and {len(differ) - MAX_NAMED} more metrics"
                                                               if len(differ) > MAX_NAMED else ""))


def _inputs(spec_file: Path, data_dir: Path, predictions_file: Path
            ) -> tuple[Spec, dict[str, list[dict[str, Any]]], dict[str, dict[Any, Any]]]:
    """The spec, the gold examples (checked against the spec) and the predictions (one per id) of a run."""
    try:
        spec = Spec.read(spec_file)
    except SpecError as exc:
        raise ResultMismatch(f"the run's spec cannot be read: {exc}") from exc
    gold = {ds.name: load_gold(data_dir, ds) for ds in spec.datasets}
    return spec, gold, read_predictions(predictions_file, gold)


def recompute(spec_file: Path, data_dir: Path, predictions_file: Path) -> tuple[list[dict[str, Any]], list[str]]:
    """The host's deterministic rows and notes for a run folder (spec, data and predictions as stored)."""
    spec, gold, preds = _inputs(spec_file, data_dir, predictions_file)
    return host_rows(spec, gold, preds)


@dataclass(frozen=True)
class HostResults:
    """What the host stores for a run: the metric rows, the notes and the per-tag results."""

    rows: list[dict[str, Any]]
    notes: list[str]
    tags: dict[str, dict[str, dict[str, float]]]


def check_worker_measured_only(host: Iterable[Mapping[str, Any]], worker: Iterable[Mapping[str, Any]],
                               who: str = "the worker reported") -> None:
    """The worker reports measured figures only; an unknown metric, a deterministic one (the host's alone: the
    worker never sees the gold) or a measured one twice raises :class:`ResultMismatch` naming it."""
    mine = {_key(r): float(r["value"]) for r in host}
    seen: set[tuple[str, str]] = set()
    differ = []
    for r in worker:
        metric = str(r.get("metric"))
        if metric not in METRIC_UNITS:
            raise ResultMismatch(f"{who} an unknown metric '{metric}'")
        if _key(r) in seen:
            raise ResultMismatch(f"{who} {_where(_key(r))} twice")
        seen.add(_key(r))
        if METRIC_UNITS[metric][1]:
            differ.append(f"metric {_where(_key(r))}: the host computes "
                          f"{'nothing' if mine.get(_key(r)) is None else repr(mine[_key(r)])} from the predictions, "
                          f"{who} {r.get('value')!r}")
    if differ:
        raise ResultMismatch("; ".join(differ[:MAX_NAMED]) + (f"; and {len(differ) - MAX_NAMED} more metrics"
                                                               if len(differ) > MAX_NAMED else "")
                             + " (deterministic metrics are the host's alone: the worker never sees the gold and "
                               "reports none)")


def verified_rows(spec_file: Path, data_dir: Path, predictions_file: Path,
                  worker_rows: Sequence[Mapping[str, Any]]) -> HostResults:
    """THE trust boundary for stored metrics: what to store for a run, given the worker's ``metrics.json`` rows.

    The worker is given no gold (:mod:`.model_view`), so every deterministic value, note and per-tag result is
    the host's (:func:`host_rows`, :func:`tag_rows`); the worker's rows are its measured figures only
    (throughput, latency, memory: bounded separately by the caller, :mod:`.bounds`), and a deterministic row
    from it is refused (:func:`check_worker_measured_only`). Rows are the host's then the worker's, the order a
    run always stored. Raises :class:`ResultMismatch` (verdict ``mismatch``)."""
    spec, gold, preds = _inputs(spec_file, data_dir, predictions_file)
    host, notes = host_rows(spec, gold, preds)
    check_worker_measured_only(host, worker_rows)
    return HostResults([dict(r) for r in host] + [dict(r) for r in worker_rows], notes, tag_rows(spec, gold, preds))


def has_spec(run_dir: str | Path | None) -> bool:
    """Whether ``run_dir`` is an orchestration run folder (``spec/spec.json``), which the host can re-score."""
    return bool(run_dir) and RunFolder(Path(str(run_dir))).spec_file.is_file()


def stored_rows_checked(run_dir: str | Path | None, stored: Sequence[Mapping[str, Any]],
                        who: str = "the workspace database stores") -> list[dict[str, Any]]:
    """``stored`` with every deterministic value replaced by the host's, recomputed from ``run_dir``.

    For signing (``bundle create``) and auditing a stored run: a stored deterministic figure that differs
    from what the run folder's predictions give raises :class:`ResultMismatch` naming the metric and both
    values. A folder without ``spec/spec.json`` (runs made before the run-folder layout) is returned as
    stored: there is nothing to recompute from."""
    if not has_spec(run_dir):
        return [dict(r) for r in stored]
    folder = RunFolder(Path(str(run_dir)))
    host, _notes = recompute(folder.spec_file, folder.data_dir, folder.predictions_file)
    check_worker_rows(host, stored, who=who)
    mine = {_key(r): r for r in host}
    return [dict(mine.get(_key(r), r)) for r in stored]
