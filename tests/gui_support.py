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
    return services, window


def write_jsonl(path: Path, rows: list[dict]) -> Path:
    path.write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    return path


def sentiment_rows(n: int, labels=("positive", "negative", "neutral")) -> list[dict]:
    return [{"id": f"ex{i}", "statement": f"statement number {i} is {labels[i % len(labels)]}",
             "label": labels[i % len(labels)]} for i in range(n)]
