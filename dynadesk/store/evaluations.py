"""SQL for evaluation runs and their metric values: the typed run record.

A run's row holds what was asked (``request``: ``RunRequest.to_dict()``, stored once), what the worker was
given (``worker``: the evaluator's :class:`~dynadesk.evaluator.schema.Settings`, here ``WorkerSettings``),
where it ran (runner, image name, Id and :class:`ImageBuild`, :class:`QueuePlacement`, hardware class) and
its state; the bulky outputs (environment, profile, log) live in ``evaluation_outputs``, so listings and
board scans read only small rows. Status moves go through :meth:`EvaluationRepo.transition`, with a
:class:`RunChange` naming every field they set.
"""

from __future__ import annotations

import builtins
import json
from collections.abc import Callable, Sequence
from dataclasses import asdict
from typing import TYPE_CHECKING, Any

from dynadesk.errors import ConfigError, NotFoundError, RunStateError
from dynadesk.evaluator.schema import Settings as WorkerSettings
from dynadesk.store.core import Repo, disk_full_is_store_error
from dynadesk.store.datasets import now_iso
from dynadesk.store.evaluations_records import (
    KEEP,
    PURPOSES,
    STATUSES,
    TRANSITIONS,
    EvaluationRecord,
    ImageBuild,
    MetricValue,
    QueuePlacement,
    RunChange,
    RunSetup,
    hardware_class,
    record_from_row,
)
from dynadesk.store.evaluations_schema import _split_settings_bag, migrations

if TYPE_CHECKING:
    from dynadesk.store import Store

__all__ = ["KEEP", "PURPOSES", "STATUSES", "TRANSITIONS", "EvaluationRecord", "EvaluationRepo", "ImageBuild",
           "MetricValue", "QueuePlacement", "RunChange", "RunSetup", "WorkerSettings", "_split_settings_bag", "attach",
           "migrations"]

_JSON_COLS = ("datasets", "request", "worker", "image_build", "queue", "legacy_settings")
_OUTPUT_COLS = ("environment", "profile", "log")
_RUN_COLS = ("e.id, e.model_id, m.name AS model_name, e.task, e.runner, e.sandboxed, e.status, e.verdict, e.error,"
             " e.datasets, e.image_id, e.evaluator_version, e.run_dir, e.predictions_digest, e.created_at,"
             " e.started_at, e.finished_at, e.pid, e.host, e.request, e.purpose, e.worker, e.image_name,"
             " e.image_build, e.queue, e.hardware_class, e.legacy_settings, e.remeasure_of")
_FROM = " FROM evaluations e JOIN models m ON m.id = e.model_id"
_WITH_OUTPUTS = " LEFT JOIN evaluation_outputs o ON o.evaluation_id = e.id"
# a listing never reads the outputs; a board reads environment and profile, never the log; get() reads all
_LIST_SQL = f"SELECT {_RUN_COLS}, '{{}}' AS environment, '{{}}' AS profile, '' AS log{_FROM}"
_BOARD_SQL = f"SELECT {_RUN_COLS}, o.environment, o.profile, '' AS log{_FROM}{_WITH_OUTPUTS}"
_GET_SQL = f"SELECT {_RUN_COLS}, o.environment, o.profile, o.log{_FROM}{_WITH_OUTPUTS}"
_IDS = "(SELECT value FROM json_each(?))"  # a list of run ids as one parameter, whatever its length



