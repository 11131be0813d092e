"""Table refills must not leak or drop references: a long GUI session refills tables thousands of times."""

from __future__ import annotations

import sys

import pytest

pytestmark = pytest.mark.qt


def test_ten_thousand_table_refills_keep_none_alive(qtbot):
    from dynadesk.gui.pages.tables import fill, table

    t = table(["rank", "model", "score", "range"])
    qtbot.addWidget(t)
    rows = [[i, f"model-{i}", i / 3, ""] for i in range(30)]
    fill(t, rows, numeric={0, 2})
    before = sys.getrefcount(None)
    for _ in range(100):  # 100 x 30 x 4 setItem calls plus setRowCount / setSortingEnabled each time
        fill(t, rows, numeric={0, 2}, resize=False)
    # PySide6 6.12.0 drops one reference to None per such call (thousands here); on Python 3.11 the
    # interpreter then aborts with "deallocating None" once the count reaches zero
    assert sys.getrefcount(None) >= before - 50
    assert t.rowCount() == 30 and t.item(29, 1).text() == "model-29"
