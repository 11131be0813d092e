"""The leaderboard page's exchange-rate bar (issue 44, item 3): score the local board with a public board's rate
edition, as ``dynadesk leaderboard TASK --rates BOARD`` does, and say which rates scored it.

By default the app ranks by Dynaboard's rule (rates from the runs ranked). Given a synced board's URL or a saved
edition file, the bar reads the board's current edition off the GUI thread, verifies its signature against the
server key this workspace pinned (``sync.client.load_rate_edition``, the CLI's one function) and re-ranks with it:
each run then shows the Dynascore the public board shows for it. The bar's label always names the rates in use.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from PySide6.QtWidgets import QHBoxLayout, QLabel, QLineEdit, QPushButton, QVBoxLayout, QWidget

from dynadesk.gui.pages.scaffold import browse_into

if TYPE_CHECKING:
    from dynadesk.gui.services.leaderboard import LeaderboardService

DYNABOARD = "Dynaboard's rule (rates from the runs ranked)"


class RatesBar(QWidget):
    """Board URL / edition file, "Use board's rates", "Dynaboard's rule", and the rates in use."""

    def __init__(self, service: LeaderboardService, page: QWidget, parent: QWidget | None = None):
        super().__init__(parent)
        self._svc = service
        self._page = page
        outer = QVBoxLayout(self)
        outer.setContentsMargins(0, 0, 0, 0)
        lay = QHBoxLayout()
        outer.addLayout(lay)
        lay.addWidget(QLabel("Exchange rates from"))
        self.source = QLineEdit()
        self.source.setPlaceholderText("a synced board's URL (http://…) or a saved rate edition file")
        self.source.setAccessibleName("board URL or rate edition file")
        self.source.returnPressed.connect(self.use_board)
        lay.addWidget(self.source, 1)
        self.browse = QPushButton("File…")
        self.browse.clicked.connect(self._browse)
        lay.addWidget(self.browse)
        self.use_button = QPushButton("Use board's rates")
        self.use_button.setToolTip("Score every run with that board's current rate edition (its signature checked "
                                   "against the board's server key), as 'dynadesk leaderboard --rates BOARD'")
        self.use_button.clicked.connect(self.use_board)
        lay.addWidget(self.use_button)
        self.own_button = QPushButton("Dynaboard's rule")
        self.own_button.clicked.connect(self.use_dynaboard)
        lay.addWidget(self.own_button)
        self.in_use = QLabel()
        self.in_use.setWordWrap(True)
        self.in_use.setAccessibleName("exchange rates in use")
        outer.addWidget(self.in_use)
        self.loading = False  # a board's edition is being read
        service.ratesChanged.connect(self._on_changed)
        service.ratesFailed.connect(self._on_failed)
        page.loaded.connect(self.show_in_use)  # type: ignore[attr-defined]  # another task: its own rates
        self.show_in_use()

    def task(self) -> str | None:
        return getattr(self._page, "task", None)

    def use_board(self) -> None:
        task, source = self.task(), self.source.text().strip()
        if not task:
            return
        if not source:
            self._page.banner.error("Exchange rates: give a board's URL or a saved rate edition file first")  # type: ignore[attr-defined]
            return
        self.loading = True
        self._svc.use_rates(task, source)

    def use_dynaboard(self) -> None:
        task = self.task()
        if task:
            self._svc.clear_rates(task)
        self.show_in_use()

    def _browse(self) -> None:
        browse_into(self.source, "Rate edition", "Rate edition (*.json);;All files (*)")

    def _on_changed(self, task: str) -> None:
        self.loading = False
        if task == self.task():
            self._page.rerank()  # type: ignore[attr-defined]
        self.show_in_use()

    def _on_failed(self, message: str) -> None:
        self.loading = False
        self._page.banner.error(f"Exchange rates not changed: {message}")  # type: ignore[attr-defined]
        self.show_in_use()

    def show_in_use(self) -> None:
        """The label: the edition the page is scored with, else Dynaboard's rule."""
        task = self.task()
        used = self._svc.rates_in_use(task) if task else None
        self.in_use.setText(f"Scored with: {used or DYNABOARD}")
