"""Run-list and board reads on a 10,000-run workspace: SQL statements, bytes read and milliseconds, the store's
query path (one typed run record, outputs in their own table) against a faithful copy of the old one.

One workspace is written in the old schema (every migration up to ``m004_worker_keys``: the ``settings`` bag,
the 1 MiB log tail, environment and profile in each run's row); a copy is opened by this code, which migrates
it (``m005_run_record``, timed). The old path (copied below from the store and leaderboard before issue 33)
reads the old file, the current code the migrated one: the same runs, the same answers (checked), side by side.

* statements: counted with ``sqlite3``'s trace callback;
* bytes: what SQLite read from the database and WAL files (``/proc/self/io`` ``rchar``: page-cache hits
  included, so it counts pages walked, not disk traffic) and what came back to Python as column values;
* milliseconds: median of interleaved repeats (old, new, new, old, ...), the load average printed beside.

    python bench/bench_store_reads.py [--quick] [--runs N] [--log-kib K]
"""

from __future__ import annotations

import argparse
import builtins
import json
import os
import shutil
import statistics
import sys
import tempfile
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
GOAL_MS = 100.0
TASK = "sentiment"
TEST_SETS = ("bench-a-test", "bench-b-test")


# ------------------------------------------------------------------ the workspace, written in the old schema

def _old_schema(path: Path) -> Any:
    """A store at the schema before m005 (the constructor applies no migration)."""
    import sqlite3

    from sqlite_utils import Database

    from dynadesk.store import MIGRATION_SETS, Store, _area_modules

    conn = sqlite3.connect(str(path), check_same_thread=False)
    db = Database(conn)
    db.execute("PRAGMA journal_mode=WAL")
    for mset in list(MIGRATION_SETS) + [m.migrations for m in _area_modules()]:
        mset.apply(db, stop_before="m005_run_record")
    return Store(db, path)


def _environment(cls: int) -> dict[str, Any]:
    cpu = ["AMD EPYC 7B13", "Intel Xeon 8375C"][cls]
    return {"cpu_model": cpu, "threads": 4, "machine": "x86_64", "python": "3.11.2", "in_container": True,
            "libraries": {"torch": "2.13.0", "transformers": "4.57.1", "tokenizers": "0.22.1", "numpy": "2.3.4"},
            "cgroup": {"memory_limit_bytes": 4 << 30, "cpu_quota": 4.0},
            "measurement": {"noisy": False, "noisy_measurements": [], "steal_percent": 0.4,
                            "windows": [{"trial": i, "seconds": 0.5, "queries": 64} for i in range(6)]}}


def _profile(run: int) -> dict[str, Any]:
    return {"wall_seconds": 12.5, "notes": [], "latency": {"samples": 128, "warmup": 8, "method": "nearest-rank"},
            "throughput": {"batch_size": 1, "windows": [0.5] * 6},
            "intervals": {name: {"metric": "perf", "low": 60.0, "high": 70.0, "level": 95, "resamples": 1000,
                                 "seed": f"{run:016x}", "method": "percentile"} for name in TEST_SETS}}


