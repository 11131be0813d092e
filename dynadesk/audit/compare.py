"""Compare a bundle's signed fields with the results of a run, field by field.

Deterministic fields (predictions digest, Merkle root, performance, robustness,
fairness) must be identical bit for bit; measured fields (throughput, latency,
memory) must lie within tolerance of the re-measurement on the same hardware class, and
are "not comparable" on another class or when the re-measurement was noisy. A timed claim that understates the
model (slower than re-measured) from a run its own signed summary flags noisy is "not comparable" too: competing
load only slows a run, so that gap is the noise the submitter's run recorded, and it flatters no one; a claim that
flatters the model is judged whatever the bundle says of its noise. Whether a metric is
deterministic is decided by the evaluator's schema as well as by the bundle, so a
bundle cannot relabel a score as "measured" to buy itself a tolerance.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from dynadesk.audit import tolerances as tol
from dynadesk.audit.described import backend_check
from dynadesk.audit.hardware import memory_definition
from dynadesk.audit.report import (
    DETERMINISTIC,
    DIFFERS,
    ENVIRONMENT,
    IDENTICAL,
    MEASURED,
    NOT_COMPARABLE,
    WITHIN,
    Check,
)
from dynadesk.canonical import digest, file_sha256
from dynadesk.evaluator.metric_registry import load_independent, timed_metrics
from dynadesk.evaluator.schema import METRIC_UNITS
from dynadesk.scoring.classes import noisy_in_environment
from dynadesk.sync.format.parts import Metric
from dynadesk.sync.format.payload import Payload

if TYPE_CHECKING:
    from dynadesk.store.evaluations import EvaluationRecord

HARDWARE_KEYS = ("machine", "cpu_model", "threads", "cuda_devices")
SOFTWARE_KEYS = ("python", "torch", "transformers", "in_container")


@dataclass
class RunResults:
    """What one run produced, in the terms a bundle uses."""

    predictions_digest: str
    merkle_root: str
    count: int
    labels_digest: str  # over (dataset, id, label/answer) only: what must not depend on the batch size
    metrics: dict[tuple[str, str], float]
    environment: dict[str, Any] = field(default_factory=dict)
    source: str = ""
    examples_digest: str = ""  # over the sorted (dataset, id, prediction) records: independent of file order


def metric_field(dataset: str, metric: str) -> str:
    return f"metrics[{dataset or '(run)'}].{metric}"


def _label(prediction: Any) -> Any:
    if isinstance(prediction, dict):
        return prediction.get("label", prediction.get("answer"))
    return prediction


def read_results(predictions: Path, metrics: dict[tuple[str, str], float], environment: dict[str, Any],
                 source: str) -> RunResults:
    """Digest, Merkle root and label digest of a predictions file, plus the run's metric values."""
    from dynadesk.sync.format.merkle import read_predictions

    tree = read_predictions(predictions)
    labels = [[r.get("dataset"), r.get("id"), _label(r.get("prediction"))] for r in tree.records
              if isinstance(r, dict)]
    records = sorted(json.dumps(r, sort_keys=True) for r in tree.records)
    return RunResults("sha256:" + file_sha256(predictions), tree.root_hex, tree.count, digest(labels), metrics,
                      environment, source, digest(records))


def predictions_files(record: EvaluationRecord) -> list[Path]:
    """Where a run may keep ``predictions.jsonl`` (the run folder's layout: :class:`RunFolder`)."""
    from dynadesk.orchestration.folder import RunFolder

    return RunFolder(Path(record.run_dir)).predictions_candidates() if record.run_dir else []


def results_from_record(record: EvaluationRecord) -> RunResults:
    """Results of a stored evaluation run (an audit re-run, or a run named with --against)."""
    from dynadesk.errors import PredictionsUnavailable

    path = next((p for p in predictions_files(record) if p.is_file()), None)
    if path is None:
        raise PredictionsUnavailable(f"run {record.id} kept no predictions file (run folder {record.run_dir})")
    metrics = {(m.dataset, m.metric): m.value for m in record.metrics}
    return read_results(path, metrics, record.environment, f"run {record.id}")


def results_from_out(out_dir: Path, source: str, values: list[dict[str, Any]]) -> RunResults:
    """Results of a worker's output folder (the pre-flight's unstored runs) with ``values``, the host's rows for
    it (``recompute.verified_rows``: the worker reports measured figures only)."""
    from dynadesk.evaluator.schema import ENVIRONMENT_FILE, PREDICTIONS_FILE, read_json

    env = read_json(out_dir / ENVIRONMENT_FILE, "environment file")
    metrics = {(v["dataset"], v["metric"]): float(v["value"]) for v in values}
    return read_results(out_dir / PREDICTIONS_FILE, metrics, env, source)


