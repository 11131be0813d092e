"""What the host sees of a run from outside the sandbox: its timed windows and its memory.

The worker's measured figures are written by code that runs next to the model, so the host keeps its own
view of the same run (:mod:`.bounds` checks the worker's figures against it):

* **Timed windows.** The host issues every timed query itself and stamps it (:mod:`.loadgen`); what it
  measured is recorded here as ``loadgen``.
* **Memory.** Sampled every poll of the runner's loop (``runners.POLL_S``), its peak kept over the samples
  taken outside the timed windows (loading before them, the prediction pass after them: the worker's memory
  figure covers those two and leaves out the windows, whose allocator keeps more) and over the whole run:
  the anonymous memory of the container's cgroup (Docker: ``memory.stat`` ``total_rss`` on cgroup v1,
  ``anon`` on v2, plus the cgroup's own peak ``memory.max_usage_in_bytes`` / ``memory.peak``), or of the
  worker's process tree (local runner: ``RssAnon`` of /proc/PID/status for the worker and its descendants).
  A sampled peak can only be below the true one, which is the safe side for a lower bound.

Nothing here trusts what the worker wrote to ``out/``.
"""

from __future__ import annotations

import abc
import os
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

CGROUP_ROOT = Path("/sys/fs/cgroup")
V1_ANON = ("total_rss", "rss")  # memory.stat keys: anonymous memory (and swap cache) of the cgroup and below
V2_ANON = ("anon",)


def _stat_value(path: Path, keys: tuple[str, ...]) -> int | None:
    try:
        fields = dict(line.split(None, 1) for line in path.read_text().splitlines() if " " in line)
    except (OSError, ValueError):
        return None
    for key in keys:
        if key in fields:
            try:
                return int(fields[key])
            except ValueError:
                return None
    return None


def _int_file(path: Path) -> int | None:
    try:
        return int(path.read_text().split()[0])
    except (OSError, ValueError, IndexError):
        return None


class MemoryWatch(abc.ABC):
    """Peak memory of a run as the host samples it from outside; :meth:`report` is recorded in the run."""

    source = "none"

    def __init__(self) -> None:
        self.anon_peak = 0
        self.samples = 0
        self.before_windows_peak = 0  # the peak of the samples taken outside the timed windows (the name is older)
        self.before_windows_samples = 0
        self.unavailable: str | None = None

    @abc.abstractmethod
    def anon_bytes(self) -> int | None:
        """The run's anonymous memory now; None when it cannot be read (the run has ended, say)."""

    def sample(self, before_windows: bool) -> None:
        """One reading; ``before_windows``: the timed windows are not on (the worker measures its memory over
        loading and the pass, outside its timed windows, whose allocator may keep more)."""
        value = self.anon_bytes()
        if value is not None:
            self.anon_peak = max(self.anon_peak, value)
            self.samples += 1
            if before_windows:
                self.before_windows_peak = max(self.before_windows_peak, value)
                self.before_windows_samples += 1

    def report(self) -> dict[str, Any]:
        if not self.before_windows_samples:
            return {"source": self.source, "anon_peak_bytes": None, "samples": self.samples,
                    "whole_run_anon_peak_bytes": self.anon_peak if self.samples else None,
                    "unavailable": self.unavailable or "no sample could be read before the timed windows"}
        return {"source": self.source, "anon_peak_bytes": self.before_windows_peak,
                "samples": self.before_windows_samples, "whole_run_anon_peak_bytes": self.anon_peak,
                "whole_run_samples": self.samples}


class NoMemoryWatch(MemoryWatch):
    """Where the host cannot see the run's memory: recorded as unavailable, and memory is not bounded."""

    def __init__(self, why: str):
        super().__init__()
        self.unavailable = why

    def anon_bytes(self) -> int | None:
        return None


