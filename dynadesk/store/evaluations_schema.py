"""The evaluation tables' migrations (``Migrations("dynadesk.evaluations")``), the run-record migration's split
of an old settings bag included. Never change an applied one; add the next ``m00N_``."""

from __future__ import annotations

import json
from dataclasses import fields
from typing import Any

from sqlite_utils import Database, Migrations

migrations = Migrations("dynadesk.evaluations")


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


# The keys of the settings bag before m005 that a typed field now holds; anything else in a row's bag is kept,
# verbatim, in ``legacy_settings`` (no release wrote other keys; kept rather than lost).
_BAG_RUNNER_KEYS = ("runner", "sandboxed", "image")  # Runner.describe()
_BAG_OTHER_KEYS = ("limits", "request", "image_build", "queue")
_LEGACY_REQUEST_KEYS = ("batch_size", "seed", "latency_samples", "warmup", "limits")


def _split_settings_bag(bag: dict[str, Any], request: dict[str, Any], model: str, datasets: list[str],
                        runner: str, purpose: str) -> dict[str, Any]:
    """Migration m005's reading of one row's old ``settings`` bag: the typed columns' JSON (frozen with it)."""
    from dynadesk.evaluator.schema import Settings

    worker_keys = {f.name for f in fields(Settings)}
    if not request and isinstance(bag.get("request"), dict):
        request = bag["request"]
    if not request and all(k in bag for k in _LEGACY_REQUEST_KEYS):
        # a run recorded before requests were: its request as orchestration.request.legacy_request reads it
        request = {"model": model, "datasets": datasets, "runner": runner, "image": bag.get("image"),
                   "limits": bag["limits"], "purpose": purpose,
                   "settings": {k: bag[k] for k in ("batch_size", "seed", "latency_samples", "warmup")}}
    known = worker_keys | set(_BAG_RUNNER_KEYS) | set(_BAG_OTHER_KEYS)
    rest = {k: v for k, v in bag.items() if k not in known or (k == "limits" and not request)}
    image = bag.get("image")
    return {"request": json.dumps(request or {}),
            "worker": json.dumps({k: v for k, v in bag.items() if k in worker_keys}),
            "image_name": image if isinstance(image, str) else None,
            "image_build": json.dumps(bag["image_build"]) if isinstance(bag.get("image_build"), dict) else None,
            "queue": json.dumps(bag["queue"]) if isinstance(bag.get("queue"), dict) else None,
            "legacy_settings": json.dumps(rest) if rest else None}


@migrations()
def m005_run_record(db: Database) -> None:
    """One typed run record instead of the ``settings`` bag, and rows that list without reading logs.

    The bag (worker settings, limits, the runner's facts, a second copy of the request, ``image_build`` and the
    queue's bookkeeping) is split into ``request`` (stored once; built from the flat settings of runs recorded
    before requests, where they allow it), ``worker`` (the evaluator settings the worker was given),
    ``image_name``, ``image_build`` and ``queue``; keys no typed field takes stay in ``legacy_settings``.
    The environment, profile and log move to ``evaluation_outputs`` (a run's row stays a few hundred bytes, so
    a listing or a board scan never pages through MiBs of log), and the hardware class is stored beside the run,
    derived from its environment once (:func:`dynadesk.evaluator.environment.hardware_class_of`)."""
    from dynadesk.evaluator.environment import hardware_class_of

    for column in ("worker TEXT NOT NULL DEFAULT '{}'", "image_name TEXT", "image_build TEXT", "queue TEXT",
                   "hardware_class TEXT", "legacy_settings TEXT"):
        db.execute(f"ALTER TABLE evaluations ADD COLUMN {column}")
    db.execute("""
        CREATE TABLE evaluation_outputs (
            evaluation_id INTEGER PRIMARY KEY REFERENCES evaluations(id) ON DELETE CASCADE,
            environment TEXT NOT NULL DEFAULT '{}',
            profile TEXT NOT NULL DEFAULT '{}',
            log TEXT NOT NULL DEFAULT ''
        )""")
    # Linear in the runs (issue 50): the bulky outputs are copied once, then emptied in the old rows before any
    # other rewrite, and the typed columns are set by one UPDATE from a temporary table; a per-row UPDATE of rows
    # still holding their logs (then four DROP COLUMNs rewriting them again) grew the transaction's WAL with every
    # log several times over, and each page read searched that WAL: 13.5 s for 1k runs, 186 s for 10k.
    cache = db.execute("PRAGMA cache_size").fetchone()[0]
    db.execute("PRAGMA cache_size = -65536")  # 64 MiB while the outputs move: fewer spills of the open transaction
    rows = db.execute("SELECT e.id, e.settings, e.request, e.runner, e.datasets, e.purpose, e.environment, m.name"
                      " FROM evaluations e JOIN models m ON m.id = e.model_id").fetchall()
    db.execute("INSERT INTO evaluation_outputs(evaluation_id, environment, profile, log)"
               " SELECT id, environment, profile, log FROM evaluations")
    db.execute("UPDATE evaluations SET environment = '{}', profile = '{}', log = ''")  # dropped below; copied above
    typed = ("request", "worker", "image_name", "image_build", "queue", "legacy_settings", "hardware_class")
    db.execute(f"CREATE TEMP TABLE m005_typed (id INTEGER PRIMARY KEY, {', '.join(typed)})")
    values = []
    for run_id, bag, request, runner, datasets, purpose, environment, model in rows:
        cols = _split_settings_bag(json.loads(bag or "{}"), json.loads(request or "{}"), model,
                                   json.loads(datasets or "[]"), runner, purpose)
        cols["hardware_class"] = hardware_class_of(json.loads(environment or "{}"))
        values.append((run_id, *(cols[k] for k in typed)))
    db.conn.executemany(f"INSERT INTO temp.m005_typed VALUES ({', '.join('?' * (len(typed) + 1))})", values)
    db.execute(f"UPDATE evaluations SET {', '.join(f'{k} = t.{k}' for k in typed)}"
               " FROM temp.m005_typed t WHERE t.id = evaluations.id")
    db.execute("DROP TABLE temp.m005_typed")
    db.execute(f"PRAGMA cache_size = {int(cache)}")
    for column in ("settings", "environment", "profile", "log"):
        db.execute(f"ALTER TABLE evaluations DROP COLUMN {column}")
    # covers the board's candidate scan and the hardware classes: read from the index alone, never the rows; it
    # replaces m003's evaluations_board (its prefix), which the planner would otherwise pick and read every row
    db.execute("CREATE INDEX evaluations_board_scan ON evaluations(task, purpose, status, hardware_class, model_id,"
               " datasets)")
    db.execute("DROP INDEX evaluations_board")


@migrations()
def m006_remeasure_of(db: Database) -> None:
    """A re-measurement (``dynadesk eval --remeasure RUN``) names the run whose timed windows it took again."""
    db.execute("ALTER TABLE evaluations ADD COLUMN remeasure_of INTEGER REFERENCES evaluations(id)")
