"""Timed measurement windows with noise detection, after MLPerf LoadGen and pyperf.

A *measurement* (batch-1 or batched, on one test set) is a warm-up, then ``trials``
timed windows. A window issues calls over a fixed, evenly spaced sample of the set
until it has made at least ``min(min_queries, set size)`` queries *and* run at least
``min_seconds`` (it cycles the sample when the set is small or the model fast); it ends
after ``MAX_WINDOW_S`` even short of its query target (recorded as ``short``). The
figure is the median over the windows; the spread is ``(max - min) / median``.

During every window the worker records what else competed for the CPU: other
processes' CPU time (host-wide busy time from ``/proc/stat`` minus this process tree's
own, so it works inside a container too), steal time (``/proc/stat``) and cgroup CPU
throttling (``cpu.stat``, v1 and v2). A measurement is *noisy* when any of these, or
the spread, passes its threshold below; a noisy one is repeated up to ``retries``
times (no retry starts after ``RETRY_BUDGET_S``), and the last attempt is kept with its noise verdict and
every attempt's reasons.
"""

from __future__ import annotations

import os
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from dynadesk.evaluator import environment
from dynadesk.evaluator.profiling import percentile

# Thresholds that make a measurement noisy (documented in docs/measurement.md).
OTHERS_CORES = 0.25  # other processes used this many cores beyond those the run leaves free
STEAL_FRACTION = 0.05  # of the run's cores' time, stolen by the hypervisor
THROTTLED_FRACTION = 0.10  # of the window's wall time, the cgroup was throttled
RUN_QUEUE_FRACTION = 0.10  # of the window's wall time per thread, the run's threads waited runnable for a CPU
SPREAD = 0.25  # (max - min) / median of the trials' throughputs
MIN_TAIL = 5  # a percentile q rests on too few samples when fewer than this lie above it
RETRY_BUDGET_S = 10.0  # no retry starts once a measurement's attempts have taken this long
MAX_WINDOW_S = 2.0  # a window ends after this long even short of its query target (slow model or load)

PROC_STAT = Path("/proc/stat")


@dataclass
class Protocol:
    """How one measurement is taken; the defaults keep a 2-core demo quick."""

    warmup: int
    min_queries: int
    min_seconds: float
    trials: int
    retries: int
    threads: int


@dataclass
class CpuSnapshot:
    """Counters read at the edges of a timed window."""

    wall: float
    own_cpu: float  # seconds of CPU this process (and its waited-for children) used
    busy: float  # host-wide busy seconds over every CPU (/proc/stat); 0 when unreadable (stat_ok False)
    steal: float
    stat_ok: bool
    throttled_s: float | None
    nr_throttled: int | None
    run_delay_s: float | None = None  # seconds this process's threads waited runnable for a CPU (schedstat)


def _proc_stat(path: Path = PROC_STAT) -> tuple[float, float, bool]:
    """(busy seconds, steal seconds, readable) summed over every CPU."""
    try:
        first = path.read_text().splitlines()[0].split()
    except (OSError, IndexError):
        return 0.0, 0.0, False
    ticks = float(os.sysconf("SC_CLK_TCK")) if hasattr(os, "sysconf") else 100.0
    vals = [float(v) for v in first[1:]] + [0.0] * 10
    user, nice, system, _idle, _iowait, irq, softirq, steal = vals[:8]
    return (user + nice + system + irq + softirq) / ticks, steal / ticks, True


def throttling(root: Path = environment.CGROUP_ROOT) -> tuple[float | None, int | None]:
    """(throttled seconds, periods throttled) of this cgroup: v2 ``cpu.stat``, v1 ``cpu/cpu.stat``."""
    version = environment.cgroup_version(root)
    if version == 2:
        path, unit = root / "cpu.stat", 1e-6  # throttled_usec
    elif version == 1:
        base = root / "cpu" if (root / "cpu").is_dir() else root / "cpu,cpuacct"
        path, unit = base / "cpu.stat", 1e-9  # throttled_time in ns
    else:
        return None, None
    try:
        fields = dict(line.split() for line in path.read_text().splitlines() if len(line.split()) == 2)
    except (OSError, ValueError):
        return None, None
    raw = fields.get("throttled_usec", fields.get("throttled_time"))
    nr = fields.get("nr_throttled")
    return (int(raw) * unit if raw is not None else None), (int(nr) if nr is not None else None)


def run_delay(task_dir: Path = Path("/proc/self/task")) -> float | None:
    """Seconds every thread of this process has waited runnable on a run queue (``schedstat``'s second field):
    the direct sign that something took the CPU the run wanted, whatever the core count says; None where the
    kernel does not keep it."""
    total = 0
    try:
        for stat in task_dir.glob("*/schedstat"):
            try:
                total += int(stat.read_text().split()[1])
            except (OSError, IndexError, ValueError):
                continue  # a thread that ended meanwhile
    except OSError:
        return None
    return total / 1e9


