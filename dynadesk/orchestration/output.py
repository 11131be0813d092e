"""Worker output on the host: progress events for the caller, a bounded log for the run.

A model may print without end, and without newlines. :class:`WorkerOutput` looks at each
byte once (linear time), cuts any line at :data:`MAX_LINE_BYTES` (the rest of that line is
dropped, counted, and the cut is said in the log), keeps the head of the log up to
:data:`MAX_LOG_BYTES` and always the last :data:`TAIL_LINES` lines, so the log tail of a
run that flooded its output is still saved.
"""

from __future__ import annotations

import json
import queue
from collections import deque
from collections.abc import Iterable

from dynadesk.evaluator.schema import PROGRESS_PREFIX
from dynadesk.progress import ProgressEvent, ProgressFn

MAX_LOG_BYTES = 4 << 20
MAX_LINE_BYTES = 64 << 10
TAIL_LINES = 2000
LOG_TAIL_LINES = 40


def log_tail(log: str, lines: int = LOG_TAIL_LINES) -> str:
    return "\n".join(log.rstrip().splitlines()[-lines:])


class WorkerOutput:
    """Collects output on a reader thread; :meth:`drain` runs progress callbacks on the caller's thread
    (so a callback's exception, or Ctrl-C, surfaces where the run was started)."""

    def __init__(self, progress: ProgressFn | None):
        self.progress = progress
        self.events: queue.SimpleQueue[ProgressEvent] = queue.SimpleQueue()
        self.head: list[str] = []
        self.tail: deque[str] = deque(maxlen=TAIL_LINES)
        self.head_bytes = 0
        self.dropped_lines = 0
        self.cut_bytes = 0
        self._pending = bytearray()
        self._overflow = 0  # bytes of the current line beyond MAX_LINE_BYTES

    def drain(self) -> None:
        while True:
            try:
                event = self.events.get_nowait()
            except queue.Empty:
                return
            if self.progress:
                self.progress(event)

    def feed(self, chunks: Iterable[bytes]) -> None:
        for chunk in chunks:
            self.feed_chunk(chunk)
        self.flush()

    def feed_chunk(self, chunk: bytes) -> None:
        start = 0
        while True:
            newline = chunk.find(b"\n", start)
            piece = chunk[start:] if newline < 0 else chunk[start:newline]
            room = MAX_LINE_BYTES - len(self._pending)
            self._pending += piece[:max(0, room)]
            self._overflow += max(0, len(piece) - max(0, room))
            if newline < 0:
                return
            self._end_line()
            start = newline + 1

    def flush(self) -> None:
        if self._pending or self._overflow:
            self._end_line()

    def _end_line(self) -> None:
        text = self._pending.decode("utf-8", "replace")
        overflow = self._overflow
        self._pending = bytearray()
        self._overflow = 0
        if overflow:
            self.cut_bytes += overflow
            text += f" [dynadesk: line cut, {overflow} more bytes dropped]"
        elif text.startswith(PROGRESS_PREFIX):
            try:
                raw = json.loads(text[len(PROGRESS_PREFIX):])
            except ValueError:
                raw = None
            if isinstance(raw, dict):
                self.events.put(ProgressEvent.from_dict(raw))
            return
        self.line(text)

    def line(self, text: str) -> None:
        size = len(text) + 1
        if not self.tail and self.head_bytes + size <= MAX_LOG_BYTES:
            self.head.append(text)
            self.head_bytes += size
            return
        if len(self.tail) == TAIL_LINES:
            self.dropped_lines += 1
        self.tail.append(text)

    def text(self) -> str:
        lines = list(self.head)
        if self.dropped_lines:
            lines.append(f"[dynadesk: log truncated at {MAX_LOG_BYTES >> 20} MiB; {self.dropped_lines} lines "
                         "dropped; the last lines follow]")
        lines += self.tail
        return "\n".join(lines) + ("\n" if lines else "")