def _env_class(env: dict[str, Any], keys: tuple[str, ...]) -> dict[str, Any]:
    libs = env.get("libraries") or {}
    return {k: env.get(k, libs.get(k)) for k in keys}


def hardware_difference(expected_env: dict[str, Any], actual_env: dict[str, Any]) -> str:
    """'' when the hardware class (:func:`hardware_class_of`) is the same, else both classes."""
    from dynadesk.evaluator.environment import hardware_class_label, hardware_class_of

    if hardware_class_of(expected_env) == hardware_class_of(actual_env):
        return ""
    return f"another hardware class (bundle: {hardware_class_label(expected_env)}; " \
           f"here: {hardware_class_label(actual_env)})"


LOAD_INDEPENDENT = load_independent()
"""Measured metrics that competing CPU load does not move: judged even when the re-measurement was noisy."""

TIMED = timed_metrics()
BETTER_BY_UNIT = {"examples/s": 1.0, "tokens/s": 1.0, "ms": -1.0}
"""+1: a higher figure flatters the model (a rate), -1: a lower one does (a time). Competing load moves every timed
figure in the unflattering direction, which is what :func:`understated_by_noise` rests on."""


def understated_by_noise(payload: Payload, m: Metric, actual: float | None) -> str:
    """Why a timed claim cannot be judged, or '': it lies outside tolerance on the side that understates the model
    (a lower rate, a longer time than the auditor measured) and the bundle's own signed summary flags its run noisy.
    Setting that flag buys a forger nothing: a claim better than the re-measurement is judged all the same."""
    direction = BETTER_BY_UNIT.get(m.unit)
    noisy = noisy_in_environment(dict(payload.environment))
    if actual is None or m.metric not in TIMED or direction is None or not noisy:
        return ""
    rel, _source = tol.tolerance_for(payload, m.metric)
    if tol.within(actual, m.value, rel) or direction * (m.value - actual) >= 0:
        return ""
    return (f"the bundle's own run was flagged noisy ({'; '.join(noisy)}) and its claim is "
            f"{'below' if direction > 0 else 'above'} what the re-measurement gives: competing load only slows a "
            "run, so the gap is that noise (the claim understates the model; re-measure it: dynadesk eval --remeasure)")


def measured_comparability(payload: Payload, results: RunResults) -> str:
    """'' when measured claims can be judged against ``results``, else why not."""
    hw = hardware_difference(dict(payload.environment), results.environment)
    if hw:
        return hw
    summary = results.environment.get("measurement")
    if isinstance(summary, dict) and summary.get("noisy"):
        return f"{results.source}'s re-measurement was noisy ({'; '.join(summary.get('noisy_measurements', []))}); " \
               "audit again on a quiet machine"
    return ""


def memory_definition_difference(expected_env: dict[str, Any], results: RunResults) -> str:
    """'' when the bundle and the re-run measured memory the same way, else both definitions.

    The definition follows from the evaluator's code: a bundle that names the re-run's evaluator version
    but another definition has had its environment edited (to dodge the memory check), so it is judged."""
    a, b = memory_definition(expected_env), memory_definition(results.environment)
    version = expected_env.get("evaluator_version")
    if a == b or (version is not None and version == results.environment.get("evaluator_version")):
        return ""
    return f"memory is defined differently (bundle: {a}; {results.source}: {b})"


def environment_checks(expected_env: dict[str, Any], actual_env: dict[str, Any]) -> list[Check]:
    out = []
    for name, keys in (("environment.hardware", HARDWARE_KEYS), ("environment.software", SOFTWARE_KEYS)):
        a, b = _env_class(expected_env, keys), _env_class(actual_env, keys)
        if not any(v is not None for v in a.values()):
            out.append(Check(name, ENVIRONMENT, NOT_COMPARABLE, a, b, "the bundle records none of " + ", ".join(keys)))
            continue
        diffs = [k for k in keys if a[k] != b[k]]
        out.append(Check(name, ENVIRONMENT, DIFFERS if diffs else IDENTICAL, a, b,
                         ("different " + ", ".join(diffs)) if diffs else "same " + ", ".join(keys)))
    return out


def _exact(field_name: str, expected: Any, actual: Any, what: str) -> Check:
    if expected == actual:
        return Check(field_name, DETERMINISTIC, IDENTICAL, expected, actual)
    return Check(field_name, DETERMINISTIC, DIFFERS, expected, actual, what)


