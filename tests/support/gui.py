"""Helpers shared by the app's tests (tests/gui/ and other areas' app tests): a real window on a workspace."""

from __future__ import annotations

import json
from pathlib import Path


def make_window(qtbot, tmp_path: Path, home: Path | None = None):
    """Services on a fresh workspace + an INI settings file, and the main window (shown)."""
    from dynadesk.gui.main_window import MainWindow
    from dynadesk.gui.services import build_services

    services = build_services(home or tmp_path / "ws", tmp_path / "settings.ini")
    window = MainWindow(services)
    qtbot.addWidget(window)
    window.show()
    qtbot.waitExposed(window)
    window.activateWindow()
    qtbot.waitUntil(window.isActiveWindow, timeout=3000)  # keyboard focus needs an active window
    return services, window


def loaded(qtbot, page, timeout: int = 60_000):
    """Wait until the page's reads off the GUI thread (the board, the run list) have landed; returns the page."""
    qtbot.waitUntil(lambda: not getattr(page, "loading", False) and not getattr(page, "runs_loading", False),
                    timeout=timeout)
    return page


def write_jsonl(path: Path, rows: list[dict]) -> Path:
    path.write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    return path


def sentiment_rows(n: int, labels=("positive", "negative", "neutral")) -> list[dict]:
    return [{"id": f"ex{i}", "statement": f"statement number {i} is {labels[i % len(labels)]}",
             "label": labels[i % len(labels)]} for i in range(n)]


def seed_run(store, model: str, task: str, metrics: dict, status: str = "succeeded") -> int:
    """A model row and one evaluation run with ``metrics`` {metric: number | {dataset: number}}."""
    from dynadesk.store.evaluations import MetricValue

    units = {"perf": "%", "throughput": "ex/s", "memory": "GiB", "robustness": "%", "fairness": "%"}
    rec = store.models.add(model, task, "majority", f"/nonexistent/{model}", f"sha256:{model:0<64}"[:71], {})
    datasets = sorted({d for v in metrics.values() if isinstance(v, dict) for d in v})
    run = store.evaluations.create(rec.id, task, runner="local", sandboxed=False, datasets=datasets, status="running")
    values = []
    for name, v in metrics.items():
        for ds_name, x in (v.items() if isinstance(v, dict) else [("", v)]):
            values.append(MetricValue(ds_name, name, float(x), units.get(name, ""), name not in ("throughput",
                                                                                                   "memory")))
    store.evaluations.set_metrics(run, values, status=status)
    return run


def majority_model(folder: Path, task: str = "sentiment", counts: dict | None = None,
                   labels=("negative", "neutral", "positive"), inputs=("statement",)) -> Path:
    """A majority-baseline model folder (no torch needed): always predicts the most frequent label."""
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "majority.json").write_text(json.dumps({"counts": counts or {"negative": 2, "neutral": 1,
                                                                           "positive": 5}}))
    (folder / "dynadesk-model.json").write_text(json.dumps({"task": task, "kind": "majority", "labels": list(labels),
                                                            "inputs": list(inputs)}))
    return folder


# --- the annotation flow through the app's widgets (the GUI's and the task tests')


def open_round(qtbot, window, task: str) -> None:
    from PySide6.QtCore import Qt

    page = window.show_page("rounds")
    page.select_task(task)
    page.model_list.item(0).setCheckState(Qt.CheckState.Checked)
    qtbot.mouseClick(page.new_round_button, Qt.MouseButton.LeftButton)
    assert page.banner.kind == "ok", page.banner.text()


def switch_annotator(window, name: str) -> None:
    combo = window.annotator_combo
    combo.setCurrentIndex(combo.findData(name))
    combo.activated.emit(combo.currentIndex())
    assert window.annotator_label.text() == f"Annotator: {name}"


def submit_example(qtbot, page) -> object:
    from PySide6.QtCore import Qt

    with qtbot.waitSignal(page._svc.submitted, timeout=60_000) as blocker:
        qtbot.keyClick(page.focusWidget() or page, Qt.Key.Key_Return, Qt.KeyboardModifier.ControlModifier)
    return blocker.args[0]


def round_row(window, task: str) -> list[str]:
    rounds = window.show_page("rounds")
    rounds.select_task(task)
    t = rounds.rounds_table
    return [t.item(0, c).text() for c in range(t.columnCount())]


def select_text(edit, text: str) -> None:
    """Select ``text`` inside a QPlainTextEdit as a mouse drag would."""
    from PySide6.QtGui import QTextCursor

    start = edit.toPlainText().index(text)
    cursor = edit.textCursor()
    cursor.setPosition(start)
    cursor.setPosition(start + len(text), QTextCursor.MoveMode.KeepAnchor)
    edit.setTextCursor(cursor)


# --- a demo-like workspace (the stall test, the lead's view): the bundled data, a model, runs and a round


def demo_like_workspace(tmp_path: Path, examples: int = 12) -> Path:
    """The bundled sentiment sets (the pinned sdist from the repository's download cache), a majority model,
    scored runs for the board, and an open round with examples by two annotators and votes from a third:
    what the demo leaves, without its training. Returns the workspace home."""
    import dynadesk.annotation as ann
    from dynadesk.models import register_model
    from dynadesk.recipes import fetch_default_data
    from dynadesk.workspace import Workspace
    from support import REPO

    home = tmp_path / "ws"
    cache = REPO / ".cache" / "downloads"  # one real download of the pinned sdist per machine
    cache.mkdir(parents=True, exist_ok=True)
    st = Workspace(home).open_store()
    try:
        names = fetch_default_data(st, cache)
        register_model(st, majority_model(tmp_path / "maj"), "sentiment", name="majority")
        tests = [n for n in names if n.endswith("-test")]
        for i in range(4):
            seed_run(st, f"model-{i}", "sentiment", dict(perf={t: 60 + 5 * i + j for j, t in enumerate(tests)},
                                                         throughput=10 * (i + 1), memory=1 + i, robustness=70 + i,
                                                         fairness=80 + i))
        for name, role in (("lead", "owner"), ("ann", "annotator"), ("bea", "annotator"), ("val", "annotator")):
            ann.add_annotator(st, name, role)
        ann.new_round(st, "sentiment", ["majority"], None, created_by="lead")
        labels = ("negative", "neutral", "positive")
        for i in range(examples):
            ex = ann.submit_example(st, "sentiment", ("ann", "bea")[i % 2], {"statement": f"example statement {i}"},
                                    labels[i % 3])
            if i % 3 == 0:
                ann.validate(st, ex.uid, "val", "correct")
                if i % 2 == 0:  # written by ann: bea disagrees, the example is disputed
                    ann.validate(st, ex.uid, "bea", "incorrect", label=labels[(i + 1) % 3])
            elif i % 4 == 1:
                ann.validate(st, ex.uid, "val", "flagged", reason="unclear wording")
    finally:
        st.close()
    return home
