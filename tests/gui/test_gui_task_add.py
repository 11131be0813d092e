"""Tasks added from the app (issue 47): the Tasks & data page stores a lab's task file in the workspace (the
library's checks, the same as ``dynadesk tasks add``); the new task joins every task box; a bad file is refused
whole with the library's line and nothing stored (pytest-qt, offscreen, real workspace)."""

from __future__ import annotations

import pytest
from PySide6.QtCore import Qt

pytestmark = pytest.mark.qt

EMOTION = """\
name: emotion
title: Five-way emotion
description: Which emotion does the sentence express?
inputs:
  - name: statement
    description: the sentence
output:
  kind: label
  labels: [joy, sadness, anger, fear, surprise]
metric: macro_f1
fooled_rule:
  kind: label_mismatch
validation:
  votes_needed: 2
"""


def _add(qtbot, page, path) -> None:
    page.task_file.setText(str(path))
    with qtbot.waitSignal(page._data.taskAdded, timeout=10_000):
        qtbot.mouseClick(page.add_task_button, Qt.MouseButton.LeftButton)


def test_a_task_file_added_from_the_app_joins_every_task_box(gui, qtbot, tmp_path):
    services, window = gui
    page = window.show_page("tasks_data")
    bad = tmp_path / "bad.yaml"
    bad.write_text(EMOTION.replace("kind: label\n", "kind: regression\n"), encoding="utf-8")
    _add(qtbot, page, bad)
    assert page.banner.kind == "error" and "bad.yaml" in page.banner.text()
    assert services.ws.store.tasks.all() == {}

    good = tmp_path / "emotion.yaml"
    good.write_text(EMOTION, encoding="utf-8")
    _add(qtbot, page, good)
    assert page.banner.kind == "ok" and "emotion" in page.banner.text()
    assert list(services.ws.store.tasks.all()) == ["emotion"]
    names = [page.tasks_table.item(r, 0).text() for r in range(page.tasks_table.rowCount())]
    assert "emotion" in names
    assert page.import_task.findData("emotion") >= 0
    assert window.show_page("annotate").task_combo.findText("emotion") >= 0