class CgroupMemory(MemoryWatch):
    """A container's memory cgroup (v1 or v2), read by the host while the container runs."""

    def __init__(self, path: Path, version: int):
        super().__init__()
        self.path, self.version = path, version
        self.source = f"cgroup v{version} {path}"
        self.usage_peak: int | None = None

    def anon_bytes(self) -> int | None:
        anon = _stat_value(self.path / "memory.stat", V1_ANON if self.version == 1 else V2_ANON)
        if anon is not None:  # the kernel's own peak of everything charged (page cache included), monotonic
            peak = _int_file(self.path / ("memory.max_usage_in_bytes" if self.version == 1 else "memory.peak"))
            if peak is not None:
                self.usage_peak = max(self.usage_peak or 0, peak)
        return anon

    def report(self) -> dict[str, Any]:
        return {**super().report(), "cgroup_usage_peak_bytes": self.usage_peak}


def container_cgroup(container_id: str, pid: int | None, root: Path = CGROUP_ROOT) -> CgroupMemory | None:
    """The memory cgroup of a running container: from its init process's /proc/PID/cgroup when that names
    the container (the daemon shares our pid namespace), else Docker's usual places (cgroupfs and systemd
    drivers, v1 and v2). None when none is readable."""
    candidates: list[tuple[Path, int]] = []
    if pid:
        try:
            lines = Path(f"/proc/{pid}/cgroup").read_text().splitlines()
        except OSError:
            lines = []
        for line in lines:
            parts = line.split(":", 2)
            if len(parts) != 3 or container_id not in parts[2]:
                continue
            rel = parts[2].lstrip("/")
            if "memory" in parts[1].split(","):
                candidates.append((root / "memory" / rel, 1))
            elif parts[0] == "0" and parts[1] == "":
                candidates.append((root / rel, 2))
    candidates += [(root / "memory" / "docker" / container_id, 1),
                   (root / "memory" / "system.slice" / f"docker-{container_id}.scope", 1),
                   (root / "system.slice" / f"docker-{container_id}.scope", 2),
                   (root / "docker" / container_id, 2)]
    for path, version in candidates:
        watch = CgroupMemory(path, version)
        if watch.anon_bytes() is not None:
            return watch
    return None


def descendants(pid: int) -> list[int] | None:
    """The pids below ``pid``, from each of its threads' ``/proc/PID/task/TID/children`` (Linux 3.5+ with
    CONFIG_PROC_CHILDREN); None where that file is missing.

    The local runner samples the worker's memory every poll, in the process whose load generator stamps the
    timed queries; psutil's ``children(recursive=True)`` reads every process's ``/proc/PID/stat`` under the GIL
    (1.0 ms median with 71 processes here, more on a busy machine), and a batch-1 query of a tiny model (1.7 ms)
    that overlapped it read 2.6-3.1 ms: the local runner's p99 latency was its own poll (a clean-clone run: local
    3.06 against Docker's 1.77 ms in three pairs). These files cost 0.02 ms for the same tree. Like psutil's
    scan, a child forked or reparented during the read may be missed: one sample, 0.2 s later the next."""
    found: list[int] = []
    todo = [pid]
    while todo:
        parent = todo.pop()
        try:
            threads = os.listdir(f"/proc/{parent}/task")
        except OSError:
            continue  # gone meanwhile
        for tid in threads:
            try:
                with open(f"/proc/{parent}/task/{tid}/children", encoding="ascii") as fh:
                    kids = [int(k) for k in fh.read().split()]
            except FileNotFoundError:
                if not os.path.exists(f"/proc/{parent}/task/{tid}"):
                    continue  # the thread ended
                return None  # the kernel has no children files
            except OSError:
                continue
            found += kids
            todo += kids
    return found