def snapshot() -> CpuSnapshot:
    t = os.times()
    busy, steal, ok = _proc_stat()
    throttled, nr = throttling()
    return CpuSnapshot(time.perf_counter(), t.user + t.system + t.children_user + t.children_system,
                       busy, steal, ok, throttled, nr, run_delay())


def competition(windows: Sequence[tuple[CpuSnapshot, CpuSnapshot]], threads: int,
                host_cores: int | None = None, harness_cpu_s: float = 0.0) -> dict[str, Any]:
    """What competed for the CPU over the given windows, and whether that makes them noisy.

    ``harness_cpu_s``: the CPU the host's load generator spent issuing and reading the windows' queries (it
    sends it with its ``noise`` request), which is not another process's work: it is in every run alike, part
    of each query's time on the host's clock, and a retry cannot make it go away. Counted as competition, it
    flagged every run of a fast model noisy (a majority baseline at 0.15 ms a query: the load generator at
    0.4-0.9 cores) and retried each of its measurements twice for nothing (37 s of the demo's 40 s run). It is
    taken off the run's run-queue wait too: a second of it keeps at most one runnable thread of the run waiting."""
    cores = host_cores or os.cpu_count() or 1
    wall = sum(b.wall - a.wall for a, b in windows)
    out: dict[str, Any] = {"window_seconds": wall, "host_cores": cores, "threads": threads, "reasons": [],
                           "harness_cpu_seconds": harness_cpu_s}
    if wall <= 0:
        return out
    if all(a.stat_ok and b.stat_ok for a, b in windows):
        others = max(0.0, sum(max(0.0, (b.busy - a.busy) - (b.own_cpu - a.own_cpu)) for a, b in windows)
                     - harness_cpu_s)
        steal = sum(b.steal - a.steal for a, b in windows)
        out["others_cpu_seconds"] = others
        out["others_cores"] = others / wall
        out["free_cores"] = max(0, cores - threads)
        out["steal_fraction"] = steal / (wall * max(1, min(cores, threads)))
        if out["others_cores"] - out["free_cores"] > OTHERS_CORES:
            out["reasons"].append(f"other processes used {out['others_cores']:.2f} cores "
                                  f"({out['free_cores']} left free by the run)")
        if out["steal_fraction"] > STEAL_FRACTION:
            out["reasons"].append(f"steal {out['steal_fraction']:.1%} of the run's CPU time")
    else:
        out["others_cores"] = None
        out["reasons_unavailable"] = "/proc/stat unreadable: other processes' CPU time not measured"
    if all(a.run_delay_s is not None and b.run_delay_s is not None for a, b in windows):
        # a second of the harness's CPU keeps at most one of the run's runnable threads waiting that second
        waited = max(0.0, sum((b.run_delay_s or 0.0) - (a.run_delay_s or 0.0) for a, b in windows) - harness_cpu_s)
        out["run_queue_fraction"] = waited / (wall * max(1, threads))
        if out["run_queue_fraction"] > RUN_QUEUE_FRACTION:
            out["reasons"].append(f"the run's threads waited for a CPU {out['run_queue_fraction']:.1%} of the window")
    if all(a.throttled_s is not None and b.throttled_s is not None for a, b in windows):
        throttled = sum((b.throttled_s or 0.0) - (a.throttled_s or 0.0) for a, b in windows)
        out["throttled_seconds"] = throttled
        out["nr_throttled"] = sum((b.nr_throttled or 0) - (a.nr_throttled or 0) for a, b in windows)
        out["throttled_fraction"] = throttled / wall
        if out["throttled_fraction"] > THROTTLED_FRACTION:
            out["reasons"].append(f"cgroup CPU throttling {out['throttled_fraction']:.1%} of the window")
    return out


def spread(values: Sequence[float]) -> float:
    """``(max - min) / median``; 0 for fewer than two values."""
    if len(values) < 2:
        return 0.0
    mid = median(values)
    return (max(values) - min(values)) / mid if mid > 0 else 0.0


