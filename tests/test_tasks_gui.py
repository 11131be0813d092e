"""A five-label workspace task through the app's widgets: its form has one button per label, and
create -> validate -> round stats work as for a bundled task (the flow of tests/test_gui_task_flows.py)."""

from __future__ import annotations

from pathlib import Path

import pytest
from gui_support import majority_model
from PySide6.QtCore import Qt
from test_gui_task_flows import _app, _open_round, _round_row, _submit, _switch_annotator
from test_tasks_workspace import EMOTION

from dynadesk.tasks import parse_task_text
from dynadesk.workspace import Workspace

pytestmark = pytest.mark.qt

LABELS = ("joy", "sadness", "anger", "fear", "surprise")


def test_five_label_workspace_task_create_validate_stats(require_qt, qtbot, tmp_path: Path) -> None:
    home = tmp_path / "ws"
    store = Workspace(home).ensure().open_store()
    store.tasks.add(parse_task_text(EMOTION, "emotion.yaml"), EMOTION)
    store.close()
    folder = majority_model(tmp_path / "model", task="emotion", counts={"joy": 5, "sadness": 1},
                            labels=LABELS, inputs=("statement",))
    services, window = _app(qtbot, tmp_path, "emotion", folder)
    try:
        _open_round(qtbot, window, "emotion")
        page = window.show_page("annotate")
        page.select_task("emotion")
        assert list(page.inputs) == ["statement"]
        buttons = [b.property("label") for b in page.target_group.buttons()]
        assert buttons == list(LABELS)  # one button per label of the task file, in its order
        for text, key, fooled in (("the storm tore the roof away", 3, True), ("what a lovely party", 0, False)):
            qtbot.waitUntil(page.inputs["statement"].hasFocus, timeout=2000)
            qtbot.keyClicks(page.inputs["statement"], text)
            qtbot.keyClick(page.focusWidget(), Qt.Key(Qt.Key.Key_1 + key), Qt.KeyboardModifier.ControlModifier)
            assert page.target_group.checkedButton().property("label") == LABELS[key]
            ex = _submit(qtbot, page)
            assert (ex.target, ex.fooled) == (LABELS[key], fooled)
        _switch_annotator(window, "olga")
        val = window.show_page("validate")
        val.select_task("emotion")
        assert val.progress_label.text() == "0 done · 2 left"
        val.setFocus()
        qtbot.keyClick(val, Qt.Key.Key_C)
        assert val.banner.kind == "ok", val.banner.text()
        qtbot.keyClick(val, Qt.Key.Key_C)
        assert val.progress_label.text() == "2 done · 0 left"
        row = _round_row(window, "emotion")
        assert row[3:8] == ["2", "1", "1", "50.0%", "50.0%"], row  # as for a bundled task
    finally:
        window.close()
        services.close()
