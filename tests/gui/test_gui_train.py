"""Train page: a training through the page with progress, cancelled (checkpoint kept) and
resumed to a registered model; the Rounds page charts the round-over-round report."""

from __future__ import annotations

import json

import pytest
from PySide6.QtCore import Qt
from support.gui import majority_model, make_window

pytestmark = pytest.mark.qt


def test_train_page_cancel_resume_registers_the_model(require_qt, qtbot, tmp_path):
    from support.tiny_models import make_tiny_classifier

    from dynadesk.data import import_dataset
    from dynadesk.models import register_model
    from dynadesk.workspace import Workspace

    home = tmp_path / "ws"
    st = Workspace(home).open_store()
    register_model(st, make_tiny_classifier(tmp_path / "base", ["negative", "neutral", "positive"]), "sentiment",
                   name="tiny-base")
    labels = ["negative", "neutral", "positive"]
    rows = [{"id": f"t{i}", "statement": f"{['bad', 'table', 'good'][i % 3]} film {i}", "label": labels[i % 3]}
            for i in range(40)]
    for name, split in (("small-train", "train"), ("small-dev", "dev")):
        path = tmp_path / f"{name}.jsonl"
        path.write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
        import_dataset(st, "sentiment", path, name=name, split=split)
    st.close()
    services, window = make_window(qtbot, tmp_path, home)
    try:
        page = window.show_page("train")
        page.task_combo.setCurrentText("sentiment")
        page.base_combo.setCurrentIndex(page.base_combo.findData("tiny-base"))
        qtbot.mouseClick(page.start_button, Qt.MouseButton.LeftButton)
        assert page.banner.kind == "info" and "Name the new model" in page.banner.text()
        page.name_edit.setText("tiny-r2")
        page.use_dataset("small-train", 1.0)
        page.dev_combo.setCurrentText("small-dev")
        page.epochs.setValue(4)
        page.batch.setValue(4)
        svc = page._svc
        svc.progress.connect(lambda event: svc.cancel() if event.done == 3 else None)
        with qtbot.waitSignal(svc.cancelled, timeout=120_000):
            qtbot.mouseClick(page.start_button, Qt.MouseButton.LeftButton)
            assert page.cancel_button.isEnabled() and not page.start_button.isEnabled()
        assert page.resume_button.isEnabled() and "checkpoint is kept" in page.status.text()
        assert not services.ws.store.models.exists("tiny-r2")
        svc.progress.disconnect()
        svc.progress.connect(page._on_progress)
        with qtbot.waitSignal(svc.finished, timeout=300_000) as blocker:
            qtbot.mouseClick(page.resume_button, Qt.MouseButton.LeftButton)
        result = blocker.args[0]
        assert result.steps > 3 and page.progress.value() == result.steps  # resumed after step 3, to the end
        assert page.progress.maximum() == 40  # 4 epochs x 10 batches (early stopping may end it sooner)
        assert page.banner.kind == "ok" and "Registered tiny-r2" in page.banner.text()
        lineage = services.ws.store.models.get("tiny-r2").manifest["lineage"]
        assert lineage["base"]["name"] == "tiny-base" and lineage["train"][0]["dataset"] == "small-train"
    finally:
        window.close()
        services.close()


def test_rounds_page_charts_the_report(require_qt, qtbot, tmp_path):
    from dynadesk.models import register_model
    from dynadesk.workspace import Workspace

    home = tmp_path / "ws"
    st = Workspace(home).open_store()
    register_model(st, majority_model(tmp_path / "neg", counts={"negative": 5, "neutral": 0, "positive": 1}),
                   "sentiment", name="says-negative")
    register_model(st, majority_model(tmp_path / "pos", counts={"negative": 1, "neutral": 0, "positive": 5}),
                   "sentiment", name="says-positive")
    import dynadesk.annotation as ann

    ann.add_annotator(st, "alice")
    ann.add_annotator(st, "olga", "owner")
    ann.new_round(st, "sentiment", ["says-negative"])
    for text in ("a delight", "wonderful", "so good"):
        ex = ann.submit_example(st, "sentiment", "alice", {"statement": text}, "positive")
        ann.validate(st, ex.uid, "olga", "correct")
    st.close()
    services, window = make_window(qtbot, tmp_path, home)
    try:
        page = window.show_page("rounds")
        page.select_task("sentiment")
        with qtbot.waitSignal(services.annotation.reportReady, timeout=30_000):
            page.chart_mode.setCurrentIndex(2)
        assert dict(page.chart.rows()) == {"says-negative · round 1 (n=3)": 1.0, "says-positive · round 1 (n=3)": 0.0}
    finally:
        window.close()
        services.close()


def test_test_splits_are_never_offered_for_training_and_names_fit(require_qt, qtbot, tmp_path):
    """Issue 47: the training data table and the dev box list train and dev splits only (a test split would be
    refused by the library anyway), and the dataset names are not squeezed under the weight column."""
    from support.gui import demo_like_workspace

    services, window = make_window(qtbot, tmp_path, demo_like_workspace(tmp_path))
    try:
        page = window.show_page("train")
        assert page.task_combo.currentText() == "sentiment"
        splits = {d.name: d.split for d in services.ws.store.datasets.list("sentiment")}
        offered = [page.data_table.item(r, 0).text() for r in range(page.data_table.rowCount())]
        dev = [page.dev_combo.itemText(i) for i in range(page.dev_combo.count())]
        assert offered and dev
        assert {splits[n] for n in offered} == {"train", "dev"} and {splits[n] for n in dev} == {"dev", "train"}
        assert not [n for n in offered + dev if splits[n] == "test"]
        assert page.dev_combo.currentText().endswith("-dev")  # a dev split first, not a train one
        longest = max(offered, key=len)
        metrics = page.data_table.fontMetrics()
        assert page.data_table.columnWidth(0) >= metrics.horizontalAdvance(longest)
        header = page.data_table.horizontalHeaderItem(0).text()
        assert page.data_table.columnWidth(0) >= page.data_table.horizontalHeader().fontMetrics().horizontalAdvance(
            header)
    finally:
        window.close()
        services.close()