class ProcessTreeMemory(MemoryWatch):
    """The local worker's process and its descendants: the sum of their ``RssAnon``."""

    def __init__(self, pid: int):
        super().__init__()
        self.pid = pid
        self.source = "process tree RssAnon (/proc/PID/status)"

    @staticmethod
    def _rss_anon(pid: int) -> int | None:
        try:
            text = Path(f"/proc/{pid}/status").read_text()
        except OSError:
            return None
        for line in text.splitlines():
            if line.startswith("RssAnon:"):
                return int(line.split()[1]) * 1024
        return None

    def anon_bytes(self) -> int | None:
        own = self._rss_anon(self.pid)
        if own is None:
            return None
        kids = descendants(self.pid)
        if kids is None:  # a kernel without the children files: psutil's scan of every process
            import psutil

            try:
                kids = [c.pid for c in psutil.Process(self.pid).children(recursive=True)]
            except psutil.Error:
                kids = []
        return own + sum(self._rss_anon(k) or 0 for k in kids)


def local_memory(pid: int) -> MemoryWatch:
    if not os.path.exists(f"/proc/{pid}/status"):
        return NoMemoryWatch("/proc is not readable here (not Linux): the local worker's memory is not observed")
    return ProcessTreeMemory(pid)


@dataclass(frozen=True)
class HostObservation:
    """What the machine that ran the worker saw of the run from outside it: the timed windows it issued
    (:mod:`.loadgen`'s report) and its memory samples (:meth:`MemoryWatch.report`).

    Every runner returns one in ``RunOutcome.observed``; :func:`~.bounds.check_measured` bounds the worker's
    measured figures by it. It crosses machines as :meth:`to_dict` (a queue worker signs it, a remote runner's
    agent sends it) and comes back through :meth:`from_dict`; ``loadgen`` None is a run the host issued no timed
    query of (an evaluator from before the host drove the windows), which the bounds refuse by that name."""

    loadgen: Mapping[str, object] | None
    memory: Mapping[str, object]

    @property
    def refused(self) -> str | None:
        """Why the host's load generator refused the run's timed windows (the worker stopped on that), if it did."""
        why = (self.loadgen or {}).get("refused")
        return str(why) if why else None

    def to_dict(self) -> dict[str, object]:
        out: dict[str, object] = {"memory": dict(self.memory)}
        if self.loadgen is not None:
            out["loadgen"] = dict(self.loadgen)
        return out

    @classmethod
    def from_dict(cls, raw: object) -> HostObservation | None:
        """The observation :meth:`to_dict` wrote; None for anything that is not one (no observation: refused)."""
        if isinstance(raw, HostObservation):
            return raw
        if not isinstance(raw, Mapping):
            return None
        loadgen, memory = raw.get("loadgen"), raw.get("memory")
        return cls(dict(loadgen) if isinstance(loadgen, Mapping) else None,
                   dict(memory) if isinstance(memory, Mapping) else {})


def observations(loadgen: dict[str, Any], memory: MemoryWatch) -> HostObservation:
    """What a runner records of a run in ``RunOutcome.observed`` (and a queue worker signs): the host-issued
    timed windows (:mod:`.loadgen`) and the memory samples."""
    return HostObservation(loadgen, memory.report())


# ---------------------------------------------------------------- CPU spent in containers (for timing reports)

#: CPU seconds used by the containers this process ran (cgroup ``cpuacct``), summed as each one ends: the
#: demo prints it per step, since a container's CPU is the daemon's child's, not ours (``os.times`` misses it).
CONTAINER_CPU_SECONDS = [0.0]


def container_cpu_seconds(container_id: str, root: Path = CGROUP_ROOT) -> float | None:
    """The CPU seconds a container has used so far (cgroup v1 ``cpuacct.usage``, v2 ``cpu.stat``), or None."""
    for path in (root / "cpuacct" / "docker" / container_id / "cpuacct.usage",
                 root / "cpuacct" / "system.slice" / f"docker-{container_id}.scope" / "cpuacct.usage"):
        ns = _int_file(path)
        if ns is not None:
            return ns / 1e9
    for path in (root / "system.slice" / f"docker-{container_id}.scope" / "cpu.stat",
                 root / "docker" / container_id / "cpu.stat"):
        us = _stat_value(path, ("usage_usec",))
        if us is not None:
            return us / 1e6
    return None
