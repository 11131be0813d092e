"""The measured figures checked against what the host itself measured and observed outside the sandbox.

Throughput, latency and memory are written by the worker, next to the model's code; a loader hole can
rewrite them in ``metrics.json`` at exit. So:

* **throughput, throughput_batched, latency percentiles** (per test set and the run's aggregates) are the
  host's own: it issued every timed query and stamped issue and answer with its clock (:mod:`.loadgen`), and
  sent its figures to the worker to write. The worker's rows must be exactly those; its timed answers must
  equal its prediction pass's answers for the same examples (a fast wrong answer is caught). A run whose
  timed windows the host did not drive to the end is refused.
* **memory**: the definition (peak RSS less shared-library pages over loading and the pass, the timed windows
  between them left out) holds every anonymous page the worker had then, so the claim may not be below the
  host's sampled anonymous peak outside the timed windows by more than ``MEMORY_GAP`` + ``MEMORY_GAP_BYTES``
  (library pages touched after the peak, the container's init, the kernel's per-CPU charge batches); nor
  below the whole run's peak (the cgroup's own, page cache included, where it is the run's; else the
  sampled anonymous peak) by more than ``WHOLE_RUN_GAP`` + ``MEMORY_GAP_BYTES`` (the timed windows run
  glibc's default allocator, which keeps freed memory: an honest local run reached 0.50 GiB during its
  windows against a 0.24 GiB claim).

* **tokens_per_second, time_to_first_token_ms** (generative models) are counted by the worker inside the
  host's windows (the host times whole answers, not tokens); the host bounds them (:func:`_generation`): no
  answer has more than the manifest's ``max_new_tokens``, so the batched windows cannot have produced tokens
  faster than that many per example the host saw answered per second (times ``GENERATION_SLACK``), and a
  first token comes no sooner than a batch-1 answer's host time over that many tokens (over the slack).

A figure that does not hold fails the run, verdict ``out_of_bounds``, naming the field and both values.
What this does not catch is said in docs/measurement.md ("What the host measures").
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from dynadesk.evaluator.timing import timed_rows
from dynadesk.orchestration.loadgen import answer_key
from dynadesk.orchestration.observe import HostObservation
from dynadesk.orchestration.recompute import ResultMismatch
from dynadesk.orchestration.timed_accuracy import accuracy_gaps

__all__ = ["BOUND_VERDICT", "MEMORY_GAP", "MEMORY_GAP_BYTES", "WHOLE_RUN_GAP", "BoundExceeded", "check_measured",
           "host_figures"]

BOUND_VERDICT = "out_of_bounds"
MEMORY_GAP = 0.25  # of the host's anonymous peak before the windows: library pages touched after the peak, ...
MEMORY_GAP_BYTES = 64 << 20  # the container's init, the kernel's per-CPU charge batches
WHOLE_RUN_GAP = 0.6  # of the whole run's peak: the timed windows' allocator keeps freed memory (~2x measured)
GIB = float(1 << 30)
TIMED = ("throughput", "throughput_batched", "latency_p50_ms", "latency_p90_ms", "latency_p99_ms")
GENERATION_SLACK = 4.0  # the worker's generation seconds are at least 1/4 of the host's window; prefill >= 1 step / 4
REL = 1e-9  # the worker writes the host's floats back through JSON; anything else is a different figure


class BoundExceeded(ResultMismatch):
    """A measured figure is not what the host measured or observed (verdict ``out_of_bounds``)."""

    def __init__(self, message: str):
        super().__init__(message)
        self.verdict = BOUND_VERDICT


def host_figures(observed: Mapping[str, Any], test_sets: Sequence[str]) -> dict[tuple[str, str], float]:
    """``{(test set or '', metric): value}`` of the timed figures the host measured; raises
    :class:`BoundExceeded` when the host did not drive every test set's timed windows to the end."""
    loadgen = observed.get("loadgen")
    if not isinstance(loadgen, Mapping):
        raise BoundExceeded("the host issued none of this run's timed queries (no load generator record: an "
                            "evaluator from before the host drove the timed windows?), so its measured figures "
                            "cannot be observed; evaluate again with this installation's image")
    got = loadgen.get("datasets")
    datasets: Mapping[str, Any] = got if isinstance(got, Mapping) else {}
    problems = [str(p) for p in loadgen.get("problems") or []]
    missing = [name for name in test_sets if name not in datasets]
    if problems or not loadgen.get("finished") or missing:
        why = "; ".join(problems) or f"no timed windows of {', '.join(missing)}"
        raise BoundExceeded(f"the host could not observe this run's timed windows ({why}), so its measured "
                            "figures are refused")
    rows = timed_rows({name: datasets[name] for name in test_sets})
    return {(str(r["dataset"]), str(r["metric"])): float(r["value"]) for r in rows}


