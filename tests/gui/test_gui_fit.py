"""Nothing cut (issue 47): on the demo-like workspace, in a window of the default size, every table column on every
page is at least as wide as its header and its cells' text (the last column stretches), and every task, round,
model and dataset box is wide enough for the text it shows. Real window, real workspace, Qt's own size hints."""

from __future__ import annotations

import pytest
from support.gui import demo_like_workspace, loaded, make_window

pytestmark = pytest.mark.qt

SKIP_PAGES = {"leaderboard"}  # its own tests (tests/gui/test_gui_leaderboard.py) check its table's fit
COMBO_ARROW_PX = 24  # the drop-down arrow and the frame beside the text


def cut_columns(t) -> list[str]:
    out = []
    header = t.horizontalHeader()
    for c in range(t.columnCount() - 1):  # the last column stretches into what is left
        if t.isColumnHidden(c) or t.rowCount() == 0:
            continue
        need = max(t.sizeHintForColumn(c), header.sectionSizeHint(c))
        if t.columnWidth(c) < need:
            out.append(f"{t.accessibleName() or t.objectName()}[{t.horizontalHeaderItem(c).text()}]"
                       f" {t.columnWidth(c)} < {need}")
    return out


def cut_combos(page) -> list[str]:
    from PySide6.QtWidgets import QComboBox

    out = []
    for combo in page.findChildren(QComboBox):
        text = combo.currentText()
        if not combo.isVisibleTo(page) or not text:
            continue
        need = combo.fontMetrics().horizontalAdvance(text) + COMBO_ARROW_PX
        if combo.width() < need:
            out.append(f"{combo.accessibleName() or type(combo.parent()).__name__}: '{text}' {combo.width()} < {need}")
    return out


def test_nothing_is_cut_on_any_page(require_qt, qtbot, tmp_path):
    from PySide6.QtWidgets import QTableWidget

    from dynadesk.gui.main_window import PAGES

    services, window = make_window(qtbot, tmp_path, demo_like_workspace(tmp_path))
    try:
        problems = []
        for spec in PAGES:
            if spec.key in SKIP_PAGES:
                continue
            page = loaded(qtbot, window.show_page(spec.key))
            qtbot.wait(100)
            for t in page.findChildren(QTableWidget):
                if t.isVisibleTo(page):
                    problems += [f"{spec.key}: {p}" for p in cut_columns(t)]
            problems += [f"{spec.key}: {p}" for p in cut_combos(page)]
        assert not problems, "\n".join(problems)
    finally:
        window.close()
        services.close()
