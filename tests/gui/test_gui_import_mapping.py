"""The app's import box maps fields and labels (issue 47): a file whose columns and labels are not the task's is
imported through the box's field and label mapping, and the error that asks for a mapping names the box's
entries, not a command-line option (pytest-qt, offscreen, real workspace)."""

from __future__ import annotations

import pytest
from PySide6.QtCore import Qt

pytestmark = pytest.mark.qt

CSV = "tweet,sentiment,user\ngreat day at the beach,1,a\nawful traffic again,-1,b\nthe bus came,0,c\n"


def _import(qtbot, page, path, fields: str = "", labels: str = "", keep_extra: bool = False, wait: bool = True
            ) -> None:
    page.import_path.setText(str(path))
    page.import_task.setCurrentIndex(page.import_task.findData("sentiment"))
    page.import_name.setText("tweets")
    page.import_fields.setText(fields)
    page.import_labels.setText(labels)
    page.import_keep_extra.setChecked(keep_extra)
    if not wait:
        qtbot.mouseClick(page.import_button, Qt.MouseButton.LeftButton)
        return
    with qtbot.waitSignal(page._data.importFinished, timeout=20_000):
        qtbot.mouseClick(page.import_button, Qt.MouseButton.LeftButton)


def test_fields_and_labels_mapped_in_the_import_box(gui, qtbot, tmp_path):
    services, window = gui
    page = window.show_page("tasks_data")
    path = tmp_path / "tweets.csv"
    path.write_text(CSV, encoding="utf-8")

    _import(qtbot, page, path)  # no mapping: refused, and told how in the box's own words
    assert page.banner.kind == "error"
    text = page.banner.text()
    assert "--map" not in text and "fill in the field mapping with statement=" in text
    assert ", label=sentiment;" in text
    assert not services.ws.store.datasets.exists("tweets")

    _import(qtbot, page, path, "statement=tweet, label=sentiment", "1=positive, -1=negative, 0=neutral",
            keep_extra=True)
    assert page.banner.kind == "ok", page.banner.text()
    rows = services.ws.store.datasets.examples("tweets")
    assert [(r["statement"], r["label"]) for r in rows] == [
        ("great day at the beach", "positive"), ("awful traffic again", "negative"), ("the bus came", "neutral")]
    assert [r["metadata"]["user"] for r in rows] == ["a", "b", "c"]  # kept as metadata, as asked


def test_a_malformed_mapping_is_named(gui, qtbot, tmp_path):
    services, window = gui
    page = window.show_page("tasks_data")
    path = tmp_path / "tweets.csv"
    path.write_text(CSV, encoding="utf-8")
    _import(qtbot, page, path, "statement", "", wait=False)  # refused before any file is read
    assert page.import_button.isEnabled()
    assert page.banner.kind == "error" and "field mapping 'statement': expected NAME=VALUE" in page.banner.text()
    assert not services.ws.store.datasets.exists("tweets")