def _answers_match(loadgen: Mapping[str, Any], predictions: Path) -> list[str]:
    """Each timed answer that differs from the prediction pass's answer for the same example."""
    got = loadgen.get("answers")
    answers: Mapping[str, Any] = got if isinstance(got, Mapping) else {}
    wrong = []
    with open(predictions, encoding="utf-8") as fh:
        for line in fh:
            row = json.loads(line)
            timed = answers.get(row["dataset"])
            if isinstance(timed, Mapping) and str(row["id"]) in timed:
                passed = answer_key(row["prediction"])
                if timed[str(row["id"])] != passed:
                    wrong.append(f"{row['dataset']}/{row['id']}: {timed[str(row['id'])]!r} in the timed windows, "
                                 f"{passed!r} in the prediction pass")
    return wrong


def check_measured(rows: Sequence[Mapping[str, Any]], observed: object, test_sets: Sequence[str],
                   predictions: Path | None = None,
                   gold: Mapping[str, Mapping[str, str]] | None = None) -> dict[str, Any]:
    """Check the run's measured rows against the host's own figures and observations; the report to record.

    Raises :class:`BoundExceeded` naming each field and both values when a timed figure is not the host's,
    a timed answer is not the pass's, or the memory is below a floor the host observed. ``observed`` is the
    runner's :class:`~.observe.HostObservation` (or its dict form, as a queue worker signs it)."""
    if isinstance(observed, HostObservation):
        observed = observed.to_dict()
    if not isinstance(observed, Mapping):
        raise BoundExceeded("the host has no observation of this run's timed windows and memory, so its measured "
                            "figures cannot be checked")
    claims = {(str(r["dataset"]), str(r["metric"])): float(r["value"]) for r in rows}
    host = host_figures(observed, test_sets) if test_sets else {}
    got = observed.get("loadgen")
    loadgen: Mapping[str, Any] = got if isinstance(got, Mapping) else {}
    report: dict[str, Any] = {"loadgen": {k: v for k, v in loadgen.items() if k not in ("answers", "datasets")},
                              "memory": observed.get("memory"),
                              "slack": {"memory_gap": MEMORY_GAP, "memory_gap_bytes": MEMORY_GAP_BYTES,
                                        "whole_run_gap": WHOLE_RUN_GAP},
                              "timed": [], "bounded": []}
    wrong: list[str] = []
    for key, value in host.items():
        claim = claims.get(key)
        report["timed"].append({"dataset": key[0], "metric": key[1], "claimed": claim, "host": value})
        if claim is None or abs(claim - value) > REL * max(abs(value), 1e-12):
            where = f"on '{key[0]}'" if key[0] else "(whole run)"
            wrong.append(f"measured '{key[1]}' {where}: the worker reports {claim!r}, the host measured {value!r}")
    if predictions is not None and host:
        answers = _answers_match(loadgen, predictions)
        wrong += [f"a timed answer is not the prediction pass's ({len(answers)}): " + "; ".join(answers[:3])] \
            if answers else []
        report["answers_checked"] = sum(len(v) for v in dict(loadgen.get("answers") or {}).values())
        if gold is not None:  # a label task: the timed examples scored as the rest (timed_accuracy.py)
            got_answers = loadgen.get("answers")
            careless, report["timed_accuracy"] = accuracy_gaps(
                got_answers if isinstance(got_answers, Mapping) else {}, predictions, gold)
            wrong += careless
    report["bounded"] += sorted({k[1] for k in host})
    memory = observed.get("memory")
    memory = memory if isinstance(memory, Mapping) else {}
    if ("", "memory") in claims:
        wrong += _memory(claims[("", "memory")], memory, report)
    wrong += _generation(claims, loadgen, report)
    if wrong:
        raise BoundExceeded("; ".join(wrong))
    return report