class EvaluationRepo(Repo):
    def create(self, model_id: int, task: str, setup: RunSetup | None = None, *, runner: str, sandboxed: bool,
               datasets: Sequence[str], status: str = "queued") -> int:
        """A new run, ``queued`` (or ``running`` for a run recorded as it starts); its purpose is the request's
        (``setup``: no request, default worker settings and no image when not given)."""
        setup = setup or RunSetup()
        request, worker, image_name = setup.request, setup.worker, setup.image_name
        purpose = (request or {}).get("purpose", "evaluation")
        if status not in ("queued", "running"):
            raise RunStateError(f"a new run starts 'queued' or 'running', not '{status}'")
        if purpose not in PURPOSES:
            raise ConfigError(f"unknown run purpose '{purpose}' (use one of {', '.join(PURPOSES)})")
        with self._store.atomic() as db:
            cur = db.execute(
                "INSERT INTO evaluations(model_id, task, runner, sandboxed, status, datasets, created_at, request,"
                " purpose, worker, image_name, hardware_class) VALUES (?,?,?,?,?,?,?,?,?,?,?,?)",
                [model_id, task, runner, int(sandboxed), status, json.dumps(list(datasets)), now_iso(),
                 json.dumps(request or {}), purpose, json.dumps(asdict(worker or WorkerSettings())), image_name,
                 hardware_class({})])
            run_id = int(cur.lastrowid or 0)
            db.execute("INSERT INTO evaluation_outputs(evaluation_id) VALUES (?)", [run_id])
        return run_id

    def update(self, evaluation_id: int, change: RunChange) -> None:
        """Set a run's fields (those ``change`` names) without moving its status (that is :meth:`transition`'s)."""
        self._write(evaluation_id, None, change.given())

    def transition(self, evaluation_id: int, status: str, change: RunChange | None = None) -> None:
        """Move a run to ``status`` (and set the fields ``change`` names); raises :class:`RunStateError` for a move
        not allowed (see :data:`TRANSITIONS`). A move to ``running`` first records this process as the run's owner
        (:mod:`dynadesk.store.run_owner`: what the next open of the workspace checks)."""
        if status == "running":
            from dynadesk.store.run_owner import record_owner

            record_owner(self._store, evaluation_id)
        self._write(evaluation_id, status, change.given() if change is not None else {})

    def set_metrics(self, evaluation_id: int, metrics: Sequence[MetricValue], change: RunChange | None = None, *,
                    status: str | None = None) -> None:
        """Replace a run's metric values and set the fields ``change`` names (moving it to ``status`` when given),
        in one transaction."""
        with self._store.atomic() as db:
            db.execute("DELETE FROM metric_values WHERE evaluation_id = ?", [evaluation_id])
            db.conn.executemany(
                "INSERT INTO metric_values(evaluation_id, dataset, metric, value, unit, deterministic)"
                " VALUES (?,?,?,?,?,?)",
                [(evaluation_id, m.dataset, m.metric, float(m.value), m.unit, int(m.deterministic)) for m in metrics])
            self._write(evaluation_id, status, change.given() if change is not None else {})

    def _write(self, evaluation_id: int, status: str | None, values: dict[str, Any]) -> None:
        """One run's columns (and its outputs row) in one transaction; a ``status`` change is checked in the same
        UPDATE: a read-then-write transaction would have to upgrade its lock, which SQLite refuses at once
        ("database is locked") when another connection (a second window, a parallel run) wrote in between."""
        run_cols = {k: _column_value(k, v) for k, v in values.items() if k not in _OUTPUT_COLS}
        out_cols = {k: json.dumps(v) if k != "log" else v for k, v in values.items() if k in _OUTPUT_COLS}
        if "environment" in values:
            run_cols["hardware_class"] = hardware_class(values["environment"])
        if status is not None:
            if status not in STATUSES:
                raise RunStateError(f"unknown run status '{status}' (one of {', '.join(STATUSES)})")
            run_cols["status"] = status
        if not run_cols and not out_cols:
            return
        try:
            self._update_rows(evaluation_id, status, run_cols, out_cols)
        except _Refused:
            self._refuse_transition(evaluation_id, str(status))

    def _update_rows(self, evaluation_id: int, status: str | None, run_cols: dict[str, Any],
                     out_cols: dict[str, Any]) -> None:
        with disk_full_is_store_error(self._store.path), self._store.atomic() as db:
            if run_cols:
                sql = f"UPDATE evaluations SET {', '.join(f'{k} = ?' for k in run_cols)} WHERE id = ?"
                params: list[Any] = [*run_cols.values(), evaluation_id]
                if status is not None:
                    sources = sorted(s for s, targets in TRANSITIONS.items() if status in targets)
                    sql += f" AND status IN ({', '.join('?' * len(sources))})" if sources else " AND 0"
                    params += sources
                if db.execute(sql, params).rowcount == 0:
                    if status is not None:
                        raise _Refused(status)
                    raise NotFoundError(f"no evaluation run with id {evaluation_id}")
            if out_cols:
                db.execute(f"UPDATE evaluation_outputs SET {', '.join(f'{k} = ?' for k in out_cols)}"
                           " WHERE evaluation_id = ?", [*out_cols.values(), evaluation_id])

    def _refuse_transition(self, evaluation_id: int, status: str) -> None:
        """Raise the error that says why run ``evaluation_id`` could not move to ``status``."""
        row = self.db.execute("SELECT status FROM evaluations WHERE id = ?", [evaluation_id]).fetchone()
        if row is None:
            raise NotFoundError(f"no evaluation run with id {evaluation_id}")
        allowed = ", ".join(sorted(TRANSITIONS[row[0]])) or "none: it is final"
        raise RunStateError(f"run {evaluation_id} is '{row[0]}'; it cannot become '{status}' (allowed: {allowed})")

    def get(self, evaluation_id: int) -> EvaluationRecord:
        rows = self._rows(f"{_GET_SQL} WHERE e.id = ?", [evaluation_id])
        if not rows:
            raise NotFoundError(f"no evaluation run with id {evaluation_id}")
        return self._records(rows)[0]

    def _rows(self, sql: str, params: Sequence[Any]) -> builtins.list[dict[str, Any]]:
        """Rows as dicts, in one statement (``Database.query`` wraps each query in a savepoint: three)."""
        cur = self.db.execute(sql, params)
        names = [d[0] for d in cur.description]
        return [dict(zip(names, row, strict=True)) for row in cur.fetchall()]

    def _records(self, rows: Sequence[dict[str, Any]]) -> builtins.list[EvaluationRecord]:
        """Records of ``rows`` with their metric values, read in one query for all of them."""
        metrics: dict[int, builtins.list[MetricValue]] = {r["id"]: [] for r in rows}
        if rows:
            for run_id, ds, metric, value, unit, det in self.db.execute(
                    "SELECT evaluation_id, dataset, metric, value, unit, deterministic FROM metric_values"
                    f" WHERE evaluation_id IN {_IDS} ORDER BY evaluation_id, dataset, metric",
                    [json.dumps(builtins.list(metrics))]):
                metrics[run_id].append(MetricValue(ds, metric, value, unit, bool(det)))
        return [record_from_row(row, metrics[row["id"]]) for row in rows]

    def list(self, task: str | None = None, model: str | None = None, status: str | None = None,
             limit: int = 200) -> builtins.list[EvaluationRecord]:
        """Runs, newest first, with their metrics but WITHOUT their log, environment and profile (:meth:`get`
        has them): two statements whatever the number of runs."""
        return self._records(self._rows(
            f"{_LIST_SQL} WHERE (? IS NULL OR e.task = ?) AND (? IS NULL OR m.name = ?)"
            " AND (? IS NULL OR e.status = ?) ORDER BY e.id DESC LIMIT ?",
            [task, task, model, model, status, status, limit]))

    def hardware_classes(self, task: str) -> dict[str, int]:
        """Hardware classes of ``task``'s board-eligible runs, with how many models have a run in each."""
        rows = self.db.execute(
            "SELECT hardware_class, COUNT(DISTINCT model_id) FROM evaluations WHERE task = ? AND purpose = 'evaluation'"
            " AND status = 'succeeded' GROUP BY hardware_class ORDER BY hardware_class", [task])
        return {str(cls): int(n) for cls, n in rows}

    def board_runs(self, task: str, datasets: Sequence[str] | None = None,
                   hardware_class: str | None = None) -> builtins.list[EvaluationRecord]:
        """Each model's board entry: its newest complete run (succeeded, purpose ``evaluation``) on the board's
        datasets, among its runs of ``hardware_class`` when one is given.

        The board's datasets are ``datasets``, else the task's test sets in the workspace. A run covering
        all of them beats any run covering fewer, however new; a model none of whose runs covers them all
        keeps the newest run covering the most. Audit re-runs, pre-flights and bench runs never count.
        A few statements whatever the number of runs: the candidates' small columns, then the chosen runs
        (without their logs) and their metric values.
        """
        wanted = set(datasets) if datasets is not None else {
            d.name for d in self._store.datasets.list(task=task, include_derived=False) if d.split == "test"}
        best: dict[int, tuple[int, int]] = {}  # model -> (datasets covered, run id); ties go to the newer run
        covers: dict[str, int] = {}  # datasets text -> how many of the board's it covers (a few distinct texts)
        # the newest run per (model, datasets): within one pair the coverage is the same, so the newest wins; read
        # from the covering index evaluations_board_scan alone
        for model_id, names, run_id in self.db.execute(
                "SELECT model_id, datasets, MAX(id) FROM evaluations WHERE task = ? AND status = 'succeeded'"
                " AND purpose = 'evaluation' AND (? IS NULL OR hardware_class = ?) GROUP BY model_id, datasets",
                [task, hardware_class, hardware_class]):
            if names not in covers:
                covers[names] = len(wanted.intersection(json.loads(names or "[]")))
            if (covers[names], run_id) > best.get(model_id, (-1, -1)):
                best[model_id] = (covers[names], run_id)
        ids = sorted(run_id for _, run_id in best.values())
        return self._records(self._rows(f"{_BOARD_SQL} WHERE e.id IN {_IDS} ORDER BY m.name", [json.dumps(ids)]))

    def log(self, evaluation_id: int) -> str:
        """A run's stored log (its tail, up to 1 MiB): read on demand, not with every listing."""
        row = self.db.execute("SELECT o.log FROM evaluations e LEFT JOIN evaluation_outputs o"
                              " ON o.evaluation_id = e.id WHERE e.id = ?", [evaluation_id]).fetchone()
        if row is None:
            raise NotFoundError(f"no evaluation run with id {evaluation_id}")
        return str(row[0] or "")

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


class _Refused(Exception):
    """Inside :meth:`EvaluationRepo._write`'s transaction: the status move was not allowed (rolled back)."""

    def __init__(self, status: str) -> None:
        self.status = status


def _column_value(name: str, value: Any) -> Any:
    if value is None or name not in _JSON_COLS:
        return int(value) if isinstance(value, bool) else value
    if isinstance(value, (ImageBuild, QueuePlacement)):
        return json.dumps(value.to_dict())
    return json.dumps(value)


def attach(store: Store) -> None:
    store.evaluations = EvaluationRepo(store)
