"""Migration m005_run_record is linear in the runs and writes exactly what it wrote before (issue 50 item 5).

The old workspace is the ``workspace_before_run_record.sql`` fixture (its five odd runs) grown to N runs by
copying them with KiB logs; the reference is m005's body as it was applied before issue 50 (a per-row UPDATE),
run on a copy. Real SQLite files throughout.
"""

from __future__ import annotations

import json
import sqlite3
import time
from pathlib import Path

from support import ASSETS

from dynadesk.evaluator.environment import hardware_class_of
from dynadesk.store import Store
from dynadesk.store.evaluations import _split_settings_bag

FIXTURE = ASSETS / "workspace_before_run_record.sql"
COPIED = ("model_id, task, runner, sandboxed, status, verdict, error, settings, datasets, image_id, evaluator_version,"
          " run_dir, predictions_digest, environment, profile, log, created_at, started_at, finished_at, pid, host,"
          " request, purpose")


def old_workspace(path: Path, runs: int, log_kib: int = 16) -> Path:
    """The fixture grown to ``runs`` runs (copies of its five, each with a ``log_kib`` KiB log)."""
    con = sqlite3.connect(path)
    con.executescript(FIXTURE.read_text())
    base = con.execute("SELECT max(id) FROM evaluations").fetchone()[0]
    log = "x" * (log_kib * 1024)
    for i in range(runs - base):
        con.execute(f"INSERT INTO evaluations({COPIED}) SELECT {COPIED.replace(' log,', ' ? || log,')}"
                    " FROM evaluations WHERE id = ?", (f"{i}:{log}", i % base + 1))
    con.commit()
    con.close()
    return path


def reference_m005(con: sqlite3.Connection) -> None:
    """m005_run_record (then m006) as applied before issue 50: what every workspace migrated so far holds."""
    for column in ("worker TEXT NOT NULL DEFAULT '{}'", "image_name TEXT", "image_build TEXT", "queue TEXT",
                   "hardware_class TEXT", "legacy_settings TEXT"):
        con.execute(f"ALTER TABLE evaluations ADD COLUMN {column}")
    con.execute("""
        CREATE TABLE evaluation_outputs (
            evaluation_id INTEGER PRIMARY KEY REFERENCES evaluations(id) ON DELETE CASCADE,
            environment TEXT NOT NULL DEFAULT '{}',
            profile TEXT NOT NULL DEFAULT '{}',
            log TEXT NOT NULL DEFAULT ''
        )""")
    rows = con.execute("SELECT e.id, e.settings, e.request, e.runner, e.datasets, e.purpose, e.environment, m.name"
                       " FROM evaluations e JOIN models m ON m.id = e.model_id").fetchall()
    for run_id, bag, request, runner, datasets, purpose, environment, model in rows:
        cols = _split_settings_bag(json.loads(bag or "{}"), json.loads(request or "{}"), model,
                                   json.loads(datasets or "[]"), runner, purpose)
        cols["hardware_class"] = hardware_class_of(json.loads(environment or "{}"))
        con.execute(f"UPDATE evaluations SET {', '.join(f'{k} = ?' for k in cols)} WHERE id = ?",
                    [*cols.values(), run_id])
    con.execute("INSERT INTO evaluation_outputs(evaluation_id, environment, profile, log)"
                " SELECT id, environment, profile, log FROM evaluations")
    for column in ("settings", "environment", "profile", "log"):
        con.execute(f"ALTER TABLE evaluations DROP COLUMN {column}")
    con.execute("CREATE INDEX evaluations_board_scan ON evaluations(task, purpose, status, hardware_class, model_id,"
                " datasets)")
    con.execute("DROP INDEX evaluations_board")
    con.execute("ALTER TABLE evaluations ADD COLUMN remeasure_of INTEGER REFERENCES evaluations(id)")
    con.commit()


def _snapshot(con: sqlite3.Connection) -> dict[str, object]:
    schema = con.execute("SELECT type, name, sql FROM sqlite_master WHERE tbl_name IN"
                         " ('evaluations', 'evaluation_outputs') ORDER BY name").fetchall()
    return {"schema": schema,
            "evaluations": con.execute("SELECT * FROM evaluations ORDER BY id").fetchall(),
            "outputs": con.execute("SELECT * FROM evaluation_outputs ORDER BY evaluation_id").fetchall()}


def _migrate_seconds(path: Path) -> float:
    t0 = time.perf_counter()
    Store.open(path).close()
    return time.perf_counter() - t0


def test_the_batched_migration_writes_the_same_rows_and_schema_as_before(tmp_path):
    ours, theirs = old_workspace(tmp_path / "ours.db", 60), old_workspace(tmp_path / "theirs.db", 60)
    Store.open(ours).close()
    ref = sqlite3.connect(theirs)
    reference_m005(ref)
    got = sqlite3.connect(ours)
    expected, actual = _snapshot(ref), _snapshot(got)
    assert len(actual["evaluations"]) == 60 and len(actual["outputs"]) == 60
    assert actual == expected


def test_the_migration_stays_near_linear_from_200_to_2000_runs(tmp_path):
    small = min(_migrate_seconds(old_workspace(tmp_path / f"s{i}.db", 200)) for i in range(2))
    large = min(_migrate_seconds(old_workspace(tmp_path / f"l{i}.db", 2000)) for i in range(2))
    exponent = __import__("math").log(large / small, 10)
    assert large < 30, f"2,000 runs took {large:.1f} s"
    # 1.05 is the bench's goal at 1k -> 10k runs; here, on a shared 2-core machine, a margin for its noise
    assert exponent <= 1.2, f"200 runs {small:.2f} s, 2,000 runs {large:.2f} s: exponent {exponent:.2f}"
