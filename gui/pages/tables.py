"""Read-only tables used by every page: one look, numeric cells sort and align as numbers."""

from __future__ import annotations

from collections.abc import Set

from PySide6.QtCore import Qt
from PySide6.QtWidgets import QAbstractItemView, QHeaderView, QTableWidget, QTableWidgetItem


def table(headers: list[str]) -> QTableWidget:
    t = QTableWidget(0, len(headers))
    t.setHorizontalHeaderLabels(headers)
    t.setEditTriggers(QAbstractItemView.EditTrigger.NoEditTriggers)
    t.setSelectionBehavior(QAbstractItemView.SelectionBehavior.SelectRows)
    t.setSelectionMode(QAbstractItemView.SelectionMode.SingleSelection)
    t.verticalHeader().setVisible(False)
    t.horizontalHeader().setStretchLastSection(True)
    t.setAlternatingRowColors(True)
    t.setTabKeyNavigation(False)  # Tab leaves the table (arrow keys move between cells): no keyboard trap
    return t


def fill(t: QTableWidget, rows: list[list[object]], numeric: Set[int] = frozenset(), resize: bool = True) -> None:
    """Replace the table's rows; ``resize=False`` keeps column widths (fast refills, e.g. while a slider moves).
    A sortable table stays sortable, and is sized with its sort arrow in the headers (nothing cut, issue 47)."""
    sorting = t.isSortingEnabled()
    t.setSortingEnabled(False)
    t.setRowCount(len(rows))
    for r, row in enumerate(rows):
        for c, value in enumerate(row):
            item = QTableWidgetItem()
            if isinstance(value, (int, float)) and not isinstance(value, bool):
                item.setData(Qt.ItemDataRole.DisplayRole, value)
            else:
                item.setText("" if value is None else str(value))
            if c in numeric:
                item.setTextAlignment(Qt.AlignmentFlag.AlignRight | Qt.AlignmentFlag.AlignVCenter)
            t.setItem(r, c, item)
    t.setSortingEnabled(sorting)
    if resize:
        fit(t)


def fit(t: QTableWidget) -> None:
    """Every column as wide as its header and cells; the last one stretches into what is left."""
    t.resizeColumnsToContents()
    t.horizontalHeader().setSectionResizeMode(t.columnCount() - 1, QHeaderView.ResizeMode.Stretch)
