"""Bounds on the measured figures from what the host observed outside the sandbox.

Throughput and memory are measured by the worker, next to the model's code; a loader hole can
rewrite them in ``metrics.json`` at exit. The host cannot measure them itself, but it saw the run
(:mod:`.observe`), and that bounds what the worker may claim:

* **throughput / throughput_batched** (per test set): a window's rate is its queries over its summed
  call time, which is its wall time less the loop's own work between calls. The host read each window's
  start and end edge; ``host_seconds`` is that wall time give or take the stream's latency. So each
  window allows at most ``queries / (host_seconds - WINDOW_SLACK_S - queries * CALL_GAP_S) *
  (1 + LOOP_SLACK)``, there being at most one call per query (no bound when that time is not positive:
  a model of a few microseconds a call); a measurement's claim (the median of its last attempt's
  windows) may not exceed the median of its windows' bounds, and the whole-run figure (harmonic mean
  over the test sets) not the harmonic mean of theirs.
* **memory**: the definition (peak RSS less shared-library pages, taken before the timed windows) holds
  every anonymous page the worker had until then, so the claim may not be below the host's sampled
  anonymous peak up to the first timed window by more than the gap the definition allows
  (``MEMORY_GAP``, ``MEMORY_GAP_BYTES``: library pages touched after the peak, the container's init, the
  kernel's per-CPU charge batches). The timed windows themselves run glibc's default allocator, which
  keeps freed memory (an honest local run: 0.50 GiB anonymous during the windows, 0.25 GiB before), so
  the samples after the first window's start edge are recorded but do not bound.

A claim past its bound fails the run, verdict ``out_of_bounds``, naming the field and both values.
What this does not catch is said in docs/measurement.md ("What the host bounds").
"""

from __future__ import annotations

import statistics
from collections.abc import Mapping, Sequence
from typing import Any

from dynadesk.orchestration.recompute import ResultMismatch

__all__ = ["BOUND_VERDICT", "CALL_GAP_S", "LOOP_SLACK", "MEMORY_GAP", "MEMORY_GAP_BYTES", "WINDOW_SLACK_S",
           "BoundExceeded", "check_measured"]

BOUND_VERDICT = "out_of_bounds"
WINDOW_SLACK_S = 0.1  # how much earlier than the end edge the host may read a window's start edge, relatively
CALL_GAP_S = 20e-6  # the timing loop's own work between two calls (measured: 1.7 us; 12x that)
LOOP_SLACK = 0.25  # preemption and the like, in proportion to the window
MEMORY_GAP = 0.25  # of the host's anonymous peak before the windows: library pages touched after the peak, ...
MEMORY_GAP_BYTES = 64 << 20  # the container's init, the kernel's per-CPU charge batches
GIB = float(1 << 30)
MODES = {"throughput": "batch1", "throughput_batched": "batched"}


class BoundExceeded(ResultMismatch):
    """A measured figure is past what the host observed (verdict ``out_of_bounds``)."""

    def __init__(self, message: str):
        super().__init__(message)
        self.verdict = BOUND_VERDICT


def window_bound(window: Mapping[str, Any]) -> float:
    """The most examples/s one host-observed window allows (inf: too short to bound)."""
    queries = int(window["queries"])
    room = float(window["host_seconds"]) - WINDOW_SLACK_S - queries * CALL_GAP_S
    return float("inf") if room <= 0 else queries / room * (1 + LOOP_SLACK)


def _harmonic(values: Sequence[float]) -> float:
    if any(v == float("inf") for v in values):
        return float("inf")
    return len(values) / sum(1.0 / v for v in values) if values and all(v > 0 for v in values) else 0.0


def throughput_bounds(windows: Sequence[Mapping[str, Any]], sets: Sequence[str]) -> dict[tuple[str, str], float]:
    """``{(test set or '', metric): bound}`` from the last attempt's windows of each measurement."""
    out: dict[tuple[str, str], float] = {}
    for metric, mode in MODES.items():
        per_set = []
        for name in sets:
            mine = [w for w in windows if w["set"] == name and w["mode"] == mode]
            if not mine:
                raise BoundExceeded(f"measured '{metric}' on '{name}': the host observed none of its timed windows "
                                    "(no window edges in the worker's output), so the figure cannot be bounded")
            last = max(w["attempt"] for w in mine)
            out[(name, metric)] = statistics.median([window_bound(w) for w in mine if w["attempt"] == last])
            per_set.append(out[(name, metric)])
        out[("", metric)] = _harmonic(per_set)
    return out


def check_measured(rows: Sequence[Mapping[str, Any]], observed: object, test_sets: Sequence[str]) -> dict[str, Any]:
    """Check the run's measured rows against the host's observations; the report to record in the run.

    Raises :class:`BoundExceeded` naming the field and both values when a throughput is above what the
    host-observed windows allow or the memory is below the host's anonymous peak by more than the gap."""
    if not isinstance(observed, Mapping):
        raise BoundExceeded("the host has no observation of this run's timed windows and memory, so its measured "
                            "figures cannot be bounded")
    windows = list(observed.get("windows") or [])
    claims = {(str(r["dataset"]), str(r["metric"])): float(r["value"]) for r in rows}
    report: dict[str, Any] = {"windows": windows, "window_problems": list(observed.get("window_problems") or []),
                              "memory": observed.get("memory"),
                              "slack": {"window_s": WINDOW_SLACK_S, "call_gap_s": CALL_GAP_S, "loop": LOOP_SLACK,
                                        "memory_gap": MEMORY_GAP,
                                        "memory_gap_bytes": MEMORY_GAP_BYTES},
                              "throughput": [], "bounded": []}
    too_high = []
    bounds = throughput_bounds(windows, test_sets) if test_sets else {}
    for key, bound in bounds.items():
        if key not in claims:
            continue
        claim = claims[key]
        report["throughput"].append({"dataset": key[0], "metric": key[1], "claimed": claim,
                                     "bound": None if bound == float("inf") else bound})
        if claim > bound * (1 + 1e-9):
            where = f"on '{key[0]}'" if key[0] else "(whole run)"
            too_high.append(f"measured '{key[1]}' {where}: the worker reports {claim!r} examples/s, the timed "
                            f"windows the host observed allow at most {bound!r}")
    if too_high:
        raise BoundExceeded("; ".join(too_high))
    report["bounded"] += sorted({k[1] for k in bounds if k in claims})
    memory = observed.get("memory")
    memory = memory if isinstance(memory, Mapping) else {}
    peak = memory.get("anon_peak_bytes")
    if ("", "memory") in claims and isinstance(peak, int) and peak > 0:
        claim_bytes = claims[("", "memory")] * GIB
        floor = peak * (1 - MEMORY_GAP) - MEMORY_GAP_BYTES
        report["memory_floor_bytes"] = floor
        if claim_bytes < floor:
            raise BoundExceeded(f"measured 'memory' (whole run): the worker reports {claims[('', 'memory')]!r} GiB, "
                                f"below the {floor / GIB!r} GiB the host's sampled anonymous peak before the "
                                f"timed windows "
                                f"({peak / GIB!r} GiB, {memory.get('source')}) allows (gap {MEMORY_GAP:.0%} + "
                                f"{MEMORY_GAP_BYTES >> 20} MiB)")
        report["bounded"].append("memory")
    return report
