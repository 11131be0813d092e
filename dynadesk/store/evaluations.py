"""SQL for evaluation runs and their metric values."""

from __future__ import annotations

import builtins
import json
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from sqlite_utils import Database, Migrations

from dynadesk.errors import NotFoundError
from dynadesk.store.datasets import now_iso

if TYPE_CHECKING:
    from dynadesk.store import Store

migrations = Migrations("dynadesk.evaluations")

STATUSES = ("queued", "running", "succeeded", "failed", "interrupted", "cancelled")


@migrations()
def m001_evaluations(db: Database) -> None:
    db.execute("""
        CREATE TABLE evaluations (
            id INTEGER PRIMARY KEY,
            model_id INTEGER NOT NULL REFERENCES models(id),
            task TEXT NOT NULL,
            runner TEXT NOT NULL,
            sandboxed INTEGER NOT NULL,
            status TEXT NOT NULL,
            verdict TEXT,
            error TEXT,
            settings TEXT NOT NULL DEFAULT '{}',
            datasets TEXT NOT NULL DEFAULT '[]',
            image_id TEXT,
            evaluator_version TEXT,
            run_dir TEXT,
            predictions_digest TEXT,
            environment TEXT NOT NULL DEFAULT '{}',
            profile TEXT NOT NULL DEFAULT '{}',
            log TEXT NOT NULL DEFAULT '',
            created_at TEXT NOT NULL,
            started_at TEXT,
            finished_at TEXT
        )""")
    db.execute("""
        CREATE TABLE metric_values (
            evaluation_id INTEGER NOT NULL REFERENCES evaluations(id) ON DELETE CASCADE,
            dataset TEXT NOT NULL,
            metric TEXT NOT NULL,
            value REAL NOT NULL,
            unit TEXT NOT NULL,
            deterministic INTEGER NOT NULL,
            PRIMARY KEY (evaluation_id, dataset, metric)
        )""")
    db.execute("CREATE INDEX evaluations_model ON evaluations(model_id, status)")


@migrations()
def m002_run_owner(db: Database) -> None:
    """Which process runs an evaluation, so a crash is told apart from a run still going."""
    db.execute("ALTER TABLE evaluations ADD COLUMN pid INTEGER")
    db.execute("ALTER TABLE evaluations ADD COLUMN host TEXT")


@dataclass
class MetricValue:
    dataset: str  # dataset name; '' for a whole-run figure
    metric: str
    value: float
    unit: str
    deterministic: bool

    def to_dict(self) -> dict[str, Any]:
        return dict(self.__dict__)


@dataclass
class EvaluationRecord:
    id: int
    model_id: int
    model_name: str
    task: str
    runner: str
    sandboxed: bool
    status: str
    verdict: str | None
    error: str | None
    settings: dict[str, Any]
    datasets: list[str]
    image_id: str | None
    evaluator_version: str | None
    run_dir: str | None
    predictions_digest: str | None
    environment: dict[str, Any]
    profile: dict[str, Any]
    log: str
    created_at: str
    started_at: str | None
    finished_at: str | None
    pid: int | None = None
    host: str | None = None
    metrics: list[MetricValue] = field(default_factory=list)

    def to_dict(self) -> dict[str, Any]:
        d = dict(self.__dict__)
        d["metrics"] = [m.to_dict() for m in self.metrics]
        return d


_JSON_COLS = ("settings", "datasets", "environment", "profile")


