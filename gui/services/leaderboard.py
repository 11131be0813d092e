"""The local Dynascore leaderboard for the app: a task's runs read once into a
:class:`~dynadesk.scoring.leaderboard.LocalBoard` (the shared scoring board).

The runs are read once per task (and again when the page is shown or runs change), on a pool
thread with its own connection (:meth:`LeaderboardService.load`), never on the GUI thread; each
slider move then only re-ranks that board, so the page shows exactly what ``dynadesk leaderboard``
would print for the same weights. Only the newest read is applied: a late answer to an older request
(another task, class or workspace) is dropped.
"""

from __future__ import annotations

from pathlib import Path

from PySide6.QtCore import QObject, Signal

from dynadesk.errors import StoreError
from dynadesk.gui.services.workspace import WorkspaceService
from dynadesk.scoring.board import Weighting
from dynadesk.scoring.dynascore import DEFAULT_MEMORY_BUDGET_GIB
from dynadesk.scoring.leaderboard import SCORE_METRICS, Leaderboard, LocalBoard, local_board, with_hardware

BOARD_METRICS = SCORE_METRICS


class LeaderboardService(QObject):
    changed = Signal()
    loaded = Signal(str)  # the task whose board is now read (the newest request's)
    loadFailed = Signal(str)  # why the newest read failed
    ratesChanged = Signal(str)  # the task whose exchange rates changed (a board's edition loaded, or cleared)
    ratesFailed = Signal(str)  # why a board's edition could not be used

    def __init__(self, ws: WorkspaceService, parent: QObject | None = None):
        super().__init__(parent)
        self._ws = ws
        self._board: LocalBoard | None = None
        self.hardware_class = ""  # the class ranked ("all" for every run)
        self.hardware_classes: dict[str, int] = {}  # classes present -> models with a run
        self.served_models: frozenset[str] = frozenset()  # models shown "served, not sandboxed" (models/served.py)
        self._request = 0  # the newest read's number: an older read's answer is dropped
        self._rates: dict[str, tuple[dict[str, float | None], str, list[str]]] = {}  # task -> a board's edition
        ws.opened.connect(self._invalidate)

    def _invalidate(self, *_args: object) -> None:
        self._board = None
        self._rates = {}  # an edition was verified against the closed workspace's pinned key
        self._request += 1  # a read still running is for the workspace closed
        self.changed.emit()

    def load(self, task: str, hardware_class: str | None = None) -> int:
        """Read the task's board on a pool thread (its own connection); ``loaded(task)`` when it is the newest read
        asked for, ``loadFailed(message)`` if that read fails. Returns the read's number."""
        self._request += 1
        number = self._request

        def read(store):
            from dynadesk.models.served import served_names

            return number, local_board(store, task, hardware_class), served_names(store)

        self._ws.run_with_store(read, on_result=self._on_read, on_error=lambda msg, n=number: self._on_failed(n, msg))
        return number

    def _on_read(self, result: tuple[int, tuple[LocalBoard, str, dict[str, int]], frozenset[str]]) -> None:
        number, (board, chosen, classes), served = result
        if number != self._request:
            return  # a newer read was asked for (another task or class, or another workspace)
        self._board, self.hardware_class, self.hardware_classes = board, chosen, classes
        self.served_models = served
        self.loaded.emit(board.task)

    def _on_failed(self, number: int, message: str) -> None:
        if number == self._request:
            self.loadFailed.emit(message)

    def reload(self, task: str, hardware_class: str | None = None) -> LocalBoard:
        """Read the task's runs of one hardware class (default: the one with the most models; "all": every
        run) here, on the calling thread (the CLI-like path; the page uses :meth:`load`)."""
        self._board, self.hardware_class, self.hardware_classes = local_board(self._ws.store, task, hardware_class)
        from dynadesk.models.served import served_names

        self.served_models = served_names(self._ws.store)
        return self._board

    def current(self, task: str) -> LocalBoard | None:
        """The board read for ``task`` (None until :meth:`load` answered for it)."""
        board = self._board
        return board if board is not None and board.task == task else None

    def _local(self, task: str) -> LocalBoard:
        return self.current(task) or self.reload(task)

    def tasks(self) -> list[str]:
        from dynadesk.tasks import load_tasks

        return list(load_tasks())

    def preferred_task(self) -> str | None:
        """The task the board opens on (issue 47): the one with the most succeeded runs, None when nothing ran."""
        counts: dict[str, int] = {}
        for run in self._ws.store.evaluations.list(status="succeeded"):
            counts[run.task] = counts.get(run.task, 0) + 1
        return max(sorted(counts), key=lambda t: counts[t]) if counts else None

    def board(self, task: str, weights: dict[str, float] | None = None,
              dataset_weights: dict[str, float] | None = None,
              memory_budget_gib: float = DEFAULT_MEMORY_BUDGET_GIB) -> Leaderboard:
        edition = self._rates.get(task)
        board = self._local(task).rank(Weighting(weights, dataset_weights or None, memory_budget_gib,
                                                 rates=edition[0] if edition else None), stability=True)
        if edition is not None:  # as `dynadesk leaderboard --rates BOARD`: the edition named, its notes shown
            board.rates = edition[1]
            board.notes += edition[2]
        return with_hardware(board, self.hardware_class, self.hardware_classes)

    def use_rates(self, task: str, source: str) -> None:
        """Score ``task`` with a board's current rate edition (a server URL or a saved edition file), read and
        verified off the GUI thread as ``dynadesk leaderboard --rates`` does (``sync.client.load_rate_edition``);
        ``ratesChanged(task)`` when it is in use, ``ratesFailed(message)`` when it cannot be."""
        from dynadesk.sync.client.upload import load_rate_edition

        def read(store):
            edition, how = load_rate_edition(store, source, task)
            return task, edition.amrs, how, edition.notes()

        self._ws.run_with_store(read, on_result=self._on_rates, on_error=self.ratesFailed.emit)

    def _on_rates(self, result: tuple[str, dict[str, float | None], str, list[str]]) -> None:
        task, amrs, how, notes = result
        self._rates[task] = (amrs, how, notes)
        self.ratesChanged.emit(task)

    def clear_rates(self, task: str) -> None:
        """Back to Dynaboard's rule (rates from the runs ranked) for ``task``."""
        if self._rates.pop(task, None) is not None:
            self.ratesChanged.emit(task)

    def rates_in_use(self, task: str) -> str | None:
        """The edition ``task`` is scored with, in words (None: Dynaboard's rule)."""
        edition = self._rates.get(task)
        return edition[1] if edition else None

    def datasets(self, task: str) -> list[str]:
        """Datasets with per-dataset figures on this task's board (each gets a weight slider)."""
        return self._local(task).scored_datasets()

    @staticmethod
    def export_csv(board: Leaderboard, path: str | Path) -> None:
        try:
            Path(path).write_text(board.to_csv(), encoding="utf-8")
        except OSError as exc:
            raise StoreError(f"cannot write {path}: {exc}") from exc
