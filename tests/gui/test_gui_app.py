"""The window skeleton, the Tasks & data page (import with a per-line report) and Settings,
driven through the real widgets on a real workspace database in tmp_path."""

from __future__ import annotations

import json

import pytest
from PySide6.QtCore import Qt
from support.gui import sentiment_rows, write_jsonl

pytestmark = pytest.mark.qt


def _import(qtbot, page, path, task="sentiment", name=""):
    page.import_path.setText(str(path))
    page.import_task.setCurrentIndex(page.import_task.findData(task))
    page.import_name.setText(name)
    with qtbot.waitSignal(page._data.importFinished, timeout=10_000):
        qtbot.mouseClick(page.import_button, Qt.MouseButton.LeftButton)


def test_tasks_listed_with_labels_and_metrics(gui):
    _services, window = gui
    page = window.show_page("tasks_data")
    t = page.tasks_table
    rows = {t.item(r, 0).text(): [t.item(r, c).text() for c in range(t.columnCount())] for r in range(t.rowCount())}
    assert set(rows) >= {"sentiment", "nli", "qa", "hate_speech"}
    assert rows["sentiment"][4] == "negative, neutral, positive"
    assert rows["sentiment"][5] == "macro_f1"
    assert rows["qa"][4] == "span of context"
    assert rows["qa"][5].startswith("squad_f1")


def test_import_through_page_stores_dataset_and_charts_labels(gui, qtbot, tmp_path):
    services, window = gui
    page = window.show_page("tasks_data")
    rows = sentiment_rows(7)
    path = write_jsonl(tmp_path / "mine.jsonl", rows)
    _import(qtbot, page, path, name="my-set")
    assert page.banner.kind == "ok", page.banner.text()
    assert "Imported 7 examples as 'my-set'" in page.banner.text()
    assert page.selected_dataset() == "my-set"
    names = [page.datasets_table.item(r, 0).text() for r in range(page.datasets_table.rowCount())]
    assert "my-set" in names
    expected = {lab: sum(1 for r in rows if r["label"] == lab) for lab in ("negative", "neutral", "positive")}
    assert dict(page.chart.rows()) == expected
    assert page.preview.rowCount() == 7
    # the database really changed: read it through a separate connection
    from dynadesk.store import Store

    other = Store.open(services.ws.workspace.db_path)
    try:
        assert other.datasets.get("my-set").size == 7
        assert [e["id"] for e in other.datasets.examples("my-set")] == [r["id"] for r in rows]
    finally:
        other.close()


def test_bad_import_reports_every_line_and_stores_nothing(gui, qtbot, tmp_path):
    services, window = gui
    page = window.show_page("tasks_data")
    good = sentiment_rows(3)
    path = tmp_path / "bad.jsonl"
    path.write_text(json.dumps(good[0]) + "\n{not json\n" + json.dumps({**good[1], "label": "furious"}) + "\n"
                    + json.dumps(good[2]) + "\n", encoding="utf-8")
    _import(qtbot, page, path)
    assert page.banner.kind == "error"
    assert "2 bad line(s)" in page.banner.text()
    problems = [page.problems.item(i).text() for i in range(page.problems.count())]
    assert len(problems) == 2
    assert problems[0].startswith("line 2: not valid JSON")
    assert problems[1].startswith("line 3:") and "furious" in problems[1]
    assert services.ws.store.datasets.list() == []
    assert page.import_button.isEnabled()


def test_settings_persist_and_switch_workspace(gui, qtbot, tmp_path):
    services, window = gui
    page = window.show_page("settings")
    page.server_edit.clear()
    qtbot.keyClicks(page.server_edit, "http://example.test:9000")
    qtbot.keyClick(page.server_edit, Qt.Key.Key_Return)
    page.timeout.setValue(600)
    from dynadesk.gui.services.settings import AppSettings

    again = AppSettings(tmp_path / "settings.ini")
    assert again.get("server_url") == "http://example.test:9000"
    assert again.get("limits/timeout_s") == 600
    # a dataset in the second workspace only
    from dynadesk.data import import_dataset
    from dynadesk.workspace import open_workspace

    other_home = tmp_path / "other"
    _ws, st = open_workspace(other_home)
    import_dataset(st, "sentiment", write_jsonl(tmp_path / "o.jsonl", sentiment_rows(4)), name="other-set")
    st.close()
    page.workspace_edit.setText(str(other_home))
    qtbot.mouseClick(page.open_button, Qt.MouseButton.LeftButton)
    assert page.banner.kind == "ok"
    assert str(other_home) in window.workspace_label.text()
    assert AppSettings(tmp_path / "settings.ini").get("workspace") == str(other_home.resolve())
    data_page = window.show_page("tasks_data")
    names = [data_page.datasets_table.item(r, 0).text() for r in range(data_page.datasets_table.rowCount())]
    assert names == ["other-set"]


