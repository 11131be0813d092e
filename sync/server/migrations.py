"""The server database's schema as one sqlite-utils migration set (the mechanism the workspace store uses).

``m001``/``m002`` are the tables and triggers the server had before this set existed, written with
``IF NOT EXISTS``: on a database made by the old code (which counted ``meta.schema_version``
itself) they change nothing and are only recorded, so such a database upgrades in place.
Never edit an applied migration; add ``m00N`` below.
"""

from __future__ import annotations

import json
from datetime import UTC, datetime

from sqlite_utils import Database, Migrations

migrations = Migrations("dynadesk.server")


@migrations()
def m001_tables(db: Database) -> None:
    for stmt in [
        "CREATE TABLE IF NOT EXISTS meta (key TEXT PRIMARY KEY, value TEXT NOT NULL)",
        """CREATE TABLE IF NOT EXISTS keys (
            fingerprint TEXT PRIMARY KEY, public_key BLOB NOT NULL, name TEXT NOT NULL,
            added_at TEXT NOT NULL, revoked_at TEXT, revoke_reason TEXT)""",
        """CREATE TABLE IF NOT EXISTS board_datasets (
            task TEXT NOT NULL, name TEXT NOT NULL, split TEXT NOT NULL, digest TEXT NOT NULL,
            size INTEGER NOT NULL, added_at TEXT NOT NULL, PRIMARY KEY (task, name))""",
        """CREATE TABLE IF NOT EXISTS bundles (
            seq INTEGER PRIMARY KEY, id TEXT NOT NULL UNIQUE, task TEXT NOT NULL, model_name TEXT NOT NULL,
            model_digest TEXT NOT NULL, key_fingerprint TEXT NOT NULL REFERENCES keys(fingerprint),
            created_at TEXT NOT NULL, received_at TEXT NOT NULL, raw BLOB NOT NULL)""",
        "CREATE INDEX IF NOT EXISTS bundles_task ON bundles(task, seq)",
        """CREATE TABLE IF NOT EXISTS log (
            seq INTEGER PRIMARY KEY, bundle_id TEXT NOT NULL UNIQUE, bundle_sha256 TEXT NOT NULL,
            received_at TEXT NOT NULL, prev_hash TEXT NOT NULL, entry_hash TEXT NOT NULL)""",
        """CREATE TABLE IF NOT EXISTS board (
            task TEXT NOT NULL, model_name TEXT NOT NULL, key_fingerprint TEXT NOT NULL,
            bundle_id TEXT NOT NULL, created_at TEXT NOT NULL, model_digest TEXT NOT NULL, metrics TEXT NOT NULL,
            PRIMARY KEY (task, model_name, key_fingerprint))""",
    ]:
        db.execute(stmt)


_BUMP = "UPDATE meta SET value = CAST(value AS INTEGER) + 1 WHERE key = 'config_version'"


@migrations()
def m002_config_version(db: Database) -> None:
    """``meta.config_version`` counts every change to keys and datasets (the upload cache's check)."""
    db.execute("INSERT OR IGNORE INTO meta(key, value) VALUES ('config_version', '1')")
    for table in ("keys", "board_datasets"):
        for op in ("INSERT", "UPDATE", "DELETE"):
            db.execute(f"CREATE TRIGGER IF NOT EXISTS {table}_{op.lower()}_config AFTER {op} ON {table}"
                       f" BEGIN {_BUMP}; END")


def _us(text: str) -> int:
    """Microseconds since 1970 of a stored time text (old rows: any ISO form Python reads)."""
    t = datetime.fromisoformat(text.replace("Z", "+00:00"))
    if t.tzinfo is None:
        t = t.replace(tzinfo=UTC)
    d = t - datetime(1970, 1, 1, tzinfo=UTC)
    return (d.days * 86400 + d.seconds) * 1_000_000 + d.microseconds


@migrations()
def m003_roles_times_versions(db: Database) -> None:
    """Key roles (auditors), times as integers (compared as times, not text), versioned dataset
    digests (a bundle stays attached to the digest it was scored on) and log entry kinds."""
    db.execute("ALTER TABLE keys ADD COLUMN role TEXT NOT NULL DEFAULT 'submitter'")
    db.execute("ALTER TABLE bundles ADD COLUMN created_us INTEGER")
    db.execute("ALTER TABLE board ADD COLUMN created_us INTEGER")
    db.execute("ALTER TABLE board ADD COLUMN datasets TEXT NOT NULL DEFAULT '{}'")
    db.execute("ALTER TABLE board_datasets ADD COLUMN version INTEGER NOT NULL DEFAULT 1")
    db.execute("ALTER TABLE log ADD COLUMN kind TEXT NOT NULL DEFAULT 'bundle'")
    db.execute("""CREATE TABLE dataset_versions (
        task TEXT NOT NULL, name TEXT NOT NULL, version INTEGER NOT NULL, split TEXT NOT NULL,
        digest TEXT NOT NULL, size INTEGER NOT NULL, added_at TEXT NOT NULL, PRIMARY KEY (task, name, version))""")
    db.execute("INSERT INTO dataset_versions SELECT task, name, 1, split, digest, size, added_at FROM board_datasets")
    for seq, created in db.execute("SELECT seq, created_at FROM bundles").fetchall():
        db.execute("UPDATE bundles SET created_us = ? WHERE seq = ?", [_us(created), seq])
    for task, model, fp, bundle_id, created in db.execute(
            "SELECT task, model_name, key_fingerprint, bundle_id, created_at FROM board").fetchall():
        raw = db.execute("SELECT raw FROM bundles WHERE id = ?", [bundle_id]).fetchone()
        digests = {d["name"]: d["digest"] for d in json.loads(bytes(raw[0]))["payload"]["datasets"]} if raw else {}
        db.execute("UPDATE board SET created_us = ?, datasets = ? WHERE task = ? AND model_name = ?"
                   " AND key_fingerprint = ?", [_us(created), json.dumps(digests), task, model, fp])
    db.execute("""CREATE TABLE attestations (
        id TEXT PRIMARY KEY, seq INTEGER NOT NULL UNIQUE REFERENCES log(seq),
        bundle_id TEXT NOT NULL REFERENCES bundles(id),
        auditor_fingerprint TEXT NOT NULL REFERENCES keys(fingerprint),
        verdict TEXT NOT NULL, summary TEXT NOT NULL, created_at TEXT NOT NULL, received_at TEXT NOT NULL,
        raw BLOB NOT NULL, UNIQUE (bundle_id, auditor_fingerprint))""")
    db.execute("DELETE FROM meta WHERE key = 'schema_version'")  # the old counter; sqlite-utils records sets now
