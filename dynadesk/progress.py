"""The one progress event of long work, and the one text renderer of it.

The evaluator prints its events as JSON lines (``overall_done``/``overall_total`` over the whole run);
a queued job's heartbeat stores the same keys on the broker. :meth:`ProgressEvent.from_dict` reads
either into one frozen type; every consumer (the CLI's bar and lines, the demo, ``jobs list``, the
coordinator's wait lines, the app's progress bars) reads that type, and :func:`render_progress` is the
one way it is written as text.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

__all__ = ["ProgressEvent", "ProgressFn", "render_progress"]

_KNOWN = ("phase", "overall_done", "overall_total", "dataset", "message", "resumed", "run")


def _count(value: Any) -> int | None:
    return value if isinstance(value, int) and not isinstance(value, bool) and value >= 0 else None


@dataclass(frozen=True)
class ProgressEvent:
    """One step of long work: its phase, the examples done of the whole run's total (when counted),
    the dataset being worked on, a line for people, and what else the source said (``detail``)."""

    phase: str
    done: int | None = None
    total: int | None = None
    dataset: str | None = None
    message: str = ""
    resumed: bool = False
    run: int | None = None
    detail: Mapping[str, Any] = field(default_factory=dict)

    @classmethod
    def from_dict(cls, raw: object) -> ProgressEvent:
        """An event as the evaluator prints it or a job's heartbeat stores it (unknown keys kept in ``detail``,
        counts that are not non-negative integers dropped, anything but an object an empty event: the worker
        is not trusted)."""
        if not isinstance(raw, Mapping):
            raw = {}
        dataset = raw.get("dataset")
        return cls(phase=str(raw.get("phase") or ""),
                   done=_count(raw.get("overall_done")), total=_count(raw.get("overall_total")),
                   dataset=dataset if isinstance(dataset, str) else None,
                   message=str(raw.get("message") or ""), resumed=raw.get("resumed") is True,
                   run=_count(raw.get("run")),
                   detail={k: v for k, v in raw.items() if k not in _KNOWN})

    def to_dict(self) -> dict[str, Any]:
        """The stored form (a job's heartbeat on the broker): what :meth:`from_dict` reads back."""
        out: dict[str, Any] = {"phase": self.phase}
        for key, value in (("overall_done", self.done), ("overall_total", self.total), ("dataset", self.dataset),
                           ("message", self.message or None), ("resumed", self.resumed or None), ("run", self.run)):
            if value is not None:
                out[key] = value
        return out


ProgressFn = Callable[[ProgressEvent], None]


def render_progress(event: ProgressEvent) -> str:
    """``predict set1-test 40/120 (33%)``: the phase, the dataset, the count of the whole run, the message."""
    parts = [event.phase] if event.phase else []
    if event.dataset:
        parts.append(event.dataset)
    if event.done is not None and event.total:
        parts.append(f"{event.done}/{event.total} ({100 * event.done / event.total:.0f}%)")
    if event.message:
        parts.append(event.message)
    return " ".join(parts)
