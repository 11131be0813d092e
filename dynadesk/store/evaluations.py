"""SQL for evaluation runs and their metric values."""

from __future__ import annotations

import builtins
import json
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from sqlite_utils import Database, Migrations

from dynadesk.errors import ConfigError, NotFoundError, RunStateError
from dynadesk.store.core import disk_full_is_store_error
from dynadesk.store.datasets import now_iso

if TYPE_CHECKING:
    from dynadesk.store import Store

migrations = Migrations("dynadesk.evaluations")

STATUSES = ("queued", "running", "succeeded", "failed", "interrupted", "cancelled")
# queued -> running -> succeeded | failed | interrupted | cancelled; an unfinished run may run again (resume).
# queued -> failed | cancelled: the run could not start (no model folder, refused container).
TRANSITIONS: dict[str, frozenset[str]] = {
    "queued": frozenset({"running", "failed", "cancelled"}),
    "running": frozenset({"succeeded", "failed", "interrupted", "cancelled"}),
    "failed": frozenset({"running"}),
    "interrupted": frozenset({"running"}),
    "cancelled": frozenset({"running"}),
    "succeeded": frozenset(),
}
PURPOSES = ("evaluation", "audit", "preflight", "bench")


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


@migrations()
def m003_run_request(db: Database) -> None:
    """The typed request a run was made from, and its purpose (only ``evaluation`` runs enter a board)."""
    db.execute("ALTER TABLE evaluations ADD COLUMN request TEXT NOT NULL DEFAULT '{}'")
    db.execute("ALTER TABLE evaluations ADD COLUMN purpose TEXT NOT NULL DEFAULT 'evaluation'")
    db.execute("CREATE INDEX evaluations_board ON evaluations(task, purpose, status, model_id)")


@migrations()
def m004_worker_keys(db: Database) -> None:
    """The queue workers whose signed results this workspace accepts (see dynadesk.store.worker_keys)."""
    db.execute("""
        CREATE TABLE worker_keys (
            fingerprint TEXT PRIMARY KEY,
            public_key_hex TEXT NOT NULL,
            label TEXT NOT NULL,
            trusted_at TEXT NOT NULL,
            revoked_at TEXT
        )""")


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
    request: dict[str, Any] = field(default_factory=dict)  # RunRequest.to_dict() ({} for runs made before it)
    purpose: str = "evaluation"
    metrics: list[MetricValue] = field(default_factory=list)

    def to_dict(self) -> dict[str, Any]:
        d = dict(self.__dict__)
        d["metrics"] = [m.to_dict() for m in self.metrics]
        return d


_JSON_COLS = ("settings", "datasets", "environment", "profile", "request")
_LIST_COLS = "e.id, e.model_id, e.task, e.runner, e.sandboxed, e.status, e.verdict, e.error, e.settings, e.datasets," \
    " e.image_id, e.evaluator_version, e.run_dir, e.predictions_digest, '{}' AS environment, '{}' AS profile," \
    " '' AS log, e.created_at, e.started_at, e.finished_at, e.pid, e.host, e.request, e.purpose"


