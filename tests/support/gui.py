"""Helpers shared by the tests/test_gui_*.py files: a real window on a workspace in tmp_path."""

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
