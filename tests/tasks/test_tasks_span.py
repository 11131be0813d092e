"""A workspace span task (its context field named `note`, not `context`): `dynadesk models train` fine-tunes a
QA model for it, and the app's span selector annotates it, as for the bundled qa task."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from click.testing import CliRunner
from test_tasks_workspace import SPAN

from dynadesk.cli import cli
from dynadesk.workspace import Workspace

NOTE = "Patient {i} reports a dull headache since Monday; prescribed ibuprofen twice daily for five days."
QUESTION = "What was prescribed?"


def _span_task(home: Path, tmp_path: Path) -> CliRunner:
    runner = CliRunner()
    task_file = tmp_path / "clinic_qa.yaml"
    task_file.write_text(SPAN)
    res = runner.invoke(cli, ["--home", str(home), "tasks", "add", str(task_file)])
    assert res.exit_code == 0, res.output
    return runner


def _register_base(home: Path, tmp_path: Path, name: str) -> None:
    """A tiny random QA model registered for the span task: its manifest is built from the task (note, question)."""
    from support.tiny_models import make_tiny_qa

    from dynadesk.models import register_model

    store = Workspace(home).open_store()
    try:
        record = register_model(store, make_tiny_qa(tmp_path / name, task="clinic_qa", manifest=False),
                                "clinic_qa", name=name)
        assert record.manifest["context_field"] == "note" and record.manifest["question_field"] == "question"
    finally:
        store.close()


def test_models_train_fine_tunes_a_workspace_span_task(tmp_path: Path) -> None:
    from dynadesk.models.live import predict_live

    home = tmp_path / "ws"
    runner = _span_task(home, tmp_path)
    _register_base(home, tmp_path, "clinic-base")
    rows = [{"id": f"n{i}", "note": NOTE.format(i=i), "question": QUESTION, "answers": ["ibuprofen"]}
            for i in range(8)]
    for name, split, part in (("clinic-train", "train", rows), ("clinic-dev", "dev", rows[:4])):
        path = tmp_path / f"{name}.jsonl"
        path.write_text("".join(json.dumps(r) + "\n" for r in part))
        res = runner.invoke(cli, ["--home", str(home), "data", "import", str(path), "--task", "clinic_qa",
                                  "--name", name, "--split", split])
        assert res.exit_code == 0, res.output
    res = runner.invoke(cli, ["--home", str(home), "models", "train", "clinic-r2", "--task", "clinic_qa",
                              "--base", "clinic-base", "--data", "clinic-train", "--dev", "clinic-dev",
                              "--epochs", "1", "--batch-size", "4", "--max-length", "48", "--json"])
    assert res.exit_code == 0, res.output + str(res.exception)
    out = json.loads(res.stdout)  # the progress bar goes to stderr
    manifest = out["model"]["manifest"]
    assert out["model"]["kind"] == "hf-question-answering" and out["steps"] == 2
    assert (manifest["task"], manifest["context_field"], manifest["question_field"]) == ("clinic_qa", "note",
                                                                                        "question")
    assert manifest["lineage"]["base"]["name"] == "clinic-base"
    assert [t["dataset"] for t in manifest["lineage"]["train"]] == ["clinic-train"]
    store = Workspace(home).open_store()
    try:  # the trained model answers the task's own fields with a span of the note
        note = NOTE.format(i=99)
        answer = predict_live(store, "clinic-r2", {"note": note, "question": QUESTION})["answer"]
        assert isinstance(answer, str) and answer in note
    finally:
        store.close()


@pytest.mark.qt
def test_the_apps_span_selector_annotates_a_workspace_span_task(require_qt, qtbot, tmp_path: Path) -> None:
    from PySide6.QtCore import Qt
    from support.gui import make_window, open_round, round_row, select_text, submit_example, switch_annotator

    home = tmp_path / "ws"
    _span_task(home, tmp_path)
    _register_base(home, tmp_path, "clinic-model")
    services, window = make_window(qtbot, tmp_path, home)
    ann = services.annotation
    ann.add_annotator("alice")
    ann.add_annotator("olga", role="owner")
    try:
        open_round(qtbot, window, "clinic_qa")
        page = window.show_page("annotate")
        page.select_task("clinic_qa")
        assert list(page.inputs) == ["note", "question"]  # the task's own fields, the context first
        assert "select it in the context" in page.target_box.title() and page.use_selection_button.isVisible()
        note, question = page.inputs["note"], page.inputs["question"]
        text = NOTE.format(i=1)
        qtbot.waitUntil(note.hasFocus, timeout=2000)
        qtbot.keyClicks(note, text)
        qtbot.keyClick(note, Qt.Key.Key_Tab)
        qtbot.keyClicks(question, QUESTION)
        page.answer_edit.setText("aspirin")  # not a span of the note: refused before the model is asked
        qtbot.keyClick(question, Qt.Key.Key_Return, Qt.KeyboardModifier.ControlModifier)
        assert page.banner.kind == "error" and "not a substring" in page.banner.text()
        select_text(note, "ibuprofen twice daily")
        qtbot.keyClick(note, Qt.Key.Key_U, Qt.KeyboardModifier.ControlModifier)
        assert page.answer_edit.text() == "ibuprofen twice daily"
        question.setFocus()
        ex = submit_example(qtbot, page)
        assert ex.target == "ibuprofen twice daily" and ex.inputs == {"note": text, "question": QUESTION}
        switch_annotator(window, "olga")
        val = window.show_page("validate")
        val.select_task("clinic_qa")
        assert val.current.uid == ex.uid and val.use_selection_button.isVisible()
        assert val.view.find("ibuprofen twice daily")  # the note is shown with its span to check
        val.setFocus()
        qtbot.keyClick(val, Qt.Key.Key_C)
        assert val.banner.kind == "ok", val.banner.text()
        row = round_row(window, "clinic_qa")
        assert row[3] == "1", row  # collected 1
    finally:
        window.close()
        services.close()