def _same_bits(a: float, b: float) -> bool:
    return float(a).hex() == float(b).hex()


def compare_predictions(payload: Payload, results: RunResults) -> list[Check]:
    p = payload.predictions
    return [
        _exact("predictions.digest", p.digest, results.predictions_digest,
               f"{results.source} wrote other predictions.jsonl bytes"),
        _exact("predictions.merkle_root", p.merkle_root, results.merkle_root,
               f"{results.source}: at least one per-example prediction differs (prove single ones with 'audit prove')"),
        _exact("predictions.count", p.count, results.count, f"{results.source} made another number of predictions"),
    ]


def compare_metric(payload: Payload, m: Metric, actual: float | None, hw_note: str,
                   source: str) -> Check:
    name = metric_field(m.dataset, m.metric)
    schema_det = METRIC_UNITS.get(m.metric, (None, None))[1]
    deterministic = m.deterministic or bool(schema_det)
    relabelled = (" (the bundle marks it measured, but the evaluator's schema says deterministic)"
                  if schema_det and not m.deterministic else "")
    if actual is None:
        return Check(name, DETERMINISTIC if deterministic else MEASURED, NOT_COMPARABLE, m.value, None,
                     f"{source} did not produce this value")
    if deterministic:
        if _same_bits(m.value, actual):
            return Check(name, DETERMINISTIC, IDENTICAL, m.value, actual, relabelled.strip(" ()"))
        return Check(name, DETERMINISTIC, DIFFERS, m.value, actual,
                     f"{m.unit}: {source} gives {actual!r}, the bundle says {m.value!r}"
                     f" (difference {actual - m.value:+.6g}){relabelled}")
    rel, source_kind = tol.tolerance_for(payload, m.metric)
    change = tol.relative_change(actual, m.value)
    shown = f"{change:+.1%}" if change is not None else "n/a"
    note = f"{m.unit}: the bundle claims {shown} vs the re-measurement; tolerance ±{rel:.0%} ({source_kind})"
    if hw_note:
        return Check(name, MEASURED, NOT_COMPARABLE, m.value, actual, f"{note}; {hw_note}", rel)
    verdict = WITHIN if tol.within(actual, m.value, rel) else DIFFERS
    return Check(name, MEASURED, verdict, m.value, actual, note, rel)


def thin_percentiles(results: RunResults) -> set[str]:
    """Latency metrics whose percentile rests on too few samples in the re-measurement (``latency_p99_ms``...).

    A nearest-rank p99 over 150 calls is the second-slowest call: one scheduler hiccup in either run moves it
    several-fold, so no tolerance can hold it; the auditor's own sample count decides (the claim's cannot)."""
    summary = results.environment.get("measurement")
    flagged = summary.get("latency_too_few_samples") if isinstance(summary, dict) else None
    return {f"latency_{p}_ms" for p in flagged or [] if isinstance(p, str)}


def unstable_percentiles(results: RunResults) -> dict[str, float]:
    """Latency metrics the re-measurement could not hold within the audit's own tolerance, with their spread.

    Each percentile is taken again over every trial alone: when the trials disagree by more than the policy
    tolerance (:data:`tolerances.POLICY_MAX`, never the bundle's declared one, which a submitter could set to 0
    to make every claim unjudgeable), the auditor's figure cannot falsify the claim either way."""
    summary = results.environment.get("measurement")
    spreads = summary.get("latency_trial_spread") if isinstance(summary, dict) else None
    out = {}
    for p, value in (spreads or {}).items():
        metric = f"latency_{p}_ms"
        if isinstance(value, (int, float)) and value > tol.POLICY_MAX.get(metric, tol.FALLBACK):
            out[metric] = float(value)
    return out


