"""The desktop app's keyboard and screen-reader reach (issue 38): Tab walks every page's focus chain, and every
widget it lands on carries an accessible name (its own, its text, or a label buddy's) as a screen reader gets it
through Qt's accessibility interface. No widget traps Tab (a text editor moves focus on, it does not insert a tab).
"""

from __future__ import annotations

import pytest
from PySide6.QtCore import Qt

pytestmark = pytest.mark.qt

MAX_TABS = 400


def accessible_name(widget) -> str:
    """What a screen reader announces as the widget's name (accessibleName, its text, or its label buddy's)."""
    from PySide6.QtGui import QAccessible

    iface = QAccessible.queryAccessibleInterface(widget)
    return (iface.text(QAccessible.Text.Name) if iface is not None else "").strip()


def describe(widget) -> str:
    return f"{type(widget).__name__}(objectName={widget.objectName()!r}, parent={type(widget.parent()).__name__})"


def tab_walk(qtbot, window, page) -> list:
    """Press Tab from the sidebar until focus comes back round; the page's widgets reached, in order."""
    from PySide6.QtWidgets import QApplication

    window.sidebar.setFocus()
    qtbot.waitUntil(lambda: QApplication.focusWidget() is window.sidebar, timeout=3000)
    reached, seen = [], set()
    for _ in range(MAX_TABS):
        qtbot.keyClick(QApplication.focusWidget(), Qt.Key.Key_Tab)
        w = QApplication.focusWidget()
        if w is None or id(w) in seen:
            break
        seen.add(id(w))
        if page.isAncestorOf(w):
            reached.append(w)
    return reached


def tab_focusable(page) -> list:
    """The page's widgets Tab should reach: visible, enabled, accepting Tab focus."""
    from PySide6.QtWidgets import QWidget

    return [w for w in page.findChildren(QWidget)
            if w.isVisibleTo(page) and w.isEnabled() and w.focusPolicy() & Qt.FocusPolicy.TabFocus
            and w.focusProxy() is None]


def test_every_page_focus_chain_is_walkable_and_every_stop_is_named(gui, qtbot):
    from dynadesk.gui.main_window import PAGES

    _services, window = gui
    problems = []
    walked = 0
    for row, spec in enumerate(PAGES):
        window.sidebar.setCurrentRow(row)
        page = window.pages[spec.key]
        qtbot.waitUntil(lambda page=page: window.stack.currentWidget() is page, timeout=5000)
        reached = tab_walk(qtbot, window, page)
        walked += len(reached)
        assert reached, f"page {spec.key}: Tab reaches none of its controls"
        missed = [describe(w) for w in tab_focusable(page) if w not in reached]
        if missed:
            problems.append(f"{spec.key}: not reachable by Tab: {missed}")
        unnamed = [describe(w) for w in reached if not accessible_name(w)]
        if unnamed:
            problems.append(f"{spec.key}: no accessible name: {unnamed}")
    print(f"\nfocus chain: {walked} stops over {len(PAGES)} pages")
    assert not problems, "\n".join(problems)
