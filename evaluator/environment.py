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
    """Threads for torch: the request, else the cores available to this process."""
    return requested or cores_available()


def cores_available() -> int:
    """CPUs this process may use: its affinity set, capped by the cgroup quota (rounded up)."""
    try:
        cores = len(os.sched_getaffinity(0))
    except (AttributeError, OSError):
        cores = os.cpu_count() or 1
    quota = cpu_quota()
    return max(1, min(cores, math.ceil(quota))) if quota else max(1, cores)


def host_memory_bytes() -> int | None:
    """MemTotal from /proc/meminfo."""
    for line in (_read(Path("/proc/meminfo")) or "").splitlines():
        if line.startswith("MemTotal:"):
            return int(line.split()[1]) * 1024
    return None


def hardware(torch_cuda: str | None, gpu_names: list[str]) -> dict[str, Any]:
    """The hardware-class fields of this run (see :func:`hardware_class_of`)."""
    limits = [v for v in (memory_limit(), host_memory_bytes()) if v is not None]
    return {"cpu_model": cpu_model(), "cores": cores_available(),
            "memory_limit_gib": round(min(limits) / (1 << 30)) if limits else None,
            "gpus": _gpu_text(gpu_names), "runtime": f"cuda {torch_cuda}" if gpu_names and torch_cuda else "cpu"}


def _gpu_text(names: list[str]) -> str:
    if not names:
        return "none"
    return ", ".join(f"{name} x {names.count(name)}" for name in sorted(set(names)))


HARDWARE_CLASS_KEYS = ("cpu_model", "cores", "memory_limit_gib", "gpus", "runtime")


def hardware_fields(env: dict[str, Any]) -> dict[str, Any]:
    """The class fields of an ``environment.json`` (derived from older fields when it predates them)."""
    recorded = env.get("hardware")
    if isinstance(recorded, dict) and all(k in recorded for k in HARDWARE_CLASS_KEYS):
        return {k: recorded[k] for k in HARDWARE_CLASS_KEYS}
    cgroup = env.get("cgroup") or {}
    limit = cgroup.get("memory_limit_bytes") if isinstance(cgroup, dict) else None
    gpus = [str(g) for g in env.get("cuda_devices") or []]
    cuda = (env.get("torch_build") or {}).get("cuda") if isinstance(env.get("torch_build"), dict) else None
    return {"cpu_model": env.get("cpu_model"), "cores": env.get("threads"),
            "memory_limit_gib": round(limit / (1 << 30)) if isinstance(limit, (int, float)) else None,
            "gpus": _gpu_text(gpus), "runtime": f"cuda {cuda}" if gpus and cuda else "cpu"}


def backend_name(env: dict[str, Any]) -> str:
    """What ran the run's forward passes: ``environment.backend.name``; absent (every run before the setting, and
    every torch run) means torch."""
    recorded = env.get("backend") if isinstance(env, dict) else None
    name = recorded.get("name") if isinstance(recorded, dict) else None
    return str(name) if name else "torch"


def hardware_class_of(env: dict[str, Any]) -> str:
    """The canonical hardware class of a run's environment: measured metrics compare only within one.

    ``cpu=<model>;cores=<n>;memory=<GiB>GiB;gpus=<model x count|none>;runtime=<cpu|cuda V>``: the CPU
    model, the cores available to the run (affinity and CPU quota), its memory limit (the cgroup's,
    else the host's, in whole GiB), the GPUs by model and count, and the compute runtime; then
    ``;backend=<name>`` for a run whose forward passes another backend than torch ran (onnxruntime: issue 50), so
    boards never rank it beside torch runs of the same machine. A torch run's class is what it always was.
    """
    f = hardware_fields(env)
    memory = "unknown" if f["memory_limit_gib"] is None else f"{f['memory_limit_gib']}GiB"
    cpu = " ".join(str(f["cpu_model"] or "unknown").split())
    backend = backend_name(env)
    return f"cpu={cpu};cores={f['cores']};memory={memory};gpus={f['gpus']};runtime={f['runtime']}" + \
        ("" if backend == "torch" else f";backend={backend}")


def hardware_class_label(env: dict[str, Any]) -> str:
    """The class for people: ``AMD EPYC 7B13, 2 cores, 4 GiB, no GPU, cpu``."""
    f = hardware_fields(env)
    memory = "memory unknown" if f["memory_limit_gib"] is None else f"{f['memory_limit_gib']} GiB"
    gpus = "no GPU" if f["gpus"] == "none" else f["gpus"]
    backend = backend_name(env)
    return f"{' '.join(str(f['cpu_model'] or 'unknown CPU').split())}, {f['cores']} cores, {memory}, {gpus}, " \
           f"{f['runtime']}" + ("" if backend == "torch" else f", {backend} backend")


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
    devices = [torch.cuda.get_device_name(i) for i in range(torch.cuda.device_count())] if cuda else []
    env = {
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
        "cuda_devices": devices,
        "gpu": gpu_info(),
        "in_container": Path("/.dockerenv").exists(),
        "hardware": hardware(torch.version.cuda, devices),
    }
    env["hardware_class"] = hardware_class_of(env)
    return env