def test_status_bar_reports_docker_check_off_the_ui_thread(gui, qtbot):
    services, window = gui
    assert window.workspace_label.text().endswith(str(services.ws.home))
    with qtbot.waitSignal(services.status.dockerChecked, timeout=15_000) as blocker:
        services.status.refresh()
    ok, detail = blocker.args
    assert window.docker_label.text() == ("Docker: ✔ answers" if ok else "Docker: ✘ not answering")
    assert window.docker_label.toolTip() == detail


def test_every_page_is_built_and_a_broken_one_says_why(gui, monkeypatch):
    """No page is hidden behind an install check; a page whose code fails shows the error, not fake data."""
    from dynadesk.gui import main_window
    from dynadesk.gui.pages.base import NotAvailable

    _services, window = gui
    for spec in main_window.PAGES:
        assert not isinstance(window.page(spec.key), NotAvailable), spec.key
    broken = main_window.PageSpec("broken", "Broken", "dynadesk.gui.pages.not_there:make")
    monkeypatch.setattr(main_window, "PAGES", [*main_window.PAGES, broken])
    page = window.page("broken")
    assert isinstance(page, NotAvailable)
    reason = page.findChild(type(page.layout().itemAt(2).widget()), "notAvailableReason")
    assert "failed to load" in reason.text() and "dynadesk.gui.pages.not_there" in reason.text()


def test_sidebar_keyboard_navigation(gui, qtbot):
    _services, window = gui
    qtbot.keyClick(window, Qt.Key.Key_9, Qt.KeyboardModifier.AltModifier)
    from dynadesk.gui.main_window import PAGES

    assert window.stack.currentWidget() is window.pages[PAGES[8].key]


def _headless_env():
    import os

    env = dict(os.environ)
    for k in ("DISPLAY", "WAYLAND_DISPLAY", "QT_QPA_PLATFORM"):
        env.pop(k, None)  # the app must pick the offscreen platform itself
    return env


def test_cli_gui_smoke_loads_a_model_and_predicts(require_qt, tmp_path):
    import subprocess
    import sys
    from pathlib import Path

    from support.gui import majority_model

    from dynadesk.models import register_model
    from dynadesk.workspace import open_workspace

    _ws, st = open_workspace(tmp_path / "ws")
    register_model(st, majority_model(tmp_path / "maj"), "sentiment", name="maj")
    st.close()
    exe = str(Path(sys.executable).with_name("dynadesk"))
    proc = subprocess.run([exe, "--home", str(tmp_path / "ws"), "gui", "--smoke"], capture_output=True, text=True,
                          env=_headless_env(), timeout=180)
    assert proc.returncode == 0, proc.stderr
    out = json.loads(proc.stdout.strip().splitlines()[-1])
    assert out["model"] == "maj" and out["prediction"]["label"] == "positive"

    empty = subprocess.run([str(Path(sys.executable).with_name("dynadesk-gui")), "--home", str(tmp_path / "empty"),
                            "--settings", str(tmp_path / "s.ini"), "--smoke"], capture_output=True, text=True,
                           env=_headless_env(), timeout=180)
    assert empty.returncode == 3 and "no model registered" in empty.stderr


def test_window_opens_without_importing_torch_and_fills_in(require_qt, tmp_path):
    import subprocess
    import sys

    code = ("import sys\n"
            "from dynadesk.gui import app\n"
            "rc = app.main(['--home', sys.argv[1], '--settings', sys.argv[2], '--quit-after-paint'])\n"
            "print('torch', 'torch' in sys.modules, 'rc', rc)\n")
    proc = subprocess.run([sys.executable, "-c", code, str(tmp_path / "ws"), str(tmp_path / "s.ini")],
                          capture_output=True, text=True, env=_headless_env(), timeout=180)
    lines = proc.stdout.splitlines()
    assert proc.returncode == 0, proc.stderr
    assert lines[0].startswith("first-paint-s") and lines[1].startswith("ready-s")
    assert lines[-1] == "torch False rc 0"
