"""What the worker runs on: cgroup limits (v1 and v2), CPU, GPU, library versions.

Libraries see every host core even in a container limited to two, so the
worker sizes torch's thread pool from the cgroup CPU quota read here. The
memory peak must be read from inside: after the container exits its cgroup is gone.
"""

from __future__ import annotations

import math
import os
import platform
import sys
from pathlib import Path
from typing import Any

CGROUP_ROOT = Path("/sys/fs/cgroup")


def _read(path: Path) -> str | None:
    try:
        return path.read_text().strip()
    except OSError:
        return None


def _int(text: str | None) -> int | None:
    if text is None or text == "max":
        return None
    try:
        return int(text)
    except ValueError:
        return None


def cgroup_version(root: Path = CGROUP_ROOT) -> int | None:
    if (root / "cgroup.controllers").exists():
        return 2
    if (root / "memory").is_dir() or (root / "cpu").is_dir():
        return 1
    return None


def cpu_quota(root: Path = CGROUP_ROOT) -> float | None:
    """CPUs allowed by the CFS quota (e.g. 2.0), or None when unlimited."""
    version = cgroup_version(root)
    if version == 2:
        parts = (_read(root / "cpu.max") or "max").split()
        quota, period = _int(parts[0]), _int(parts[1]) if len(parts) > 1 else 100000
    elif version == 1:
        base = root / "cpu" if (root / "cpu").is_dir() else root / "cpu,cpuacct"
        quota, period = _int(_read(base / "cpu.cfs_quota_us")), _int(_read(base / "cpu.cfs_period_us"))
        if quota is not None and quota < 0:
            quota = None
    else:
        return None
    if not quota or not period:
        return None
    return quota / period


def memory_limit(root: Path = CGROUP_ROOT) -> int | None:
    version = cgroup_version(root)
    if version == 2:
        return _int(_read(root / "memory.max"))
    if version == 1:
        value = _int(_read(root / "memory" / "memory.limit_in_bytes"))
        return value if value is not None and value < (1 << 60) else None  # v1 "unlimited" is a huge number
    return None


def memory_peak(root: Path = CGROUP_ROOT) -> tuple[int | None, str | None]:
    """(peak bytes, file it came from): v2 ``memory.peak``, v1 ``memory.max_usage_in_bytes``."""
    version = cgroup_version(root)
    if version == 2:
        path = root / "memory.peak"
    elif version == 1:
        path = root / "memory" / "memory.max_usage_in_bytes"
    else:
        return None, None
    value = _int(_read(path))
    return (value, str(path)) if value is not None else (None, None)


def pids_limit(root: Path = CGROUP_ROOT) -> int | None:
    version = cgroup_version(root)
    path = root / "pids.max" if version == 2 else root / "pids" / "pids.max"
    return _int(_read(path))


def thread_count(requested: int | None = None) -> int:
    """Threads for torch: the request, else the cgroup quota (rounded up), else the usable cores."""
    if requested:
        return requested
    try:
        cores = len(os.sched_getaffinity(0))
    except (AttributeError, OSError):
        cores = os.cpu_count() or 1
    quota = cpu_quota()
    if quota:
        return max(1, min(cores, math.ceil(quota)))
    return max(1, cores)


def cpu_model() -> str:
    text = _read(Path("/proc/cpuinfo")) or ""
    for line in text.splitlines():
        if line.startswith("model name"):
            return line.split(":", 1)[1].strip()
    return platform.processor() or platform.machine()


def _version(module: str) -> str | None:
    try:
        from importlib.metadata import version

        return version(module)
    except Exception:  # noqa: BLE001 - a missing distribution is just "not installed"
        return None


def gpu_info() -> dict[str, Any]:
    """GPU names, memory and driver via NVML; the reason when NVML is absent, never a crash."""
    info: dict[str, Any] = {"nvml": None, "devices": []}
    try:
        import pynvml
    except ImportError as exc:
        info["nvml"] = f"unavailable: {exc}"
        return info
    try:
        pynvml.nvmlInit()
    except pynvml.NVMLError as exc:
        info["nvml"] = f"unavailable: {type(exc).__name__}: {exc}"
        return info
    try:
        info["nvml"] = "ok"
        info["driver"] = _text(pynvml.nvmlSystemGetDriverVersion())
        for i in range(pynvml.nvmlDeviceGetCount()):
            handle = pynvml.nvmlDeviceGetHandleByIndex(i)
            mem = pynvml.nvmlDeviceGetMemoryInfo(handle)
            info["devices"].append({"index": i, "name": _text(pynvml.nvmlDeviceGetName(handle)),
                                    "memory_total_bytes": int(mem.total)})
    except pynvml.NVMLError as exc:
        info["nvml"] = f"error: {type(exc).__name__}: {exc}"
    finally:
        try:
            pynvml.nvmlShutdown()
        except pynvml.NVMLError:
            pass
    return info


def _text(value: Any) -> str:
    return value.decode() if isinstance(value, bytes) else str(value)


def capture(threads: int, settings: dict[str, Any]) -> dict[str, Any]:
    """The ``environment.json`` body (without schema_version)."""
    import torch

    cuda = torch.cuda.is_available()
    return {
        "python": platform.python_version(),
        "python_implementation": platform.python_implementation(),
        "executable": sys.executable,
        "platform": platform.platform(),
        "machine": platform.machine(),
        "libraries": {name: _version(name) for name in
                      ("torch", "transformers", "tokenizers", "safetensors", "numpy", "psutil", "nvidia-ml-py")},
        "torch_build": {"version": torch.__version__, "cuda": torch.version.cuda,
                        "cudnn": torch.backends.cudnn.version() if cuda else None},
        "cpu_model": cpu_model(),
        "cpu_count": os.cpu_count(),
        "threads": threads,
        "interop_threads": torch.get_num_interop_threads(),
        "cgroup": {"version": cgroup_version(), "cpu_quota": cpu_quota(), "memory_limit_bytes": memory_limit(),
                   "pids_limit": pids_limit()},
        "deterministic": {"enabled": bool(settings.get("deterministic")), "seed": settings.get("seed"),
                          "torch_deterministic_algorithms": torch.are_deterministic_algorithms_enabled(),
                          "cudnn_benchmark": bool(torch.backends.cudnn.benchmark),
                          "cublas_workspace_config": os.environ.get("CUBLAS_WORKSPACE_CONFIG")},
        "cuda_available": cuda,
        "cuda_devices": [torch.cuda.get_device_name(i) for i in range(torch.cuda.device_count())] if cuda else [],
        "gpu": gpu_info(),
        "in_container": Path("/.dockerenv").exists(),
    }