def median(values: Sequence[float]) -> float:
    s = sorted(values)
    n = len(s)
    return s[n // 2] if n % 2 else (s[n // 2 - 1] + s[n // 2]) / 2


def even_sample(n: int, k: int) -> list[int]:
    """``k`` indices spread evenly over ``range(n)`` (all of them when ``k >= n``)."""
    if k >= n:
        return list(range(n))
    return [(i * n) // k for i in range(k)]


def _window(call: Callable[[list[dict[str, Any]]], Any], units: Sequence[list[dict[str, Any]]], target: int,
            min_seconds: float,
            sync: Callable[[], None] | None) -> tuple[int, float, list[float]]:
    """(queries, summed call seconds, per-call ms) of one timed window."""
    queries, total_ns, per_call = 0, 0, []
    start = time.perf_counter()
    i = 0
    while queries < target or time.perf_counter() - start < min_seconds:
        if queries and time.perf_counter() - start >= max(MAX_WINDOW_S, min_seconds):
            break
        unit = units[i % len(units)]
        t0 = time.perf_counter_ns()
        call(unit)
        if sync:
            sync()
        dt = time.perf_counter_ns() - t0
        total_ns += dt
        per_call.append(dt / 1e6)
        queries += len(unit)
        i += 1
    return queries, total_ns / 1e9, per_call


Mark = Callable[[dict[str, Any]], None]
"""Told ``{"edge": "start"|"end", "attempt", "trial"[, "queries"]}`` just outside each timed window."""


def measure(call: Callable[[list[dict[str, Any]]], Any], units: Sequence[list[dict[str, Any]]], protocol: Protocol,
            sync: Callable[[], None] | None = None, mark: Mark | None = None) -> dict[str, Any]:
    """Warm-up, trials and noise verdict of one measurement over ``units`` (each one call's examples).

    ``mark`` is told where each window starts and ends (the worker prints it for the host to timestamp)."""
    if not units:
        raise ValueError("no examples to time")
    target = min(protocol.min_queries, sum(len(u) for u in units))
    attempts: list[dict[str, Any]] = []
    started = time.perf_counter()
    for _attempt in range(protocol.retries + 1):
        for i in range(protocol.warmup):
            call(units[i % len(units)])
        if sync:
            sync()
        trials, per_call, per_trial, windows = [], [], [], []
        for trial in range(protocol.trials):
            if mark:
                mark({"edge": "start", "attempt": _attempt, "trial": trial})
            before = snapshot()
            queries, seconds, calls = _window(call, units, target, protocol.min_seconds, sync)
            windows.append((before, snapshot()))
            if mark:
                mark({"edge": "end", "attempt": _attempt, "trial": trial, "queries": queries})
            trials.append({"queries": queries, "seconds": seconds, "short": queries < target,
                           "value": queries / seconds if seconds > 0 else 0.0})
            per_call += calls
            per_trial.append(calls)
        noise = competition(windows, protocol.threads)
        if close_attempt(attempts, trials, noise, per_call, per_trial, started):
            break
    return throughput_result(attempts, {"warmup": protocol.warmup, "min_queries": protocol.min_queries,
                                        "target_queries": target, "min_seconds": protocol.min_seconds,
                                        "trials": protocol.trials, "retries": protocol.retries})


def close_attempt(attempts: list[dict[str, Any]], trials: list[dict[str, Any]], noise: dict[str, Any],
                  per_call: list[float], per_trial: list[list[float]], started: float) -> bool:
    """Record one attempt in ``attempts``: its trials' median throughput, the noise seen during them (the trials'
    spread added as a reason when over ``SPREAD``) and its per-call times. True when it is the last attempt: a quiet
    one, or the retry budget spent. The worker's own timing and the host's load generator retry by this one rule."""
    values = [float(t["value"]) for t in trials]
    noise["spread"] = spread(values)
    if noise["spread"] > SPREAD:
        noise["reasons"].append(f"trials spread {noise['spread']:.1%}")
    attempts.append({"median": median(values), "trials": trials, "noise": noise, "per_call_ms": per_call,
                     "per_trial_ms": per_trial})
    return not noise["reasons"] or time.perf_counter() - started > RETRY_BUDGET_S


def throughput_result(attempts: list[dict[str, Any]], protocol: dict[str, Any]) -> dict[str, Any]:
    """The throughput figure of a measurement: its last attempt's, with the earlier attempts' noise reasons and
    the ``protocol`` it was taken by."""
    last = attempts[-1]
    return {"value": last["median"], "unit": "examples/s", "median": last["median"],
            "spread": last["noise"]["spread"], "trials": last["trials"], "noise": last["noise"],
            "noisy": bool(last["noise"]["reasons"]), "attempts": len(attempts),
            "earlier_attempts": [a["noise"]["reasons"] for a in attempts[:-1]],
            "per_call_ms": last["per_call_ms"], "per_trial_ms": last["per_trial_ms"], "protocol": protocol}


def latency(per_call_ms: Sequence[float], per_trial_ms: Sequence[Sequence[float]] = ()) -> dict[str, Any]:
    """Nearest-rank percentiles of batch-1 call times, each flagged when too few samples lie above it.

    ``trial_spread`` is each percentile's ``(max - min) / median`` over the trials taken alone: a tail that one
    scheduler hiccup moves shows here, in the run's own data (the audit does not judge a percentile its own
    re-measurement could not hold within tolerance)."""
    ms = sorted(per_call_ms)
    out: dict[str, Any] = {"samples": len(ms), "mean_ms": sum(ms) / len(ms), "unit": "ms", "too_few_samples": [],
                           "trial_spread": {}}
    trials = [sorted(t) for t in per_trial_ms if t]
    for q in (50, 90, 99):
        out[f"p{q}_ms"] = percentile(ms, q)
        if len(ms) * (1 - q / 100.0) < MIN_TAIL:
            out["too_few_samples"].append(f"p{q}")
        out["trial_spread"][f"p{q}"] = spread([percentile(t, q) for t in trials])
    return out
