"""Page base class and the shared bits every page uses: error banner, "not available" state."""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from PySide6.QtCore import QObject, Qt, Signal
from PySide6.QtWidgets import QComboBox, QFrame, QHBoxLayout, QLabel, QLineEdit, QPushButton, QVBoxLayout, QWidget

from dynadesk.errors import DynaDeskError
from dynadesk.gui.pages.scaffold import task_selector

if TYPE_CHECKING:
    from dynadesk.gui.services.data import DataService


class Banner(QFrame):
    """A coloured message strip: errors from the core are shown here in full, never swallowed."""

    STYLES = {
        "error": "background:#fdecea; color:#611a15; border:1px solid #f5c6cb;",
        "ok": "background:#e8f5e9; color:#1b5e20; border:1px solid #a5d6a7;",
        "info": "background:#e3f2fd; color:#0d47a1; border:1px solid #90caf9;",
        "warn": "background:#fff8e1; color:#6d4c00; border:1px solid #ffe082;",
    }

    def __init__(self, parent: QWidget | None = None, closable: bool = True):
        super().__init__(parent)
        self.kind = ""
        lay = QHBoxLayout(self)
        lay.setContentsMargins(8, 6, 8, 6)
        self.label = QLabel()
        self.label.setWordWrap(True)
        self.label.setTextInteractionFlags(Qt.TextInteractionFlag.TextSelectableByMouse)
        lay.addWidget(self.label, 1)
        self.close_button = QPushButton("✕")
        self.close_button.setFlat(True)
        self.close_button.setFixedWidth(28)
        self.close_button.setToolTip("Dismiss")
        self.close_button.clicked.connect(self.clear)
        if not closable:
            self.close_button.hide()
        lay.addWidget(self.close_button, 0, Qt.AlignmentFlag.AlignTop)
        self.hide()

    def show_message(self, text: str, kind: str = "info") -> None:
        self.kind = kind
        self.setStyleSheet(f"Banner {{{self.STYLES.get(kind, '')} border-radius:4px;}}")
        self.label.setStyleSheet(self.STYLES.get(kind, "").split("border")[0])
        self.label.setText(text)
        self.show()

    def error(self, text: str) -> None:
        self.show_message(text, "error")

    def text(self) -> str:
        return "" if self.isHidden() else self.label.text()

    def clear(self) -> None:
        self.kind = ""
        self.label.clear()
        self.hide()


class NotAvailable(QWidget):
    """Shown instead of a page whose library capability has not landed: no fake data."""

    def __init__(self, title: str, why: str, parent: QWidget | None = None):
        super().__init__(parent)
        lay = QVBoxLayout(self)
        lay.addStretch(1)
        head = QLabel(f"<h2>{title}: not available yet</h2>")
        head.setAlignment(Qt.AlignmentFlag.AlignCenter)
        body = QLabel(why)
        body.setWordWrap(True)
        body.setAlignment(Qt.AlignmentFlag.AlignCenter)
        body.setObjectName("notAvailableReason")
        lay.addWidget(head)
        lay.addWidget(body)
        lay.addStretch(2)