def build(path: Path, runs: int, models: int, log_kib: int) -> None:
    """``runs`` runs of ``models`` models in the old schema: most succeeded evaluations on both test sets, some on
    one, some failed, some audit re-runs; two hardware classes; a ``log_kib`` KiB log tail each."""
    from dynadesk.datasets import dataset_digest
    from dynadesk.evaluator.schema import Settings

    store = _old_schema(path)
    for name in TEST_SETS:
        examples = [{"id": f"{name}-{i}", "statement": f"text {i}", "label": "positive"} for i in range(20)]
        store.datasets.add(name, TASK, "test", examples, dataset_digest(examples), {"positive": 20})
    ids = [store.models.add(f"model-{m:04d}", TASK, "bag-of-words", f"/models/model-{m:04d}", f"sha256:{m:064x}",
                            {"task": TASK}).id for m in range(models)]
    log = ("worker output line\n" * (log_kib * 1024 // 19 + 1))[:log_kib * 1024]
    bag = {**Settings(batch_size=32, seed=0, threads=4).__dict__, "limits": {"cpus": 4.0, "memory_bytes": 4 << 30},
           "runner": "docker", "sandboxed": True, "image": "dynadesk-evaluator:bench"}
    rows, metric_rows = [], []
    for run in range(1, runs + 1):
        status = "failed" if run % 10 == 3 else "succeeded"
        purpose = "audit" if run % 10 == 7 else "evaluation"
        names = list(TEST_SETS[:1] if run % 10 == 5 else TEST_SETS)
        request = {"model": f"model-{(run - 1) % models:04d}", "datasets": names, "runner": "docker", "image": None,
                   "limits": bag["limits"], "settings": {"batch_size": 32, "seed": 0, "latency_samples": 64,
                                                         "warmup": 8}, "purpose": purpose}
        rows.append((run, ids[(run - 1) % models], TASK, "docker", 1, status, "ok" if status == "succeeded" else "oom",
                     json.dumps({**bag, "request": request}), json.dumps(names), "sha256:" + "ab" * 32,
                     f"sha256:{run:064x}", json.dumps(_environment(int(run % 7 == 0))), json.dumps(_profile(run)), log,
                     "2026-12-01T10:00:00", json.dumps(request), purpose))
        if status == "succeeded":
            perf = 50 + (run * 37 % 400) / 10
            metric_rows += [(run, name, metric, perf + (3 if metric == "robustness" else 0), "score", 1)
                            for name in names for metric in ("perf", "macro_f1", "robustness", "fairness")]
            metric_rows += [(run, "", "throughput", 800.0 + run % 97, "examples/s", 0),
                            (run, "", "latency_p99_ms", 3.0 + run % 5, "ms", 0), (run, "", "memory", 0.5, "GiB", 0)]
    with store.atomic() as db:
        db.conn.executemany(
            "INSERT INTO evaluations(id, model_id, task, runner, sandboxed, status, verdict, settings, datasets,"
            " image_id, predictions_digest, environment, profile, log, created_at, request, purpose)"
            " VALUES (?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?)", rows)
        db.conn.executemany("INSERT INTO metric_values VALUES (?,?,?,?,?,?)", metric_rows)
    store.db.execute("PRAGMA wal_checkpoint(TRUNCATE)")
    store.db.close()


# ------------------------------------------------------------------ the old query path, copied verbatim

@dataclass
class OldMetric:
    dataset: str
    metric: str
    value: float
    unit: str
    deterministic: bool


@dataclass
class OldRecord:
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
    request: dict[str, Any] = field(default_factory=dict)
    purpose: str = "evaluation"
    metrics: list[OldMetric] = field(default_factory=list)


_JSON_COLS = ("settings", "datasets", "environment", "profile", "request")
_LIST_COLS = "e.id, e.model_id, e.task, e.runner, e.sandboxed, e.status, e.verdict, e.error, e.settings, e.datasets," \
    " e.image_id, e.evaluator_version, e.run_dir, e.predictions_digest, '{}' AS environment, '{}' AS profile," \
    " '' AS log, e.created_at, e.started_at, e.finished_at, e.pid, e.host, e.request, e.purpose"


class OldRepo:
    """``EvaluationRepo``'s reads as they were (dynadesk/store/evaluations.py before m005_run_record)."""

    def __init__(self, store: Any) -> None:
        self._store = store
        self.db = store.db

    def get(self, evaluation_id: int) -> OldRecord:
        rows = list(self.db.query(
            "SELECT e.*, m.name AS model_name FROM evaluations e JOIN models m ON m.id = e.model_id WHERE e.id = ?",
            [evaluation_id]))
        return self._record(rows[0])

    def _record(self, row: dict[str, Any]) -> OldRecord:
        metrics = [OldMetric(r["dataset"], r["metric"], r["value"], r["unit"], bool(r["deterministic"]))
                   for r in self.db.query("SELECT * FROM metric_values WHERE evaluation_id = ?"
                                          " ORDER BY dataset, metric", [row["id"]])]
        data = {k: row[k] for k in row if k not in _JSON_COLS}
        for k in _JSON_COLS:
            data[k] = json.loads(row[k]) if row[k] else ({} if k != "datasets" else [])
        data["sandboxed"] = bool(row["sandboxed"])
        return OldRecord(metrics=metrics, **data)

    def list(self, task: str | None = None, model: str | None = None, status: str | None = None,
             limit: int = 200) -> builtins.list[OldRecord]:
        rows = self.db.query(
            f"SELECT {_LIST_COLS}, m.name AS model_name FROM evaluations e JOIN models m ON m.id = e.model_id"
            " WHERE (? IS NULL OR e.task = ?) AND (? IS NULL OR m.name = ?) AND (? IS NULL OR e.status = ?)"
            " ORDER BY e.id DESC LIMIT ?", [task, task, model, model, status, status, limit])
        return [self._record(r) for r in rows]

    def _board_candidates(self, task: str) -> builtins.list[dict[str, Any]]:
        from dynadesk.evaluator.environment import hardware_class_of

        rows = self.db.query(
            "SELECT e.id, e.model_id, e.datasets, e.environment FROM evaluations e WHERE e.task = ?"
            " AND e.status = 'succeeded' AND e.purpose = 'evaluation' ORDER BY e.id", [task])
        return [{**row, "hardware_class": hardware_class_of(json.loads(row["environment"] or "{}"))} for row in rows]

    def hardware_classes(self, task: str) -> dict[str, int]:
        models: dict[str, set[int]] = {}
        for row in self._board_candidates(task):
            models.setdefault(row["hardware_class"], set()).add(row["model_id"])
        return {cls: len(ids) for cls, ids in sorted(models.items())}

    def board_runs(self, task: str, datasets: Sequence[str] | None = None,
                   hardware_class: str | None = None) -> builtins.list[OldRecord]:
        wanted = set(datasets) if datasets is not None else {
            d.name for d in self._store.datasets.list(task=task, include_derived=False) if d.split == "test"}
        rows = [r for r in self._board_candidates(task)
                if hardware_class is None or r["hardware_class"] == hardware_class]
        best: dict[int, tuple[int, int]] = {}
        for row in rows:
            covered = len(wanted & set(json.loads(row["datasets"] or "[]")))
            if (covered, row["id"]) > best.get(row["model_id"], (-1, -1)):
                best[row["model_id"]] = (covered, row["id"])
        records = [self.get(run_id) for _, run_id in best.values()]
        return sorted(records, key=lambda r: r.model_name)


@dataclass
class OldStore:
    datasets: Any
    evaluations: OldRepo


def old_label_suite_sets(board: Any, store: Any) -> Any:
    """``label_suite_sets`` as it was: the board's runs read again, each row's test sets looked up per row."""
    from dynadesk.scoring.leaderboard import ALL_CLASSES
    from dynadesk.scoring.perturb import robustness_suite_sets

    chosen = None if board.hardware_class == ALL_CLASSES else board.hardware_class
    records = {r.model_name: r for r in store.evaluations.board_runs(board.task, hardware_class=chosen)}
    seen: set[tuple[str, ...]] = set()
    for row in board.rows:
        rec = records.get(row.model)
        names = rec.datasets if rec is not None else []
        row.robustness_suites = sorted({s for d in names if store.datasets.exists(d)
                                        for s in robustness_suite_sets(store, d)})
        seen.add(tuple(row.robustness_suites))
    return board


def old_leaderboard(store: OldStore) -> Any:
    """``build_leaderboard``'s old reads around the unchanged ranking."""
    from dynadesk.scoring.leaderboard import local_board, with_hardware

    board, chosen, classes = local_board(store, TASK)  # type: ignore[arg-type]
    return old_label_suite_sets(with_hardware(board.rank(), chosen, classes), store)


# ------------------------------------------------------------------ measuring

class Meter:
    """Statements (trace callback), bytes returned as column values (a row factory) and bytes read by this
    process (``rchar``) while a function runs on ``conn``."""

    def __init__(self, conn: Any) -> None:
        self.conn, self.statements, self.returned = conn, 0, 0

    def _trace(self, _sql: str) -> None:
        self.statements += 1

    def _row(self, _cursor: Any, row: tuple[Any, ...]) -> tuple[Any, ...]:
        self.returned += sum(len(v) if isinstance(v, (str, bytes)) else 8 for v in row)
        return row

    def measure(self, fn: Callable[[], Any]) -> tuple[Any, dict[str, float]]:
        self.statements = self.returned = 0
        self.conn.set_trace_callback(self._trace)
        self.conn.row_factory = self._row
        read0, t0 = _rchar(), time.perf_counter()
        try:
            out = fn()
        finally:
            ms = (time.perf_counter() - t0) * 1000
            self.conn.set_trace_callback(None)
            self.conn.row_factory = None
        return out, {"ms": ms, "statements": self.statements, "returned": self.returned, "read": _rchar() - read0}


def _rchar() -> int:
    for line in Path("/proc/self/io").read_text().splitlines():
        if line.startswith("rchar:"):
            return int(line.split()[1])
    return 0


def _same(old: Any, new: Any) -> None:
    """The two paths give the same answer (else the comparison means nothing)."""
    if isinstance(old, list):
        a = [(r.id, r.model_name, sorted((m.dataset, m.metric, m.value) for m in r.metrics)) for r in old]
        b = [(r.id, r.model_name, sorted((m.dataset, m.metric, m.value) for m in r.metrics)) for r in new]
    else:
        a = [(r.model, r.rank, r.dynascore, r.evaluation_id, r.robustness_suites) for r in old.rows]
        b = [(r.model, r.rank, r.dynascore, r.evaluation_id, r.robustness_suites) for r in new.rows]
    if a != b:
        raise AssertionError(f"the old and the new path disagree: {a[:3]} vs {b[:3]}")


def compare(runs: int, models: int, log_kib: int, repeats: int) -> tuple[list[dict[str, Any]], dict[str, Any]]:
    from dynadesk.scoring.leaderboard import build_leaderboard
    from dynadesk.store import Store

    work = Path(tempfile.mkdtemp(prefix="bench-store-reads-"))
    try:
        old_path, new_path = work / "old.db", work / "new.db"
        t0 = time.perf_counter()
        build(old_path, runs, models, log_kib)
        built_s = time.perf_counter() - t0
        shutil.copyfile(old_path, new_path)
        t0 = time.perf_counter()
        new = Store.open(new_path)  # migrates: m005_run_record
        migrate_s = time.perf_counter() - t0
        old_store = _old_schema(old_path)
        old = OldStore(old_store.datasets, OldRepo(old_store))
        cases = {
            "list(limit=200)": (lambda: old.evaluations.list(limit=200), lambda: new.evaluations.list(limit=200)),
            "board_runs": (lambda: old.evaluations.board_runs(TASK), lambda: new.evaluations.board_runs(TASK)),
            "leaderboard (reads + rank)": (lambda: old_leaderboard(old), lambda: build_leaderboard(new, TASK)),
        }
        old_meter, new_meter = Meter(old_store.db.conn), Meter(new.db.conn)
        out: list[dict[str, Any]] = []
        for name, (old_fn, new_fn) in cases.items():
            _same(old_fn(), new_fn())  # also warms both page caches
            samples: dict[str, list[dict[str, float]]] = {"old": [], "new": []}
            for i in range(repeats):
                order = [("old", old_meter, old_fn), ("new", new_meter, new_fn)]
                for label, meter, fn in order if i % 2 == 0 else order[::-1]:
                    samples[label].append(meter.measure(fn)[1])
            med = {label: {k: statistics.median(s[k] for s in got) for k in got[0]} for label, got in samples.items()}
            out.append({"case": name, **{f"{label}_{k}": v for label in med for k, v in med[label].items()}})
        new.close()
        old_store.db.close()
        info = {"runs": runs, "models": models, "log_kib": log_kib, "repeats": repeats, "build_s": built_s,
                "migrate_s": migrate_s, "db_mib": old_path.stat().st_size / (1 << 20)}
        return out, info
    finally:
        shutil.rmtree(work, ignore_errors=True)


def run(quick: bool = False, runs: int | None = None, log_kib: int | None = None) -> list[dict[str, Any]]:
    runs = runs or (600 if quick else 10_000)
    models = 30 if quick else 100
    log_kib = log_kib or (8 if quick else 64)
    results, info = compare(runs, models, log_kib, repeats=3 if quick else 9)
    load = os.getloadavg()[0]
    rows = []
    for r in results:
        where = f"{info['runs']:,} runs, {info['models']} models, {info['log_kib']} KiB logs; load {load:.1f}"
        ratio = r["old_ms"] / r["new_ms"] if r["new_ms"] else None
        goal_ok = r["new_ms"] < GOAL_MS if not quick else None
        rows.append({"measure": f"{r['case']} ({where})", "value": round(r["new_ms"], 2), "unit": "ms",
                     "goal": f"< {GOAL_MS:g} ms", "baseline": f"old path {r['old_ms']:.1f} ms", "ratio": ratio,
                     "ok": goal_ok})
        rows.append({"measure": f"{r['case']}: SQL statements", "value": r["new_statements"], "unit": "statements",
                     "goal": "O(1) in runs", "baseline": f"old path {r['old_statements']:.0f}",
                     "ratio": r["old_statements"] / r["new_statements"] if r["new_statements"] else None, "ok": None})
        rows.append({"measure": f"{r['case']}: bytes read by SQLite", "value": r["new_read"], "unit": "bytes",
                     "goal": "no logs", "baseline": f"old path {r['old_read']:,.0f}",
                     "ratio": r["old_read"] / r["new_read"] if r["new_read"] else None, "ok": None})
        rows.append({"measure": f"{r['case']}: bytes returned to Python", "value": r["new_returned"], "unit": "bytes",
                     "goal": "", "baseline": f"old path {r['old_returned']:,.0f}",
                     "ratio": r["old_returned"] / r["new_returned"] if r["new_returned"] else None, "ok": None})
    rows.append({"measure": f"migration m005_run_record of {info['runs']:,} runs ({info['db_mib']:.0f} MiB)",
                 "value": round(info["migrate_s"], 2), "unit": "s", "goal": "",
                 "baseline": f"writing them: {info['build_s']:.1f} s", "ratio": None, "ok": None})
    return rows


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--quick", action="store_true")
    ap.add_argument("--runs", type=int)
    ap.add_argument("--log-kib", type=int)
    args = ap.parse_args(argv)
    for row in run(args.quick, args.runs, args.log_kib):
        print(f"{row['measure']}: {row['value']:,} {row['unit']} (goal {row['goal'] or '-'}; {row['baseline']};"
              f" ratio {row['ratio'] if row['ratio'] is None else round(row['ratio'], 1)})")
    return 0


if __name__ == "__main__":
    sys.path.insert(0, str(ROOT))
    sys.exit(main())