def _memory(claim_gib: float, memory: Mapping[str, Any], report: dict[str, Any]) -> list[str]:
    """The memory claim against the host's floors (outside the timed windows; the whole run)."""
    floors = []
    peak = memory.get("anon_peak_bytes")
    if isinstance(peak, int) and peak > 0:
        floors.append((peak * (1 - MEMORY_GAP) - MEMORY_GAP_BYTES,
                       f"the host's sampled anonymous peak outside the timed windows ({peak / GIB!r} GiB, "
                       f"{memory.get('source')}; gap {MEMORY_GAP:.0%} + {MEMORY_GAP_BYTES >> 20} MiB)"))
    whole = max([v for v in (memory.get("whole_run_anon_peak_bytes"), memory.get("cgroup_usage_peak_bytes"))
                 if isinstance(v, int)] or [0])
    if whole > 0:
        floors.append((whole * (1 - WHOLE_RUN_GAP) - MEMORY_GAP_BYTES,
                       f"the whole run's peak ({whole / GIB!r} GiB, {memory.get('source')}; gap "
                       f"{WHOLE_RUN_GAP:.0%} + {MEMORY_GAP_BYTES >> 20} MiB)"))
    if not floors:
        return []
    floor, what = max(floors)
    report["memory_floor_bytes"] = floor
    report["bounded"].append("memory")
    if claim_gib * GIB < floor:
        return [f"measured 'memory' (whole run): the worker reports {claim_gib!r} GiB, below the {floor / GIB!r} "
                f"GiB that {what} allows"]
    return []


def _generation(claims: Mapping[tuple[str, str], float], loadgen: Mapping[str, Any],
                report: dict[str, Any]) -> list[str]:
    """A generative run's tokens/s below the host's ceiling and first-token time above its floor, per test set
    and for the run (the mean of the sets'), see the module's docstring; none for other models."""
    n = loadgen.get("max_new_tokens")
    got = loadgen.get("datasets")
    datasets: Mapping[str, Any] = got if isinstance(got, Mapping) else {}
    if not isinstance(n, int) or n <= 0 or not datasets:
        return []
    ceilings: dict[str, float] = {}
    floors: dict[str, float] = {}
    for name, figures in datasets.items():
        rates = [float(t["queries"]) / float(t["seconds"]) for t in figures["batched"]["trials"] if t["seconds"] > 0]
        if rates:
            ceilings[name] = GENERATION_SLACK * n * max(rates)
        floors[name] = float(figures["latency"]["p50_ms"]) / (n * GENERATION_SLACK)
    if len(ceilings) == len(datasets):
        ceilings[""] = sum(ceilings.values()) / len(datasets)
    floors[""] = sum(floors.values()) / len(datasets)
    wrong = []
    for where, ceiling in ceilings.items():
        claim = claims.get((where, "tokens_per_second"))
        if claim is not None and claim > ceiling:
            wrong.append(f"measured 'tokens_per_second' {f'on {where!r}' if where else '(whole run)'}: the worker "
                         f"reports {claim!r}, above the {ceiling!r} its answers allow ({n} tokens at most each, "
                         f"answered as fast as the host measured, slack {GENERATION_SLACK:g}x)")
    for where, floor in floors.items():
        claim = claims.get((where, "time_to_first_token_ms"))
        if claim is not None and claim < floor:
            wrong.append(f"measured 'time_to_first_token_ms' {f'on {where!r}' if where else '(whole run)'}: the "
                         f"worker reports {claim!r}, below the {floor!r} the host's batch-1 latency allows ({n} "
                         f"tokens at most, slack {GENERATION_SLACK:g}x)")
    report["generation"] = {"max_new_tokens": n, "tokens_per_second_ceiling": ceilings,
                            "time_to_first_token_ms_floor": floors, "slack": GENERATION_SLACK}
    report["bounded"] += [m for m in ("tokens_per_second", "time_to_first_token_ms")
                          if any(k[1] == m for k in claims)]
    return wrong
