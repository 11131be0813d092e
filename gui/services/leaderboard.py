"""The local Dynascore leaderboard over :func:`dynadesk.scoring.leaderboard.build_leaderboard`.

The runs are read once per task (and again when the page is shown or runs change);
each slider move then only re-runs the library's board on that snapshot, so the page
shows exactly what ``dynadesk leaderboard`` would print for the same weights.
"""

from __future__ import annotations

from pathlib import Path

from PySide6.QtCore import QObject, Signal

from dynadesk.errors import StoreError
from dynadesk.gui.services.workspace import WorkspaceService
from dynadesk.scoring.leaderboard import SCORE_METRICS, Leaderboard, build_leaderboard

BOARD_METRICS = SCORE_METRICS


class _Snapshot:
    """The runs of one task as read once; ``build_leaderboard`` reads only
    ``store.evaluations.latest_succeeded(task)``, so slider moves need no query."""

    def __init__(self, task: str, records: list):
        self.task, self._records = task, records
        self.evaluations = self

    def latest_succeeded(self, task: str) -> list:
        return self._records if task == self.task else []


class LeaderboardService(QObject):
    changed = Signal()

    def __init__(self, ws: WorkspaceService, parent: QObject | None = None):
        super().__init__(parent)
        self._ws = ws
        self._snapshot: _Snapshot | None = None
        ws.opened.connect(self._invalidate)

    def _invalidate(self, *_args) -> None:
        self._snapshot = None
        self.changed.emit()

    def reload(self, task: str) -> None:
        """Read the task's runs from the store (on page show, task change or new runs)."""
        self._snapshot = _Snapshot(task, self._ws.store.evaluations.latest_succeeded(task))

    def tasks(self) -> list[str]:
        from dynadesk.tasks import load_tasks

        return list(load_tasks())

    def board(self, task: str, weights: dict[str, float] | None = None,
              dataset_weights: dict[str, float] | None = None) -> Leaderboard:
        if self._snapshot is None or self._snapshot.task != task:
            self.reload(task)
        return build_leaderboard(self._snapshot, task, weights, dataset_weights or None,  # type: ignore[arg-type]
                                 stability=True)

    def datasets(self, task: str) -> list[str]:
        """Datasets with per-dataset figures on this task's board (each gets a weight slider)."""
        if self._snapshot is None or self._snapshot.task != task:
            self.reload(task)
        names: set[str] = set()
        for rec in self._snapshot.latest_succeeded(task):
            names.update(m.dataset for m in rec.metrics if m.dataset and m.metric in BOARD_METRICS)
        return sorted(names)

    @staticmethod
    def export_csv(board: Leaderboard, path: str | Path) -> None:
        try:
            Path(path).write_text(board.to_csv(), encoding="utf-8")
        except OSError as exc:
            raise StoreError(f"cannot write {path}: {exc}") from exc
