"""Memory and GPU figures, reported with units and the method used; percentiles.

Timed windows live in :mod:`dynadesk.evaluator.measurement`. Percentiles use the
nearest-rank method (no interpolation).
"""

from __future__ import annotations

import math
import re
import resource
import sys
import threading
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from dynadesk.evaluator import allocator, environment

GIB = float(1 << 30)


def percentile(sorted_values: Sequence[float], q: float) -> float:
    """Nearest-rank percentile of an ascending list (q in 0-100)."""
    if not sorted_values:
        raise ValueError("percentile of an empty list")
    rank = max(1, math.ceil(q / 100.0 * len(sorted_values)))
    return sorted_values[rank - 1]


MEMORY_DEFINITION = "peak-rss-less-shared-libraries/2"
"""Names how ``memory`` is measured; an audit compares memory only between runs of the same definition.

/2: the worker fixed glibc's mmap threshold before loading anything (:mod:`dynadesk.evaluator.allocator`).
/1 (earlier evaluators, or a worker where it could not be fixed): glibc's moving threshold, under which
identical runs peaked up to 35% apart."""

UNFIXED_MEMORY_DEFINITION = "peak-rss-less-shared-libraries/1"

_SHARED_LIBRARY = re.compile(r"\.so(\.[0-9]+)*$")


def rss_peak_bytes() -> int:
    """Peak resident set size of this process: ``VmHWM`` of /proc/self/status on Linux.

    Not ``ru_maxrss``: Linux carries it over an ``execve`` from the process that spawned us, so a
    worker started by a big host process (the local runner's parent holds torch) would report its
    parent's RSS, while a container's worker starts from a small runtime process.
    """
    hwm = vm_hwm_bytes("self")
    if hwm is not None:
        return hwm
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    return int(peak if sys.platform == "darwin" else peak * 1024)


def vm_hwm_bytes(pid: str | int) -> int | None:
    """``VmHWM`` (peak RSS of the process's current memory image) from /proc, None where unreadable."""
    try:
        text = Path(f"/proc/{pid}/status").read_text()
    except OSError:
        return None
    for line in text.splitlines():
        if line.startswith("VmHWM:"):
            return int(line.split()[1]) * 1024
    return None


def shared_library_rss_bytes(pid: str | int) -> int:
    """Resident bytes of a process's mappings of shared-library files (``*.so``, ``*.so.N``), from /proc smaps.

    These pages are library code and read-only data: how many of them a mapping holds depends on the
    page cache (fault-around maps the cached neighbours of every page touched), so the same job measured
    0.437 GiB peak RSS from a freshly installed venv and 0.347 GiB after ``drop_caches``. They say nothing
    about the model. 0 where smaps is unreadable (not Linux)."""
    total, counting = 0, False
    try:
        with open(f"/proc/{pid}/smaps", encoding="utf-8", errors="replace") as fh:
            for line in fh:
                head = line.split(None, 5)
                if head and "-" in head[0] and not head[0].endswith(":"):  # a mapping's header line
                    path = head[5].strip() if len(head) > 5 else ""
                    counting = bool(_SHARED_LIBRARY.search(path))
                elif counting and line.startswith("Rss:"):
                    total += int(line.split()[1]) * 1024
    except OSError:
        return 0
    return total


def reset_peak() -> bool:
    """Restart this process's ``VmHWM`` at its RSS now (Linux: ``5`` written to /proc/self/clear_refs), so a
    later :func:`memory_figures` is the peak from here on; False where it cannot (the peak then keeps what came
    before, which only raises it)."""
    try:
        with open("/proc/self/clear_refs", "w", encoding="ascii") as fh:
            fh.write("5")
        return True
    except OSError:
        return False


def load_and_pass(load: dict[str, Any], after: dict[str, Any], reset: bool) -> dict[str, Any]:
    """The memory figures over loading (``load``, taken before the timed windows) and the prediction pass
    (``after``, taken after it, its peak restarted after the windows when ``reset``): the larger peak of the
    two, the same quantity as when the pass preceded the windows (issue 45: the windows now come between)."""
    out = dict(after)
    if load["peak_bytes"] > after["peak_bytes"]:
        for key in ("peak_bytes", "peak_gib", "rss_peak_bytes", "children_rss_peak_bytes",
                    "shared_library_rss_bytes"):
            out[key] = load[key]
    out.update(load_peak_bytes=load["peak_bytes"], pass_peak_bytes=after["peak_bytes"], windows_excluded=reset)
    return out