class EvaluationRepo:
    def __init__(self, store: Store) -> None:
        self._store = store

    @property
    def db(self) -> Database:
        return self._store.db

    def create(self, model_id: int, task: str, runner: str, sandboxed: bool, settings: dict[str, Any],
               datasets: list[str], status: str = "queued", request: dict[str, Any] | None = None) -> int:
        """A new run, ``queued`` (or ``running`` for a run recorded as it starts); its purpose is the request's."""
        purpose = (request or {}).get("purpose", "evaluation")
        if status not in ("queued", "running"):
            raise RunStateError(f"a new run starts 'queued' or 'running', not '{status}'")
        if purpose not in PURPOSES:
            raise ConfigError(f"unknown run purpose '{purpose}' (use one of {', '.join(PURPOSES)})")
        cur = self.db.execute(
            "INSERT INTO evaluations(model_id, task, runner, sandboxed, status, settings, datasets, created_at,"
            " request, purpose) VALUES (?,?,?,?,?,?,?,?,?,?)",
            [model_id, task, runner, int(sandboxed), status, json.dumps(settings), json.dumps(datasets), now_iso(),
             json.dumps(request or {}), purpose])
        return int(cur.lastrowid or 0)

    def update(self, evaluation_id: int, **fields: Any) -> None:
        """Set columns; dicts/lists are stored as JSON. A ``status`` goes through :meth:`transition`'s check."""
        if not fields:
            return
        cols, vals = [], []
        for k, v in fields.items():
            cols.append(f"{k} = ?")
            vals.append(json.dumps(v) if k in _JSON_COLS else int(v) if isinstance(v, bool) else v)
        sql, params = f"UPDATE evaluations SET {', '.join(cols)} WHERE id = ?", [*vals, evaluation_id]
        if "status" in fields:
            # the allowed-transition check is part of the one UPDATE: a read-then-write transaction would have
            # to upgrade its lock, which SQLite refuses at once ("database is locked") when another connection
            # (a second window, a parallel run) wrote in between
            status = fields["status"]
            if status not in STATUSES:
                raise RunStateError(f"unknown run status '{status}' (one of {', '.join(STATUSES)})")
            sources = sorted(s for s, targets in TRANSITIONS.items() if status in targets)
            sql += f" AND status IN ({', '.join('?' * len(sources))})" if sources else " AND 0"
            params += sources
        with disk_full_is_store_error(self._store.path):
            cur = self.db.execute(sql, params)
        if "status" in fields and cur.rowcount == 0:
            self._refuse_transition(evaluation_id, fields["status"])

    def transition(self, evaluation_id: int, status: str, **fields: Any) -> None:
        """Move a run to ``status`` (and set ``fields``); raises :class:`RunStateError` for a move not allowed."""
        self.update(evaluation_id, status=status, **fields)

    def _refuse_transition(self, evaluation_id: int, status: str) -> None:
        """Raise the error that says why run ``evaluation_id`` could not move to ``status``."""
        row = self.db.execute("SELECT status FROM evaluations WHERE id = ?", [evaluation_id]).fetchone()
        if row is None:
            raise NotFoundError(f"no evaluation run with id {evaluation_id}")
        allowed = ", ".join(sorted(TRANSITIONS[row[0]])) or "none: it is final"
        raise RunStateError(f"run {evaluation_id} is '{row[0]}'; it cannot become '{status}' (allowed: {allowed})")

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
        """Runs, newest first, WITHOUT their log, environment and profile (up to MiBs each; :meth:`get` has them)."""
        rows = self.db.query(
            f"SELECT {_LIST_COLS}, m.name AS model_name FROM evaluations e JOIN models m ON m.id = e.model_id"
            " WHERE (? IS NULL OR e.task = ?) AND (? IS NULL OR m.name = ?) AND (? IS NULL OR e.status = ?)"
            " ORDER BY e.id DESC LIMIT ?", [task, task, model, model, status, status, limit])
        return [self._record(r) for r in rows]

    def _board_candidates(self, task: str) -> builtins.list[dict[str, Any]]:
        """Succeeded ``evaluation`` runs of ``task`` (id, model, datasets, hardware class), oldest first."""
        from dynadesk.evaluator.environment import hardware_class_of

        rows = self.db.query(
            "SELECT e.id, e.model_id, e.datasets, e.environment FROM evaluations e WHERE e.task = ?"
            " AND e.status = 'succeeded' AND e.purpose = 'evaluation' ORDER BY e.id", [task])
        return [{**row, "hardware_class": hardware_class_of(json.loads(row["environment"] or "{}"))} for row in rows]

    def hardware_classes(self, task: str) -> dict[str, int]:
        """Hardware classes of ``task``'s board-eligible runs, with how many models have a run in each."""
        models: dict[str, set[int]] = {}
        for row in self._board_candidates(task):
            models.setdefault(row["hardware_class"], set()).add(row["model_id"])
        return {cls: len(ids) for cls, ids in sorted(models.items())}

    def board_runs(self, task: str, datasets: Sequence[str] | None = None,
                   hardware_class: str | None = None) -> builtins.list[EvaluationRecord]:
        """Each model's board entry: its newest complete run (succeeded, purpose ``evaluation``) on the board's
        datasets, among its runs of ``hardware_class`` when one is given.

        The board's datasets are ``datasets``, else the task's test sets in the workspace. A run covering
        all of them beats any run covering fewer, however new; a model none of whose runs covers them all
        keeps the newest run covering the most. Audit re-runs, pre-flights and bench runs never count.
        """
        wanted = set(datasets) if datasets is not None else {
            d.name for d in self._store.datasets.list(task=task, include_derived=False) if d.split == "test"}
        rows = [r for r in self._board_candidates(task)
                if hardware_class is None or r["hardware_class"] == hardware_class]
        best: dict[int, tuple[int, int]] = {}  # model -> (datasets covered, run id); ties go to the newer run
        for row in rows:
            covered = len(wanted & set(json.loads(row["datasets"] or "[]")))
            if (covered, row["id"]) > best.get(row["model_id"], (-1, -1)):
                best[row["model_id"]] = (covered, row["id"])
        records = [self.get(run_id) for _, run_id in best.values()]
        return sorted(records, key=lambda r: r.model_name)

    def log(self, evaluation_id: int) -> str:
        """A run's stored log (its tail, up to 1 MiB): read on demand, not with every listing."""
        row = self.db.execute("SELECT log FROM evaluations WHERE id = ?", [evaluation_id]).fetchone()
        if row is None:
            raise NotFoundError(f"no evaluation run with id {evaluation_id}")
        return str(row[0])

    def mark_stale_running(self, host: str | None = None,
                           alive: Callable[[int], bool] | None = None) -> builtins.list[int]:
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
