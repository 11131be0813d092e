"""Start: the first screen of a brand-new workspace — fetch the bundled data, build the demo model zoo, register a
model, import a file — each step with its state, the two jobs with progress and Cancel (on a worker)."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from PySide6.QtCore import Qt, Signal
from PySide6.QtWidgets import QGridLayout, QHBoxLayout, QLabel, QProgressBar, QPushButton, QVBoxLayout, QWidget

from dynadesk.gui.pages.base import ServicePage
from dynadesk.gui.services.start import Holdings, StartService
from dynadesk.progress import ProgressEvent

if TYPE_CHECKING:
    from dynadesk.gui.services.context import Services

INTRO = ("<p style='font-size:11pt'>DynaDesk evaluates NLP models on your own machines: import data, register "
         "models, collect adversarial examples with your annotators, and rank models on a Dynaboard-style "
         "leaderboard. A new workspace is empty; four steps fill it.</p>")

STEPS = [  # key, title, what it does, button
    ("fetch", "1. Fetch the bundled data",
     "The sentiment sets of vaderSentiment 3.3.2 (Hutto &amp; Gilbert 2014, MIT): movies, tweets, Amazon reviews and "
     "New York Times sentences, split into train, dev and test (pip downloads the pinned source once).",
     "Fetch the bundled data"),
    ("zoo", "2. Build the demo model zoo",
     "A majority baseline, a bag-of-words model and two MiniLM models trained offline on the bundled data "
     "(a few minutes on a laptop CPU).", "Build the demo zoo"),
    ("model", "3. Register a model", "Your own model folder: Hugging Face, ONNX, or a DynaDesk handler.",
     "Register a model…"),
    ("import", "4. Import a file", "JSONL, CSV/TSV, SQuAD, NLI or Hugging Face rows, with field and label mapping.",
     "Import a file…"),
]


class StartPage(ServicePage):
    title = "Start"
    _svc: StartService
    goTo = Signal(str)  # the key of the page to open (the window follows)

    def build(self, lay: QVBoxLayout) -> None:
        self.held: Holdings | None = None
        self.loading = False
        self.running: str | None = None  # the step whose job runs now
        intro = QLabel(INTRO)
        intro.setWordWrap(True)
        lay.addWidget(intro)
        grid = QGridLayout()
        grid.setColumnStretch(1, 1)
        grid.setVerticalSpacing(14)
        self.buttons: dict[str, QPushButton] = {}
        self.states: dict[str, QLabel] = {}
        for row, (key, title, what, action) in enumerate(STEPS):
            text = QLabel(f"<b>{title}</b><br><span style='color:#555'>{what}</span>")
            text.setWordWrap(True)
            grid.addWidget(text, row, 1)
            button = QPushButton(action)
            button.setMinimumWidth(190)
            button.clicked.connect(lambda _=False, k=key: self.do(k))
            self.buttons[key] = button
            grid.addWidget(button, row, 2)
            state = QLabel("…")
            state.setMinimumWidth(210)
            state.setWordWrap(True)
            self.states[key] = state
            grid.addWidget(state, row, 3)
        lay.addLayout(grid)
        prow = QHBoxLayout()
        self.progress = QProgressBar()
        self.progress.setAccessibleName("Progress of the running step")
        self.progress.setRange(0, 1)
        self.progress.setValue(0)
        self.progress.setTextVisible(False)  # busy or done: the line below says what happens
        prow.addWidget(self.progress, 1)
        self.cancel_button = QPushButton("Cancel")
        self.cancel_button.setEnabled(False)
        self.cancel_button.clicked.connect(self._svc.cancel)
        prow.addWidget(self.cancel_button)
        lay.addLayout(prow)
        self.status_label = QLabel("")
        self.status_label.setWordWrap(True)
        self.status_label.setTextInteractionFlags(Qt.TextInteractionFlag.TextSelectableByMouse)
        lay.addWidget(self.status_label)
        lay.addStretch(1)

        self.follow(self._svc, held=self._show, progress=self._on_progress, finished=self._on_finished,
                    failed=self._on_failed, cancelled=self._on_cancelled, left=self._on_left)

    def refresh(self) -> None:
        self.loading = True
        self._svc.read_holdings()

    def _show(self, held: Holdings) -> None:
        self.loading = False
        self.held = held
        self.states["fetch"].setText(f"✔ {held.bundled} bundled sets in the workspace" if held.bundled
                                     else "not yet")
        self.states["zoo"].setText(f"✔ {held.demo_models} demo models registered" if held.demo_models else "not yet")
        self.states["model"].setText(f"{held.models} model(s) in the workspace" if held.models else "no model yet")
        self.states["import"].setText(f"{held.datasets} dataset(s); tasks with data: "
                                      f"{', '.join(held.tasks_with_data)}" if held.datasets else "no dataset yet")

    def do(self, key: str) -> None:
        """One step: the two jobs run here with progress; the other two open the page that does them."""
        if key in ("model", "import"):
            self.goTo.emit("models" if key == "model" else "tasks_data")
            return
        if self._svc.running:
            return
        self.banner.clear()
        for b in self.buttons.values():
            b.setEnabled(False)
        self.cancel_button.setEnabled(True)
        self.progress.setRange(0, 0)  # busy: the steps report lines, not fractions
        self.status_label.setText("starting…")
        self.running = key
        if key == "fetch":
            self._svc.fetch_data()
        else:
            self._svc.build_zoo()

    def _on_progress(self, event: ProgressEvent) -> None:
        self.status_label.setText(event.message)

    def _on_left(self, line: str) -> None:
        self.job_left(line)
        self.status_label.setText("")
        self._end()

    def _end(self) -> None:
        self.running = None
        for b in self.buttons.values():
            b.setEnabled(True)
        self.cancel_button.setEnabled(False)
        self.progress.setRange(0, 1)
        self.refresh()

    def _on_finished(self, result: Any) -> None:
        self.progress.setValue(1)
        if self.running == "fetch":
            self.banner.show_message(f"Fetched the bundled data: {len(result)} datasets. Next: build the demo zoo, "
                                     "or open Tasks & data to read them.", "ok")
        else:
            self.banner.show_message("The demo zoo is ready: " + ", ".join(
                f"{r['model']} ({r['status']}, dev macro-F1 {r['dev_macro_f1']:.1f})" for r in result)
                + ". Next: Evaluate, then the Leaderboard.", "ok")
        self.status_label.setText("done")
        self._end()

    def _on_failed(self, message: str) -> None:
        self.loading = False
        self.banner.error(message)
        if self.running is not None:
            self.status_label.setText("stopped by an error")
            self._end()

    def _on_cancelled(self) -> None:
        self.banner.show_message("Cancelled: what was stored before stays; run the step again to go on.", "warn")
        self.status_label.setText("cancelled")
        self._end()

    def shutdown(self) -> None:
        self._svc.cancel()


def make(services: Services, parent: QWidget | None = None) -> StartPage:
    return StartPage(StartService(services.ws), parent=parent)
