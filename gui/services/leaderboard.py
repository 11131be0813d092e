"""The local Dynascore leaderboard over :func:`dynadesk.scoring.leaderboard.build_leaderboard`.

Each slider move rebuilds the board from the store with the new weights (a few
milliseconds: one query and the vectorised Dynascore), so the page always shows
exactly what ``dynadesk leaderboard`` would print for the same weights.
"""

from __future__ import annotations

from pathlib import Path

from PySide6.QtCore import QObject, Signal

from dynadesk.errors import StoreError
from dynadesk.gui.services.workspace import WorkspaceService
from dynadesk.scoring.leaderboard import SCORE_METRICS, Leaderboard, build_leaderboard

BOARD_METRICS = SCORE_METRICS


class LeaderboardService(QObject):
    changed = Signal()

    def __init__(self, ws: WorkspaceService, parent: QObject | None = None):
        super().__init__(parent)
        self._ws = ws
        ws.opened.connect(lambda _h: self.changed.emit())

    def tasks(self) -> list[str]:
        from dynadesk.tasks import load_tasks

        return list(load_tasks())

    def board(self, task: str, weights: dict[str, float] | None = None,
              dataset_weights: dict[str, float] | None = None) -> Leaderboard:
        return build_leaderboard(self._ws.store, task, weights, dataset_weights or None, stability=True)

    def datasets(self, task: str) -> list[str]:
        """Datasets with per-dataset figures on this task's board (each gets a weight slider)."""
        names: set[str] = set()
        for rec in self._ws.store.evaluations.latest_succeeded(task):
            names.update(m.dataset for m in rec.metrics if m.dataset and m.metric in BOARD_METRICS)
        return sorted(names)

    @staticmethod
    def export_csv(board: Leaderboard, path: str | Path) -> None:
        try:
            Path(path).write_text(board.to_csv(), encoding="utf-8")
        except OSError as exc:
            raise StoreError(f"cannot write {path}: {exc}") from exc
