"""A blank (or all-space) path field stops its action with one line in the page's banner saying what to choose,
on every page that asks for a path (one ``Page.required`` behind all of them): nothing starts, nothing changes."""

from __future__ import annotations

import pytest
from PySide6.QtCore import Qt

pytestmark = pytest.mark.qt


def click(qtbot, widget) -> None:
    qtbot.mouseClick(widget, Qt.MouseButton.LeftButton)


def test_a_blank_path_is_named_in_the_banner_and_starts_nothing(gui, qtbot):
    services, window = gui

    models = window.show_page("models")
    models.path_edit.setText("   ")
    click(qtbot, models.register_button)
    assert (models.banner.kind, models.banner.text()) == ("error", "Choose a model folder.")
    assert models.register_button.isEnabled()  # no registration began
    assert services.ws.store.models.list() == []

    data = window.show_page("tasks_data")
    tasks_before = set(services.data.tasks())
    data.task_file.setText("")
    click(qtbot, data.add_task_button)
    assert data.banner.kind == "error"
    assert data.banner.text().startswith("Choose a task file (YAML) to add")
    assert set(services.data.tasks()) == tasks_before

    audit = window.show_page("audit")
    audit.path_edit.setText(" \t ")
    assert audit.verify() is False
    assert (audit.banner.kind, audit.banner.text()) == ("error", "Choose a bundle file.")
    assert audit.fields.rowCount() == 0

    settings = window.show_page("settings")
    home = services.ws.home
    settings.workspace_edit.setText("  ")
    click(qtbot, settings.open_button)
    assert (settings.banner.kind, settings.banner.text()) == ("error", "Enter a workspace folder.")
    assert services.ws.home == home
