"""The app's import box detects public formats (or takes the one chosen) and says which read the file
and what its rules left out (pytest-qt, offscreen)."""

from __future__ import annotations

import json

import pytest
from PySide6.QtCore import Qt

pytestmark = pytest.mark.qt


def _import(qtbot, page, path, task: str, fmt: str | None = None) -> None:
    page.import_path.setText(str(path))
    page.import_task.setCurrentIndex(page.import_task.findData(task))
    page.import_format.setCurrentIndex(page.import_format.findData(fmt))
    with qtbot.waitSignal(page._data.importFinished, timeout=20_000):
        qtbot.mouseClick(page.import_button, Qt.MouseButton.LeftButton)


def test_squad_detected_and_snli_chosen_in_the_app(gui, qtbot, tmp_path):
    services, window = gui
    page = window.show_page("tasks_data")
    context = "Paris is the capital of France."
    squad = tmp_path / "dev-v2.0.json"
    qas = [{"id": "q1", "question": "What is the capital?", "answers": [{"text": "Paris", "answer_start": 0}],
            "is_impossible": False},
           {"id": "q2", "question": "Who built it?", "answers": [], "is_impossible": True,
            "plausible_answers": [{"text": "Paris", "answer_start": 0}]}]
    paragraphs = [{"context": context, "qas": qas}]
    squad.write_text(json.dumps({"version": "v2.0", "data": [{"title": "Paris", "paragraphs": paragraphs}]}),
                     encoding="utf-8")
    _import(qtbot, page, squad, "qa")
    assert page.banner.kind == "ok", page.banner.text()
    text = page.banner.text()
    assert "Imported 1 examples as 'dev-v2.0'" in text and "format squad (detected)" in text
    assert "left out 1 unanswerable questions" in text
    assert services.ws.store.datasets.examples("dev-v2.0")[0]["answers"] == ["Paris"]

    snli = tmp_path / "pairs.data"
    snli.write_text(json.dumps({"pairID": "p1", "sentence1": "A dog runs.", "sentence2": "An animal moves.",
                                "gold_label": "entailment"}) + "\n", encoding="utf-8")
    _import(qtbot, page, snli, "nli", fmt="snli")
    assert page.banner.kind == "ok" and "format snli (as chosen)" in page.banner.text()
    _import(qtbot, page, snli, "qa", fmt="snli")
    assert page.banner.kind == "error" and "pass --task nli" in page.banner.text()
