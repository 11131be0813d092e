"""The local Dynascore leaderboard for the app: a task's runs read once into a
:class:`~dynadesk.scoring.leaderboard.LocalBoard` (the shared scoring board).

The runs are read once per task (and again when the page is shown or runs change);
each slider move then only re-ranks that board, so the page shows exactly what
``dynadesk leaderboard`` would print for the same weights.
"""

from __future__ import annotations

from pathlib import Path

from PySide6.QtCore import QObject, Signal

from dynadesk.errors import StoreError
from dynadesk.gui.services.workspace import WorkspaceService
from dynadesk.scoring.dynascore import DEFAULT_MEMORY_BUDGET_GIB
from dynadesk.scoring.leaderboard import SCORE_METRICS, Leaderboard, LocalBoard, local_board, with_hardware

BOARD_METRICS = SCORE_METRICS


class LeaderboardService(QObject):
    changed = Signal()

    def __init__(self, ws: WorkspaceService, parent: QObject | None = None):
        super().__init__(parent)
        self._ws = ws
        self._board: LocalBoard | None = None
        self.hardware_class = ""  # the class ranked ("all" for every run)
        self.hardware_classes: dict[str, int] = {}  # classes present -> models with a run
        ws.opened.connect(self._invalidate)

    def _invalidate(self, *_args: object) -> None:
        self._board = None
        self.changed.emit()

    def reload(self, task: str, hardware_class: str | None = None) -> LocalBoard:
        """Read the task's runs of one hardware class (default: the one with the most models; "all": every
        run) from the store (on page show, task or class change, or new runs)."""
        self._board, self.hardware_class, self.hardware_classes = local_board(self._ws.store, task, hardware_class)
        return self._board

    def _local(self, task: str) -> LocalBoard:
        board = self._board
        return board if board is not None and board.task == task else self.reload(task)

    def tasks(self) -> list[str]:
        from dynadesk.tasks import load_tasks

        return list(load_tasks())

    def board(self, task: str, weights: dict[str, float] | None = None,
              dataset_weights: dict[str, float] | None = None,
              memory_budget_gib: float = DEFAULT_MEMORY_BUDGET_GIB) -> Leaderboard:
        board = self._local(task).rank(weights, dataset_weights or None, memory_budget_gib, stability=True)
        return with_hardware(board, self.hardware_class, self.hardware_classes)

    def datasets(self, task: str) -> list[str]:
        """Datasets with per-dataset figures on this task's board (each gets a weight slider)."""
        return self._local(task).scored_datasets()

    @staticmethod
    def export_csv(board: Leaderboard, path: str | Path) -> None:
        try:
            Path(path).write_text(board.to_csv(), encoding="utf-8")
        except OSError as exc:
            raise StoreError(f"cannot write {path}: {exc}") from exc
