"""The pieces every page builds its layout from, so a page constructor says what it shows, not how.

Before this module each page wrote them out again: the "Task" selector row with its refill and
``select_task`` (6 pages), zero-margin panes inside splitters (9), named read-only tables wired to a
selection handler (10), read-only log and detail views that let Tab move on (5), grey hint lines, a
path field with its "Browse…" button (5), buttons wired to a handler. One look, one keyboard
behaviour (no Tab trap), one accessible name per widget, written once.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from typing import Any, TypeVar

from PySide6.QtGui import QKeySequence, QShortcut
from PySide6.QtWidgets import (
    QBoxLayout,
    QComboBox,
    QDoubleSpinBox,
    QFileDialog,
    QGroupBox,
    QHBoxLayout,
    QLabel,
    QLayout,
    QLineEdit,
    QPlainTextEdit,
    QPushButton,
    QSpinBox,
    QTableWidget,
    QTextBrowser,
    QVBoxLayout,
    QWidget,
)

from dynadesk.gui.charts import ProbabilityBars
from dynadesk.gui.pages.tables import table
from dynadesk.tasks import InputField

SpinBox = TypeVar("SpinBox", QSpinBox, QDoubleSpinBox)

__all__ = ["boxed", "browse_into", "browser", "button", "hbox", "hint", "input_edit", "named_table", "pane",
           "path_row", "prediction_view", "read_only_text",
           "shortcuts", "spin",
           "task_selector"]


def pane(horizontal: bool = False) -> tuple[QWidget, QBoxLayout]:
    """A widget for a splitter's side and its layout, without margins of its own (the page has them)."""
    widget = QWidget()
    lay: QBoxLayout = QHBoxLayout(widget) if horizontal else QVBoxLayout(widget)
    lay.setContentsMargins(0, 0, 0, 0)
    return widget, lay


def hbox(*items: QWidget | QLayout | int | None) -> QHBoxLayout:
    """A horizontal row of widgets; an ``int`` is a stretch of that factor, ``None`` a stretch of 1."""
    out = QHBoxLayout()
    for item in items:
        if item is None or isinstance(item, int):
            out.addStretch(1 if item is None else item)
        elif isinstance(item, QLayout):
            out.addLayout(item)
        else:
            out.addWidget(item)
    return out


def boxed(title: str, *widgets: QWidget) -> QGroupBox:
    """A titled group box holding ``widgets`` one under the other."""
    box = QGroupBox(title)
    lay = QVBoxLayout(box)
    for w in widgets:
        lay.addWidget(w)
    return box


def button(text: str, on_click: Callable[..., Any] | None = None, *, tooltip: str = "",
           enabled: bool = True) -> QPushButton:
    """A push button wired to ``on_click`` (called without the ``checked`` argument)."""
    b = QPushButton(text)
    if on_click is not None:
        b.clicked.connect(lambda _checked=False: on_click())
    if tooltip:
        b.setToolTip(tooltip)
    b.setEnabled(enabled)
    return b


def named_table(headers: list[str], name: str, on_select: Callable[[], Any] | None = None, *,
                sortable: bool = False) -> QTableWidget:
    """A read-only table (:func:`~dynadesk.gui.pages.tables.table`) with its accessible name and selection handler."""
    t = table(headers)
    t.setAccessibleName(name)
    if sortable:
        t.setSortingEnabled(True)
    if on_select is not None:
        t.itemSelectionChanged.connect(on_select)
    return t


def read_only_text(name: str, placeholder: str = "", max_lines: int = 0) -> QPlainTextEdit:
    """A read-only text view (a log, a run's details) that Tab leaves: no keyboard trap."""
    view = QPlainTextEdit()
    view.setAccessibleName(name)
    view.setTabChangesFocus(True)
    view.setReadOnly(True)
    if max_lines:
        view.setMaximumBlockCount(max_lines)
    if placeholder:
        view.setPlaceholderText(placeholder)
    return view


def browser(name: str) -> QTextBrowser:
    """A rich-text view of an example or a context that Tab leaves: no keyboard trap."""
    view = QTextBrowser()
    view.setAccessibleName(name)
    view.setTabChangesFocus(True)
    return view


def hint(text: str = "") -> QLabel:
    """A grey, wrapped line that explains (keyboard shortcuts, why an option is off)."""
    label = QLabel(text)
    label.setWordWrap(True)
    label.setStyleSheet("color:#555")
    return label


def path_row(placeholder: str, on_browse: Callable[[], Any], button_text: str = "Browse…",
             name: str = "") -> tuple[QHBoxLayout, QLineEdit]:
    """A path field with the button that opens a file dialog for it; returns the row and the field."""
    edit = QLineEdit()
    edit.setPlaceholderText(placeholder)
    if name:
        edit.setAccessibleName(name)
    out = QHBoxLayout()
    out.addWidget(edit, 1)
    out.addWidget(button(button_text, on_browse))
    return out, edit


def browse_into(edit: QLineEdit, title: str, file_filter: str = "", start: str = "") -> bool:
    """What a path field's "Browse…" does: ask for a folder (or, given ``file_filter``, a file to open) starting at
    ``start``, and put the path chosen into ``edit``. False when the dialog was cancelled (``edit`` unchanged)."""
    if file_filter:
        path, _ = QFileDialog.getOpenFileName(edit, title, start, file_filter)
    else:
        path = QFileDialog.getExistingDirectory(edit, title, start)
    if path:
        edit.setText(path)
    return bool(path)


def input_edit(field: InputField) -> QPlainTextEdit:
    """The editor of one task input, as every page that asks for an example's inputs shows it: the field's
    description as placeholder, its name for screen readers, Tab moving on (no keyboard trap), a context field
    taller than the others."""
    edit = QPlainTextEdit()
    edit.setPlaceholderText(field.description)
    edit.setAccessibleName(field.name)
    edit.setTabChangesFocus(True)
    edit.setMaximumHeight(90 if field.is_context else 60)
    return edit


def prediction_view(lay: QBoxLayout) -> tuple[QLabel, ProbabilityBars]:
    """What a page shows of one model prediction, added to ``lay``: a wrapped line for the answer and, under it,
    the label probabilities (Models' "Try it", Annotate's last example)."""
    line = QLabel()
    line.setWordWrap(True)
    lay.addWidget(line)
    bars = ProbabilityBars()
    lay.addWidget(bars)
    return line, bars


def spin(box: SpinBox, low: float, high: float, value: float, suffix: str = "") -> SpinBox:
    """A spin box (integer or decimal) with its range, unit and value."""
    box.setRange(low, high)  # type: ignore[arg-type]
    if suffix:
        box.setSuffix(suffix)
    box.setValue(value)  # type: ignore[arg-type]
    return box


def task_selector(label: str = "Task") -> tuple[QHBoxLayout, QComboBox]:
    """The row a task page opens with: "Task" and its selector (more widgets are added to the row by the page)."""
    combo = QComboBox()
    combo.setAccessibleName(label)
    out = QHBoxLayout()
    out.addWidget(QLabel(label))
    out.addWidget(combo)
    return out, combo



def shortcuts(page: QWidget, keys: Iterable[tuple[str, Callable[[], Any]]]) -> None:
    """The page's keyboard shortcuts: each key sequence calls its function while the page is shown."""
    for key, fn in keys:
        QShortcut(QKeySequence(key), page, fn)
