"""Python's cycle collector runs on the GUI thread only, while the app runs.

The automatic collector runs in whichever thread happens to allocate when a generation's count is reached. The
app's jobs (an evaluation's load generator and output reader, the board's reads) allocate on pool threads, so a
cycle that holds a Qt object (a closed page's widget and the lambda connected to it, a finished job's signals)
could be freed there: Qt objects must be destroyed in the thread that owns them, and one that is not may crash
the process (a segfault in one clean-clone CI run, an evaluation's threads running beside the GUI thread).
pyqtgraph's ``GarbageCollector`` answered the same hazard the same way: automatic collection off, and a timer on
the GUI thread that collects what the generation counts call for. Reference counting (most of Python's freeing)
is unchanged; only the collection of cycles moves, by at most :data:`INTERVAL_MS`.
"""

from __future__ import annotations

import gc

from PySide6.QtCore import QObject, QTimer

__all__ = ["INTERVAL_MS", "GuiThreadCollector"]

INTERVAL_MS = 500  # how late a cycle may be freed: short beside a page's work, long beside a collection's cost


class GuiThreadCollector(QObject):
    """Created on the GUI thread: :meth:`start` turns automatic collection off and collects from a timer there;
    :meth:`stop` collects once more and gives collection back to Python (as it was before :meth:`start`)."""

    def __init__(self, parent: QObject | None = None, interval_ms: int = INTERVAL_MS):
        super().__init__(parent)
        self._timer = QTimer(self)
        self._timer.setInterval(interval_ms)
        self._timer.timeout.connect(self.collect)
        self._was_enabled = gc.isenabled()

    def start(self) -> GuiThreadCollector:
        self._was_enabled = gc.isenabled()
        gc.disable()
        self._timer.start()
        return self

    def stop(self) -> None:
        self._timer.stop()
        gc.collect()
        if self._was_enabled:
            gc.enable()

    def collect(self) -> None:
        """Collect the oldest generation whose count passed its threshold, as the automatic collector would."""
        counts, thresholds = gc.get_count(), gc.get_threshold()
        for generation in (2, 1, 0):
            if counts[generation] > thresholds[generation]:
                gc.collect(generation)
                return
