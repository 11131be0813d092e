"""Leaderboard inputs from the workspace and the Dynascore over them.

Reading the store happens once per task (``inputs``); re-ranking on a slider
move only calls the pure :func:`dynadesk.scoring.dynascore.compute`, so the
table follows the slider without touching the database.
"""

from __future__ import annotations

import csv
import sqlite3
import io
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from PySide6.QtCore import QObject, Signal

from dynadesk.errors import StoreError
from dynadesk.gui.services.workspace import WorkspaceService
from dynadesk.scoring import dynascore as ds

BOARD_METRICS = ("perf", "throughput", "memory", "robustness", "fairness")
DEFAULT_UNITS = {"perf": "%", "throughput": "ex/s", "memory": "GiB", "robustness": "%", "fairness": "%"}


@dataclass
class BoardInputs:
    """``models``: {model: {metric: number | {dataset: number}}}, as ``dynascore.compute`` takes them."""

    task: str
    models: dict[str, dict[str, Any]] = field(default_factory=dict)
    units: dict[str, str] = field(default_factory=dict)
    datasets: list[str] = field(default_factory=list)
    runs: dict[str, int] = field(default_factory=dict)  # model -> evaluation id


class LeaderboardService(QObject):
    changed = Signal()

    def __init__(self, ws: WorkspaceService, parent: QObject | None = None):
        super().__init__(parent)
        self._ws = ws
        ws.opened.connect(lambda _h: self.changed.emit())

    def tasks(self) -> list[str]:
        from dynadesk.tasks import load_tasks

        return list(load_tasks())

    def inputs(self, task: str) -> BoardInputs:
        """The newest succeeded run of each model of ``task``, as Dynascore inputs."""
        try:
            runs = self._ws.store.evaluations.latest_succeeded(task)
        except sqlite3.Error as exc:
            raise StoreError(f"cannot read runs of task '{task}' from {self._ws.workspace.db_path}: {exc}") from exc
        board = BoardInputs(task=task, units=dict(DEFAULT_UNITS))
        datasets: dict[str, None] = {}
        for run in runs:
            values: dict[str, Any] = {}
            for mv in run.metrics:
                if mv.metric not in BOARD_METRICS:
                    continue
                board.units[mv.metric] = mv.unit or board.units.get(mv.metric, "")
                if mv.dataset:
                    slot = values.get(mv.metric)
                    if not isinstance(slot, dict):
                        slot = values[mv.metric] = {}
                    slot[mv.dataset] = mv.value
                    datasets[mv.dataset] = None
                elif mv.metric not in values:  # a per-dataset figure wins over the whole-run one
                    values[mv.metric] = mv.value
            board.models[run.model_name] = values
            board.runs[run.model_name] = run.id
        board.datasets = sorted(datasets)
        return board

    @staticmethod
    def compute(board: BoardInputs, weights: dict[str, float],
                dataset_weights: dict[str, float] | None = None) -> ds.DynascoreResult:
        defaults = ds.default_metrics()
        metrics = {k: ds.MetricSpec(defaults[k].direction, defaults[k].offset, float(weights.get(k, 0.0)))
                   for k in BOARD_METRICS}
        return ds.compute(board.models, metrics, ds.PERF, dataset_weights)

    @staticmethod
    def stability(result: ds.DynascoreResult) -> dict[str, dict[str, Any]]:
        return ds.rank_stability(result)

    @staticmethod
    def to_csv(result: ds.DynascoreResult, units: dict[str, str]) -> str:
        out = io.StringIO()
        w = csv.writer(out, lineterminator="\n")
        metrics = list(result.metrics)
        w.writerow(["rank", "model", "dynascore"] + [f"{m} ({units.get(m, '')})" for m in metrics]
                   + [f"weight {m}" for m in metrics])
        for m in result.models:
            w.writerow([m.rank, m.name, f"{m.dynascore:.6g}"] + [f"{m.values[k]:.6g}" for k in metrics]
                       + [f"{result.weights[k]:.6g}" for k in metrics])
        for name, why in result.left_off.items():
            w.writerow(["", name, "left off: " + why])
        return out.getvalue()

    def export_csv(self, result: ds.DynascoreResult, units: dict[str, str], path: str | Path) -> None:
        try:
            Path(path).write_text(self.to_csv(result, units), encoding="utf-8")
        except OSError as exc:
            raise StoreError(f"cannot write {path}: {exc}") from exc