class EvaluationRepo:
    def __init__(self, store: Store):
        self._store = store

    @property
    def db(self) -> Database:
        return self._store.db

    def create(self, model_id: int, task: str, runner: str, sandboxed: bool, settings: dict[str, Any],
               datasets: list[str], status: str = "queued") -> int:
        cur = self.db.execute(
            "INSERT INTO evaluations(model_id, task, runner, sandboxed, status, settings, datasets, created_at)"
            " VALUES (?,?,?,?,?,?,?,?)",
            [model_id, task, runner, int(sandboxed), status, json.dumps(settings), json.dumps(datasets), now_iso()])
        return int(cur.lastrowid or 0)

    def update(self, evaluation_id: int, **fields: Any) -> None:
        """Set columns; dicts/lists are stored as JSON."""
        if not fields:
            return
        if "status" in fields and fields["status"] not in STATUSES:
            raise ValueError(f"unknown status {fields['status']}")
        cols, vals = [], []
        for k, v in fields.items():
            cols.append(f"{k} = ?")
            vals.append(json.dumps(v) if k in _JSON_COLS else int(v) if isinstance(v, bool) else v)
        self.db.execute(f"UPDATE evaluations SET {', '.join(cols)} WHERE id = ?", [*vals, evaluation_id])

    def set_metrics(self, evaluation_id: int, metrics: list[MetricValue], **fields: Any) -> None:
        """Replace a run's metric values (and optionally update columns) in one transaction."""
        with self._store.atomic() as db:
            db.execute("DELETE FROM metric_values WHERE evaluation_id = ?", [evaluation_id])
            db.conn.executemany(
                "INSERT INTO metric_values(evaluation_id, dataset, metric, value, unit, deterministic)"
                " VALUES (?,?,?,?,?,?)",
                [(evaluation_id, m.dataset, m.metric, float(m.value), m.unit, int(m.deterministic)) for m in metrics])
            self.update(evaluation_id, **fields)

    def get(self, evaluation_id: int) -> EvaluationRecord:
        rows = list(self.db.query(
            "SELECT e.*, m.name AS model_name FROM evaluations e JOIN models m ON m.id = e.model_id WHERE e.id = ?",
            [evaluation_id]))
        if not rows:
            raise NotFoundError(f"no evaluation run with id {evaluation_id}")
        return self._record(rows[0])

    def _record(self, row: dict[str, Any]) -> EvaluationRecord:
        metrics = [MetricValue(r["dataset"], r["metric"], r["value"], r["unit"], bool(r["deterministic"]))
                   for r in self.db.query("SELECT * FROM metric_values WHERE evaluation_id = ?"
                                          " ORDER BY dataset, metric", [row["id"]])]
        data = {k: row[k] for k in row if k not in _JSON_COLS}
        for k in _JSON_COLS:
            data[k] = json.loads(row[k]) if row[k] else ({} if k != "datasets" else [])
        data["sandboxed"] = bool(row["sandboxed"])
        return EvaluationRecord(metrics=metrics, **data)

    def list(self, task: str | None = None, model: str | None = None, status: str | None = None,
             limit: int = 200) -> list[EvaluationRecord]:
        rows = self.db.query(
            "SELECT e.*, m.name AS model_name FROM evaluations e JOIN models m ON m.id = e.model_id"
            " WHERE (? IS NULL OR e.task = ?) AND (? IS NULL OR m.name = ?) AND (? IS NULL OR e.status = ?)"
            " ORDER BY e.id DESC LIMIT ?", [task, task, model, model, status, status, limit])
        return [self._record(r) for r in rows]

    def latest_succeeded(self, task: str) -> builtins.list[EvaluationRecord]:
        """The newest succeeded run of each model of a task (the leaderboard's input)."""
        rows = self.db.query(
            "SELECT e.*, m.name AS model_name FROM evaluations e JOIN models m ON m.id = e.model_id"
            " WHERE e.task = ? AND e.status = 'succeeded' AND e.id = ("
            "   SELECT MAX(e2.id) FROM evaluations e2 WHERE e2.model_id = e.model_id AND e2.status = 'succeeded')"
            " ORDER BY m.name", [task])
        return [self._record(r) for r in rows]

    def mark_stale_running(self, host: str | None = None, alive: Callable[[int],
                           bool] | None = None) -> builtins.list[int]:
        """Runs left 'running' by a crash or reboot become 'interrupted' (resumable).

        With ``host`` and ``alive(pid) -> bool``, only runs of this host whose process is gone
        are marked, so a run still going in another window is left alone.
        """
        ids = []
        for run_id, pid, run_host in self.db.execute("SELECT id, pid, host FROM evaluations WHERE status = 'running'"):
            if alive is not None and (run_host != host or (pid and alive(pid))):
                continue
            ids.append(run_id)
        for run_id in ids:
            self.db.execute("UPDATE evaluations SET status = 'interrupted', verdict = 'interrupted',"
                            " error = 'the process running it stopped (crash, reboot or kill)'"
                            " WHERE id = ? AND status = 'running'", [run_id])
        return ids


def attach(store: Store) -> None:
    store.evaluations = EvaluationRepo(store)
