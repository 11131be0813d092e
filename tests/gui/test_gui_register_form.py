"""The app's Register form offers labels, kind and allow-pickle, with the CLI's checks (pytest-qt, offscreen)."""

from __future__ import annotations

import json

import pytest
from PySide6.QtCore import Qt
from support.tiny_models import make_tiny_classifier

pytestmark = pytest.mark.qt
LABELS = ["negative", "neutral", "positive"]


def _submit(qtbot, page, signal, folder, *, name="", labels="", kind="auto", pickle=False) -> None:
    with qtbot.waitSignal(signal, timeout=60_000):
        page.path_edit.setText(str(folder))
        page.task_combo.setCurrentText("sentiment")
        page.name_edit.setText(name)
        page.labels_edit.setText(labels)
        page.kind_combo.setCurrentText(kind)
        page.pickle_check.setChecked(pickle)
        qtbot.mouseClick(page.register_button, Qt.MouseButton.LeftButton)


def test_register_form_labels_kind_and_allow_pickle(gui, qtbot, tmp_path):
    services, window = gui
    page = window.show_page("models")
    store = services.ws.store
    generic = make_tiny_classifier(tmp_path / "generic", LABELS, id2label={0: "LABEL_0", 1: "LABEL_1", 2: "LABEL_2"},
                                   manifest=False)
    _submit(qtbot, page, page._svc.registerFailed, generic)
    assert page.banner.kind == "error" and "--labels" in page.banner.text()
    assert not store.models.exists("generic")
    _submit(qtbot, page, page._svc.registerFailed, generic, labels="negative, positive")
    assert "must list exactly the task labels" in page.banner.text()
    _submit(qtbot, page, page._svc.registerFailed, generic, labels="positive, neutral, negative",
            kind="hf-question-answering")
    assert page.banner.kind == "error" and "question-answering" in page.banner.text()
    assert not store.models.exists("generic")
    _submit(qtbot, page, page._svc.registered, generic, labels="positive, neutral, negative",
            kind="hf-sequence-classification")
    assert page.banner.kind == "ok" and "Registered 'generic'" in page.banner.text()
    manifest = json.loads((generic / "dynadesk-model.json").read_text())
    assert manifest["labels"] == ["positive", "neutral", "negative"]
    assert store.models.get("generic").kind == "hf-sequence-classification"

    pickled = make_tiny_classifier(tmp_path / "pickled", LABELS, pickle_weights=True)
    _submit(qtbot, page, page._svc.registerFailed, pickled)
    assert "pickle" in page.banner.text() and not store.models.exists("pickled")
    _submit(qtbot, page, page._svc.registered, pickled, pickle=True)
    rec = store.models.get("pickled")
    assert rec.has_pickle
    row = next(r for r in range(page.table.rowCount()) if page.table.item(r, 0).text() == "pickled")
    assert page.table.item(row, 4).text().startswith("no (pickle")
