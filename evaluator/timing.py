"""The run's speed figures: batch-1 and batched throughput and batch-1 latency per test set.

Each test set gets two measurements (:func:`dynadesk.evaluator.measurement.measure`):

* **batch-1** (Dynaboard's ``throughput``): one example per call, on an evenly spaced
  sample of ``latency_samples`` examples of the set; latency percentiles come from the
  same calls.
* **batched** (``throughput_batched``): the evaluator's own token-sorted batches of
  ``batch_size``, an evenly spaced selection of them covering ``batched_queries`` examples.

The run's aggregate (dataset ``''``) of a throughput is the harmonic mean of the test
sets' medians, i.e. examples per second when every test set gets the same number of
examples; of a latency percentile, the mean of the test sets' values (the same weighting).
"""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import Any
from typing import Protocol as TypingProtocol

from dynadesk.evaluator.measurement import Mark, Protocol, even_sample, latency, measure, median
from dynadesk.evaluator.schema import metric_row

LATENCY_METRICS = ("latency_p50_ms", "latency_p90_ms", "latency_p99_ms")
AGGREGATE = ("throughput: harmonic mean over the test sets of each set's median (examples/s at equal examples "
             "per set); latency percentiles: mean over the test sets")


class Timed(TypingProtocol):
    """What :func:`measure_run` needs of the worker."""

    spec: Any

    def predict(self, examples: list[dict[str, Any]]) -> list[dict[str, Any]]: ...

    def batches(self, examples: list[dict[str, Any]]) -> list[list[dict[str, Any]]]: ...


def harmonic_mean(values: list[float]) -> float:
    return len(values) / sum(1.0 / v for v in values) if values and all(v > 0 for v in values) else 0.0


def _labelled(mark: Mark | None, **label: Any) -> Mark | None:
    """``mark`` with the test set and mode added to each window edge."""
    if mark is None:
        return None
    return lambda edge: mark({**label, **edge})


def measure_set(worker: Timed, examples: list[dict[str, Any]], threads: int,
                sync: Callable[[], None] | None, mark: Mark | None = None, name: str = "") -> dict[str, Any]:
    """Batch-1 and batched measurements of one test set (``mark``: see :func:`measurement.measure`)."""
    s = worker.spec.settings
    one = Protocol(s.warmup, s.latency_samples, float(s.min_seconds), s.trials, s.noise_retries, threads)
    sample = [[examples[i]] for i in even_sample(len(examples), s.latency_samples)]
    stats = getattr(getattr(worker, "adapter", None), "stats", None)  # a generative adapter's (generative.py)
    if stats is not None:
        stats.reset()
    batch1 = measure(worker.predict, sample, one, sync, _labelled(mark, set=name, mode="batch1"))
    gen: dict[str, float] = {}
    if stats is not None and stats.first_token_seconds:
        gen["time_to_first_token_ms"] = 1000.0 * median(stats.first_token_seconds)
    lat = latency(batch1.pop("per_call_ms"), batch1.pop("per_trial_ms"))
    batches = worker.batches(examples)
    wanted = min(len(batches), math.ceil(s.batched_queries / s.batch_size))
    chosen = [batches[i] for i in even_sample(len(batches), wanted)]
    many = Protocol(min(s.warmup, len(chosen)), s.batched_queries, float(s.min_seconds), s.trials, s.noise_retries,
                    threads)
    if stats is not None:
        stats.reset()
    batched = measure(worker.predict, chosen, many, sync, _labelled(mark, set=name, mode="batched"))
    if stats is not None and stats.tokens and stats.seconds > 0:
        gen["tokens_per_second"] = stats.tokens / stats.seconds
    batched.pop("per_call_ms")
    batched.pop("per_trial_ms")
    batched["batch_size"] = s.batch_size
    batch1["batch_size"] = 1
    return {"batch1": batch1, "batched": batched, "latency": lat, "generation": gen}


def measure_run(worker: Timed, tests: dict[str, list[dict[str, Any]]], threads: int,
                sync: Callable[[], None] | None = None, mark: Mark | None = None) -> dict[str, Any]:
    """The in-process windows (the protocol before the host issued the timed queries; kept for the bench's
    comparison): metric rows, profile entries and summary of every test set's timing."""
    per_set = {name: measure_set(worker, exs, threads, sync, mark, name) for name, exs in tests.items()}
    return assemble(per_set, worker.spec.settings)