class Page(QWidget):
    """A sidebar page: ``refresh()`` runs each time the page is shown; errors go to ``self.banner``."""

    title = "Page"
    statusMessage = Signal(str)
    _show_task: Callable[..., Any] | None = None  # a task page's handler of the task chosen (see task_bar)

    def __init__(self, parent: QWidget | None = None):
        super().__init__(parent)
        self._outer = QVBoxLayout(self)
        self._outer.setContentsMargins(12, 10, 12, 10)
        header = QLabel(f"<h2 style='margin:0'>{self.title}</h2>")
        self._outer.addWidget(header)
        self.banner = Banner(self)
        self._outer.addWidget(self.banner)

    def body(self) -> QVBoxLayout:
        return self._outer

    def refresh(self) -> None:
        """Reload what the page shows from its services; on a task page, the tasks and then the task on screen."""
        if self._show_task is not None:
            self.fill_tasks()
            self._show_task()

    def task_bar(self, show: Callable[..., Any], source: Any, *, rounds: bool = False) -> QHBoxLayout:
        """Open the page with the task selector (``self.task_combo``), filled by :meth:`fill_tasks` from
        ``source`` (``tasks()`` and ``preferred_task()``: the task that has data, or a round when ``rounds``);
        ``show`` shows the task chosen. Returns the row, for the page's own widgets after it."""
        bar, combo = task_selector()
        self.use_tasks(combo, source, rounds=rounds, show=show)
        self.body().addLayout(bar)
        return bar

    def use_tasks(self, combo: QComboBox, source: Any, *, rounds: bool = False,
                  show: Callable[..., Any] | None = None) -> None:
        """Make ``combo`` the page's task selector (one placed in a form rather than a header row)."""
        self.task_combo = combo
        self._task_source, self._rounds_first, self._show_task = source, rounds, show
        if show is not None:
            combo.currentIndexChanged.connect(show)

    def fill_tasks(self) -> None:
        """Refill the task selector, keeping the task on screen (see :func:`refill_combo`)."""
        source = self._task_source
        prefer = self.guard(source.preferred_task, rounds=True) if self._rounds_first else \
            self.guard(source.preferred_task)
        refill_combo(self.task_combo, self.guard(source.tasks) or {}, prefer=prefer)

    def select_task(self, name: str) -> None:
        self.task_combo.setCurrentText(name)

    def follow(self, service: QObject, **handlers: Callable[..., Any]) -> None:
        """Connect a service's signals to this page's handlers by name (``progress=self._on_progress`` ...). A job
        service's ``left`` (its job ended after its workspace was closed) goes to the banner unless handled."""
        if hasattr(type(service), "left"):
            handlers.setdefault("left", self.job_left)
        for name, handler in handlers.items():
            getattr(service, name).connect(handler)

    def job_left(self, line: str) -> None:
        """A job started in a workspace since closed ended: one line here, its outcome kept off this view."""
        self.banner.show_message(line, "info")

    def required(self, edit: QLineEdit, missing: str) -> str | None:
        """``edit``'s text, stripped; when empty, ``missing`` (what to choose or enter, and where) in the banner
        and None, so an action never starts on a blank field."""
        text = edit.text().strip()
        if not text:
            self.banner.error(missing)
            return None
        return text

    def guard(self, fn, *args, **kwargs):
        """Call ``fn``; a :class:`DynaDeskError` is shown in the banner and ``None`` returned."""
        try:
            return fn(*args, **kwargs)
        except DynaDeskError as exc:
            self.banner.error(str(exc))
            return None


class ServicePage(Page):
    """A page over its own service (Start, Leaderboard; with the workspace's data, :class:`DataPage`). The constructor
    they share is this one: a page lays out its widgets and connects its service in :meth:`build`, reaching it as
    ``self._svc`` (a subclass names its type: ``_svc: StartService``), then opens showing what its services hold
    (:meth:`refresh`)."""

    _svc: QObject

    def __init__(self, service: QObject, parent: QWidget | None = None):
        super().__init__(parent)
        self._svc = service
        self.build(self.body())
        self.refresh()

    def build(self, lay: QVBoxLayout) -> None:
        """Lay out the page's widgets in ``lay`` (its body, under the title and the banner) and connect its
        service; called once, by the constructor, after the page's services are set."""
        raise NotImplementedError(f"{type(self).__name__} lays out no widgets: define build()")


class DataPage(ServicePage):
    """A :class:`ServicePage` that also reads the workspace's data (tasks, datasets) as ``self._data``: Annotate,
    Validate, Rounds, Train, Models."""

    def __init__(self, service: QObject, data: DataService, parent: QWidget | None = None):
        self._data = data  # before the base constructor, which builds the page
        super().__init__(service, parent)

def refill_combo(combo, items, prefer: str | None = None) -> None:
    """Replace a combo box's items without firing change signals, keeping the current choice if it remains;
    a box with no choice yet opens on ``prefer`` (a task that has data) when it is among the items."""
    items = list(items)
    current = combo.currentText() or (prefer or "")
    combo.blockSignals(True)
    combo.clear()
    combo.addItems(items)
    if current in items:
        combo.setCurrentText(current)
    combo.blockSignals(False)