def _tree_pids() -> list[int]:
    """This process's live descendants (none when psutil is missing)."""
    try:
        import psutil

        return [c.pid for c in psutil.Process().children(recursive=True)]
    except (ImportError, OSError):
        return []


def memory_figures(dedicated_cgroup: bool) -> dict[str, Any]:
    """The run's memory, the same quantity on every runner and installation.

    ``peak_bytes`` (the Dynascore's ``memory``) is, for the worker and each live descendant, its peak
    RSS (``VmHWM``) less the resident pages of the shared libraries it maps, summed. The worker measures
    it itself, so a container and a local subprocess report the same quantity; the model's own memory
    (heap, tensors, memory-mapped weight files) stays in. Peak RSS itself, the libraries' share and the
    cgroup peak (page cache included, and only this run's own inside a container) are extra fields.
    """
    own_peak, own_libs = rss_peak_bytes(), shared_library_rss_bytes("self")
    kids = [(vm_hwm_bytes(pid) or 0, shared_library_rss_bytes(pid)) for pid in _tree_pids()]
    children_peak, children_libs = sum(k[0] for k in kids), sum(k[1] for k in kids)
    # VmHWM - libraries-now <= the peak of everything else: library pages touched after the peak only lower it
    peak = max(0, own_peak - own_libs) + sum(max(0, h - lib) for h, lib in kids)
    cg_peak, cg_source = environment.memory_peak()
    malloc = allocator.malloc_settings()
    definition = MEMORY_DEFINITION if malloc["fixed"] else UNFIXED_MEMORY_DEFINITION
    return {"definition": definition, "malloc": malloc, "peak_bytes": peak, "peak_gib": peak / GIB,
            "peak_source": "worker process tree peak RSS less shared-library pages (VmHWM minus the resident "
                           "pages of mapped *.so files, for the worker and its descendants)",
            "rss_peak_bytes": own_peak, "children_rss_peak_bytes": children_peak,
            "shared_library_rss_bytes": own_libs + children_libs,
            "cgroup_peak_bytes": cg_peak if dedicated_cgroup else None, "cgroup_source": cg_source,
            "cgroup_limit_bytes": environment.memory_limit(), "cgroup_dedicated": dedicated_cgroup}


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
    """torch's peak allocated and reserved bytes, summed over every visible device."""
    import torch

    if not torch.cuda.is_available():
        return None
    n = torch.cuda.device_count()
    return {"max_allocated_bytes": sum(int(torch.cuda.max_memory_allocated(i)) for i in range(n)),
            "max_reserved_bytes": sum(int(torch.cuda.max_memory_reserved(i)) for i in range(n)),
            "devices": [torch.cuda.get_device_name(i) for i in range(n)], "summed_over_devices": n}


def nvml_devices() -> dict[str, Any]:
    """Device-wide NVML figures now: per GPU its UUID, memory used and how many compute processes run on it."""
    try:
        import pynvml

        pynvml.nvmlInit()
    except ImportError as exc:
        return {"nvml": f"unavailable: {exc}", "devices": []}
    except Exception as exc:  # noqa: BLE001 - pynvml.NVMLError_LibraryNotFound and friends
        return {"nvml": f"unavailable: {type(exc).__name__}: {exc}", "devices": []}
    devices = []
    try:
        for i in range(pynvml.nvmlDeviceGetCount()):
            h = pynvml.nvmlDeviceGetHandleByIndex(i)
            uuid = pynvml.nvmlDeviceGetUUID(h)
            devices.append({"index": i, "uuid": uuid.decode() if isinstance(uuid, bytes) else str(uuid),
                            "mem_used_bytes": int(pynvml.nvmlDeviceGetMemoryInfo(h).used),
                            "compute_processes": len(pynvml.nvmlDeviceGetComputeRunningProcesses(h))})
    except pynvml.NVMLError as exc:
        return {"nvml": f"error: {type(exc).__name__}: {exc}", "devices": devices}
    finally:
        try:
            pynvml.nvmlShutdown()
        except pynvml.NVMLError:
            pass
    return {"nvml": "ok", "devices": devices}


def gpu_figures(baseline: dict[str, Any], sampler: dict[str, Any] | None) -> dict[str, Any]:
    """torch and NVML GPU memory of a run: the baseline before the model loaded, the end state, and
    whether other processes shared a device (more compute processes than this one)."""
    end = nvml_devices()
    shared = any(d["compute_processes"] > 1 for d in end["devices"])
    return {"torch": torch_gpu_memory(), "nvml_baseline": baseline, "nvml_end": end, "sampler": sampler,
            "uuids": [d["uuid"] for d in end["devices"]], "shared_with_other_processes": shared}