def timed_rows(per_set: dict[str, dict[str, Any]]) -> list[dict[str, Any]]:
    """The metric rows of the timed windows: per test set, and the run's aggregates."""
    rows = []
    for name, m in per_set.items():
        rows += [metric_row(name, "throughput", m["batch1"]["median"]),
                 metric_row(name, "throughput_batched", m["batched"]["median"])]
        rows += [metric_row(name, metric, m["latency"][metric.removeprefix("latency_")]) for metric in LATENCY_METRICS]
    b1 = harmonic_mean([m["batch1"]["median"] for m in per_set.values()])
    bb = harmonic_mean([m["batched"]["median"] for m in per_set.values()])
    lat = {metric: sum(m["latency"][metric.removeprefix("latency_")] for m in per_set.values()) / len(per_set)
           for metric in LATENCY_METRICS}
    rows += [metric_row("", "throughput", b1), metric_row("", "throughput_batched", bb)]
    for metric in ("tokens_per_second", "time_to_first_token_ms"):  # generation runs: per set, then the mean
        values = {name: m["generation"][metric] for name, m in per_set.items() if metric in (m.get("generation") or {})}
        if values and len(values) == len(per_set):
            rows += [metric_row(name, metric, v) for name, v in values.items()]
            rows.append(metric_row("", metric, sum(values.values()) / len(values)))
    rows += [metric_row("", metric, value) for metric, value in lat.items()]
    return rows


def assemble(per_set: dict[str, dict[str, Any]], s: Any) -> dict[str, Any]:
    """Metric rows, profile entries and the signed summary (environment.json) from each test set's
    ``{"batch1", "batched", "latency"}`` measurements (the host's, :mod:`dynadesk.orchestration.loadgen`,
    whose rows, :func:`timed_rows`, the host then finds unchanged in the worker's results)."""
    rows = timed_rows(per_set)
    b1 = harmonic_mean([m["batch1"]["median"] for m in per_set.values()])
    bb = harmonic_mean([m["batched"]["median"] for m in per_set.values()])
    lat = {metric: sum(m["latency"][metric.removeprefix("latency_")] for m in per_set.values()) / len(per_set)
           for metric in LATENCY_METRICS}
    noisy = [f"{name} {mode}: {'; '.join(m[mode]['noise']['reasons'])}" for name, m in per_set.items()
             for mode in ("batch1", "batched") if m[mode]["noisy"]]
    thin = sorted({p for m in per_set.values() for p in m["latency"]["too_few_samples"]})
    tails = {p: max(m["latency"]["trial_spread"].get(p, 0.0) for m in per_set.values())
             for p in ("p50", "p90", "p99")}
    host = all(m["batch1"].get("protocol", {}).get("issued_by") == "host" for m in per_set.values())
    clock = ("host-issued windows (the host's clock, issue to answer; every width sampled in proportion)" if host
             else "in-process timed windows")
    profile = {
        "throughput": {"value": b1, "unit": "examples/s", "batch_size": 1, "aggregate": AGGREGATE,
                       "method": f"median of {clock} of batch-1 queries per test set (Dynaboard's throughput)"},
        "throughput_batched": {"value": bb, "unit": "examples/s", "batch_size": s.batch_size, "aggregate": AGGREGATE,
                               "method": f"median of {clock} of the evaluator's token-sorted batches"},
        "latency": {**{m.removeprefix("latency_"): v for m, v in lat.items()}, "unit": "ms", "warmup": s.warmup,
                    "samples": sum(m["latency"]["samples"] for m in per_set.values()),
                    "too_few_samples": thin,
                    "method": ("issue-to-answer time on the host's clock" if host else
                               "per-call wall time (perf_counter_ns)") + " at batch size 1 after warm-up; "
                              "nearest-rank percentiles per test set, averaged over the test sets"},
        "measurement": {"datasets": per_set, "noisy": bool(noisy), "noisy_measurements": noisy,
                        "aggregate": AGGREGATE},
    }
    summary = {"noisy": bool(noisy), "noisy_measurements": noisy, "latency_too_few_samples": thin,
               "latency_trial_spread": tails,
               "spread": {name: {"throughput": m["batch1"]["spread"], "throughput_batched": m["batched"]["spread"]}
                          for name, m in per_set.items()},
               "protocol": {"issued_by": "host" if host else "worker", "trials": s.trials,
                            "min_seconds": s.min_seconds, "warmup": s.warmup,
                            "latency_samples": s.latency_samples, "batched_queries": s.batched_queries,
                            "noise_retries": s.noise_retries}}
    return {"rows": rows, "profile": profile, "summary": summary}
