"""Timing and memory figures, reported with units and the method used.

Throughput follows Dynaboard (batch size 1, examples per second); latency is
per example at batch size 1 after a warm-up, on a fixed sample whose size is
recorded, so CI stays fast and figures say what they rest on. Percentiles use
the nearest-rank method (no interpolation).
"""

from __future__ import annotations

import math
import resource
import sys
import threading
import time
from collections.abc import Callable, Sequence
from typing import Any

from dynadesk.evaluator import environment

GIB = float(1 << 30)


def percentile(sorted_values: Sequence[float], q: float) -> float:
    """Nearest-rank percentile of an ascending list (q in 0-100)."""
    if not sorted_values:
        raise ValueError("percentile of an empty list")
    rank = max(1, math.ceil(q / 100.0 * len(sorted_values)))
    return sorted_values[rank - 1]


def batch1_timings(predict: Callable[[list[dict[str, Any]]], list[Any]], examples: Sequence[dict[str, Any]],
                   warmup: int,
                   samples: int, sync: Callable[[], None] | None = None) -> dict[str, Any]:
    """Latency percentiles and batch-1 throughput over the first ``samples`` examples.

    ``warmup`` calls are made first (cycling the sample) and discarded; each timed
    call is one example, ``perf_counter_ns`` around ``predict`` (plus a CUDA sync when
    on a GPU, so asynchronous kernels are counted).
    """
    sample = list(examples[:samples])
    if not sample:
        raise ValueError("no examples to time")
    for i in range(warmup):
        predict([sample[i % len(sample)]])
    if sync:
        sync()
    times_ns = []
    for ex in sample:
        t0 = time.perf_counter_ns()
        predict([ex])
        if sync:
            sync()
        times_ns.append(time.perf_counter_ns() - t0)
    ms = sorted(t / 1e6 for t in times_ns)
    total_s = sum(times_ns) / 1e9
    return {
        "latency": {"p50_ms": percentile(ms, 50), "p90_ms": percentile(ms, 90), "p99_ms": percentile(ms, 99),
                    "mean_ms": sum(ms) / len(ms), "unit": "ms", "samples": len(ms), "warmup": warmup,
                    "method": "per-example wall time (perf_counter_ns) at batch size 1 after warm-up; "
                              "nearest-rank percentiles"},
        "throughput": {"value": len(ms) / total_s if total_s > 0 else 0.0, "unit": "examples/s", "batch_size": 1,
                       "examples": len(ms), "seconds": total_s,
                       "method": "examples / summed batch-1 call time (Dynaboard's throughput)"},
    }


def rss_peak_bytes() -> int:
    """Peak resident set size of this process (ru_maxrss is KiB on Linux, bytes on macOS)."""
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    return int(peak if sys.platform == "darwin" else peak * 1024)


def memory_figures(dedicated_cgroup: bool) -> dict[str, Any]:
    """RSS and cgroup peaks; ``peak_bytes`` is the cgroup's when the cgroup is this run's own."""
    rss = rss_peak_bytes()
    cg_peak, cg_source = environment.memory_peak()
    use_cgroup = dedicated_cgroup and cg_peak is not None
    peak = cg_peak if use_cgroup and cg_peak is not None else rss
    return {"rss_peak_bytes": rss, "cgroup_peak_bytes": cg_peak, "cgroup_source": cg_source,
            "cgroup_limit_bytes": environment.memory_limit(), "cgroup_dedicated": dedicated_cgroup,
            "peak_bytes": peak, "peak_gib": peak / GIB,
            "peak_source": "cgroup" if use_cgroup else "process RSS (ru_maxrss)"}


class GpuSampler:
    """Samples NVML utilisation, power and memory on a thread while the model runs."""

    def __init__(self, interval_s: float = 0.2):
        self.interval_s = interval_s
        self.samples: list[dict[str, float]] = []
        self.error: str | None = None
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None
        self._nvml: Any = None
        self._handles: list[Any] = []

    def start(self) -> GpuSampler:
        try:
            import pynvml

            pynvml.nvmlInit()
            self._nvml = pynvml
            self._handles = [pynvml.nvmlDeviceGetHandleByIndex(i) for i in range(pynvml.nvmlDeviceGetCount())]
        except ImportError as exc:
            self.error = f"unavailable: {exc}"
            return self
        except Exception as exc:  # noqa: BLE001 - pynvml.NVMLError_LibraryNotFound and friends
            self.error = f"unavailable: {type(exc).__name__}: {exc}"
            return self
        self._thread = threading.Thread(target=self._run, name="nvml-sampler", daemon=True)
        self._thread.start()
        return self

    def _run(self) -> None:
        nv = self._nvml
        while not self._stop.is_set():
            for i, h in enumerate(self._handles):
                try:
                    util = nv.nvmlDeviceGetUtilizationRates(h)
                    mem = nv.nvmlDeviceGetMemoryInfo(h)
                    power = nv.nvmlDeviceGetPowerUsage(h) / 1000.0
                    self.samples.append({"index": i, "util_pct": float(util.gpu), "mem_used_bytes": float(mem.used),
                                         "power_w": power})
                except Exception as exc:  # noqa: BLE001
                    self.error = f"sampling failed: {type(exc).__name__}: {exc}"
                    return
            self._stop.wait(self.interval_s)

    def stop(self) -> dict[str, Any]:
        self._stop.set()
        if self._thread:
            self._thread.join(timeout=5)
        if self._nvml is not None:
            try:
                self._nvml.nvmlShutdown()
            except Exception:  # noqa: BLE001
                pass
        out: dict[str, Any] = {"nvml": self.error or "ok", "interval_s": self.interval_s,
                               "samples": len(self.samples)}
        if self.samples:
            out["util_pct_mean"] = sum(s["util_pct"] for s in self.samples) / len(self.samples)
            out["util_pct_max"] = max(s["util_pct"] for s in self.samples)
            out["power_w_mean"] = sum(s["power_w"] for s in self.samples) / len(self.samples)
            out["power_w_max"] = max(s["power_w"] for s in self.samples)
            out["nvml_mem_used_peak_bytes"] = max(s["mem_used_bytes"] for s in self.samples)
        return out


def torch_gpu_memory() -> dict[str, Any] | None:
    import torch

    if not torch.cuda.is_available():
        return None
    return {"max_allocated_bytes": int(torch.cuda.max_memory_allocated()),
            "max_reserved_bytes": int(torch.cuda.max_memory_reserved()),
            "device": torch.cuda.get_device_name(0)}