def compare_results(payload: Payload, results: RunResults) -> list[Check]:
    """Every prediction and metric field of the bundle against ``results``; plus values the bundle lacks."""
    hw_note = measured_comparability(payload, results)
    same_class = not hardware_difference(dict(payload.environment), results.environment)
    thin = thin_percentiles(results)
    unstable = unstable_percentiles(results)
    checks = compare_predictions(payload, results)
    seen = set()
    for m in payload.metrics:
        key = (m.dataset, m.metric)
        seen.add(key)
        note = "" if same_class and m.metric in LOAD_INDEPENDENT else hw_note
        if not note and m.metric in thin and not METRIC_UNITS.get(m.metric, (None, None))[1]:
            note = (f"{results.source}'s {m.metric.split('_')[1]} rests on too few samples "
                    "(fewer than 5 calls above it) to be reproduced")
        if not note and m.metric in unstable:
            note = (f"{results.source}'s {m.metric.split('_')[1]} moved {unstable[m.metric]:.0%} between its "
                    f"own trials (more than the audit's ±{tol.POLICY_MAX.get(m.metric, tol.FALLBACK):.0%}): "
                    "audit again on a quieter machine")
        if not note and m.metric == "memory":
            note = memory_definition_difference(dict(payload.environment), results)
        if not note:
            note = understated_by_noise(payload, m, results.metrics.get(key))
        checks.append(compare_metric(payload, m, results.metrics.get(key), note, results.source))
    for (ds, metric), value in sorted(results.metrics.items()):
        if (ds, metric) not in seen:
            kind = DETERMINISTIC if METRIC_UNITS.get(metric, (None, False))[1] else MEASURED
            checks.append(Check(metric_field(ds, metric), kind, NOT_COMPARABLE, None, value,
                                f"{results.source} produced it; the bundle does not state it"))
    checks += environment_checks(dict(payload.environment), results.environment)
    return checks



def compare_runs(a: RunResults, b: RunResults, datasets_a: list[str] | None = None,
                 datasets_b: list[str] | None = None) -> list[Check]:
    """Two stored runs side by side (e.g. the Docker and the local runner on the same job).

    ``a`` plays the expected side. Predictions and deterministic metrics must be identical
    bit for bit; measured metrics are shown with their relative change and never fail. Runs
    whose test sets were listed in another order write predictions.jsonl in another order and
    sum whole-run means in another order, so then the per-example records decide, and a
    whole-run mean that differs in the last bits while every test set's value is identical is
    "not comparable" rather than a failure.
    """
    reordered = bool(datasets_a and datasets_b and datasets_a != datasets_b
                     and sorted(datasets_a) == sorted(datasets_b))
    order_note = (f"the runs list their test sets in another order ({', '.join(datasets_a or [])} vs "
                  f"{', '.join(datasets_b or [])}); the per-example records decide") if reordered else ""

    def file_check(name: str, x: Any, y: Any, what: str) -> Check:
        if reordered and x != y:
            return Check(name, DETERMINISTIC, NOT_COMPARABLE, x, y, order_note)
        return _exact(name, x, y, what)

    checks = [
        file_check("predictions.digest", a.predictions_digest, b.predictions_digest,
                   f"{b.source} wrote other predictions.jsonl bytes than {a.source}"),
        file_check("predictions.merkle_root", a.merkle_root, b.merkle_root,
                   f"at least one per-example prediction of {b.source} differs from {a.source}"),
        _exact("predictions.count", a.count, b.count, f"{b.source} made another number of predictions"),
        _exact("predictions.per_example", a.examples_digest, b.examples_digest,
               f"at least one (dataset, id, prediction) record of {b.source} differs from {a.source}"),
    ]
    per_dataset_same = all(_same_bits(a.metrics[k], b.metrics[k]) for k in set(a.metrics) & set(b.metrics)
                           if k[0] and METRIC_UNITS.get(k[1], ("", False))[1])
    for key in sorted(set(a.metrics) | set(b.metrics)):
        name = metric_field(*key)
        unit, deterministic = METRIC_UNITS.get(key[1], ("", False))
        kind = DETERMINISTIC if deterministic else MEASURED
        x, y = a.metrics.get(key), b.metrics.get(key)
        if x is None or y is None:
            missing = a.source if x is None else b.source
            checks.append(Check(name, kind, NOT_COMPARABLE, x, y, f"{missing} did not produce this value"))
        elif deterministic:
            same = _same_bits(x, y)
            if not same and reordered and not key[0] and per_dataset_same:
                checks.append(Check(name, kind, NOT_COMPARABLE, x, y, f"{unit}: difference {y - x:+.6g}, a mean "
                                    "summed in another order; every test set's value is identical"))
                continue
            checks.append(Check(name, kind, IDENTICAL if same else DIFFERS, x, y,
                                "" if same else f"{unit}: difference {y - x:+.6g}"))
        else:
            change = tol.relative_change(x, y)
            shown = f"{change:+.1%}" if change is not None else "n/a"
            checks.append(Check(name, kind, NOT_COMPARABLE, x, y,
                                f"{unit}: {shown}; measured, so it varies run to run and is not a "
                                f"reproducibility check"))
    backend = backend_check(a.environment, b.environment, a.source, b.source, "backend")
    return [backend, *checks, *environment_checks(a.environment, b.environment)]
