"""The resource limits of one run (:class:`Limits`), as a request asks for them and a bundle signs them.

Its own module, below the runners and the request both: a request names its limits without loading a runner, and
a runner reads them without importing the request. The seven fields are the stored and signed shape
(``request.limits`` of every run record and bundle), so they stay flat: ``pids`` and ``tmpfs_bytes`` are the
Docker sandbox's knobs, which the local and remote runners do not apply (their ``Runner.enforced_limits`` says so).
"""

from __future__ import annotations

from dataclasses import dataclass, fields

from dynadesk import defaults
from dynadesk.errors import ConfigError

__all__ = ["ALL_LIMITS", "Limits"]


@dataclass(frozen=True)
class Limits:
    """Resource limits of one run; the defaults suit a small laptop."""

    cpus: float = 2.0  # default_limits() gives defaults.cpus()
    memory_bytes: int = int(defaults.MEMORY_GIB * (1 << 30))
    pids: int = 256
    timeout_s: float = defaults.TIMEOUT_S
    tmpfs_bytes: int = 1 << 30
    out_bytes: int = 2 << 30  # what the worker may write to /out (predictions, results) before verdict 'disk'
    gpus: str | None = None  # None, "all", or a comma list of device ids

    def __post_init__(self) -> None:
        for name in ("cpus", "timeout_s"):
            value = getattr(self, name)
            if isinstance(value, bool) or not isinstance(value, (int, float)) or not 0 < value < float("inf"):
                raise ConfigError(f"limits.{name} must be a positive number, got {value!r}")
        for name in ("memory_bytes", "pids", "tmpfs_bytes", "out_bytes"):
            value = getattr(self, name)
            if isinstance(value, bool) or not isinstance(value, int) or value < 1:
                raise ConfigError(f"limits.{name} must be a positive integer, got {value!r}")
        if self.gpus is not None and (not isinstance(self.gpus, str) or not self.gpus):
            raise ConfigError(f"limits.gpus must be 'all' or device ids such as '0,1', got {self.gpus!r}")

    def to_dict(self) -> dict[str, float | int | str | None]:
        return {f.name: getattr(self, f.name) for f in fields(self)}

    @classmethod
    def from_dict(cls, raw: object) -> Limits:
        if not isinstance(raw, dict):
            raise ConfigError(f"limits must be an object, got {type(raw).__name__}")
        unknown = sorted(set(raw) - {f.name for f in fields(cls)})
        if unknown:
            raise ConfigError(f"limits has unknown field(s) {', '.join(unknown)}")
        return cls(**raw)


ALL_LIMITS = frozenset(f.name for f in fields(Limits))
"""Every limit a run may ask for; a runner's ``enforced_limits`` is the part of it that runner applies."""
