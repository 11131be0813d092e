"""The server database's schema: one list of migrations, run on SQLite and PostgreSQL alike.

Each migration is a function of an open :class:`~dynadesk.sync.server.backend.Tx`, written in SQLite's
SQL; schema statements go through ``c.ddl`` (the dialect's column types) and the one trigger through
:meth:`~dynadesk.sync.server.dialect.Dialect.config_triggers`. Applied names are recorded in
``server_migrations``, in the same transaction as the migration (PostgreSQL's DDL is transactional
too), under the writers' lock, so two servers starting at once apply each migration once.

History: the names were first recorded by sqlite-utils' ``Migrations`` (table ``_sqlite_migrations``,
set ``dynadesk.server``); such a database's records are taken over on first open. ``m001``/``m002`` are
the tables and triggers the server had before that, written with ``IF NOT EXISTS``: on a database made
by the even older code (which counted ``meta.schema_version``) they change nothing and are only
recorded, so every old SQLite server database upgrades in place.
Never edit an applied migration; add ``m00N`` below.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Callable
from datetime import UTC, datetime
from typing import Any

from dynadesk.sync.format.payload import Payload
from dynadesk.sync.format.timestamps import utc_now_text
from dynadesk.sync.server.backend import Executor, Tx

Migration = Callable[[Tx], None]
MIGRATIONS: list[tuple[str, Migration]] = []
TABLE = "server_migrations"
_OLD_SET = "dynadesk.server"  # sqlite-utils' name for this set


def migration(fn: Migration) -> Migration:
    MIGRATIONS.append((fn.__name__, fn))
    return fn


def applied(c: Executor) -> list[str]:
    """Names of the applied migrations, oldest first (names are numbered)."""
    return [str(r[0]) for r in c.execute(f"SELECT name FROM {TABLE} ORDER BY name").fetchall()]


def apply(c: Tx) -> list[str]:
    """Run every migration not yet recorded, in order; returns the names it ran."""
    c.ddl(f"CREATE TABLE IF NOT EXISTS {TABLE} (name TEXT PRIMARY KEY, applied_at TEXT NOT NULL)")
    done = {str(r[0]) for r in c.execute(f"SELECT name FROM {TABLE}").fetchall()}
    if not done and not c.dialect.postgres and c.execute(
            "SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = '_sqlite_migrations'").fetchone():
        for name, at in c.execute("SELECT name, applied_at FROM _sqlite_migrations WHERE migration_set = ?",
                                  [_OLD_SET]).fetchall():
            c.execute(f"INSERT INTO {TABLE}(name, applied_at) VALUES (?, ?)", [name, str(at)])
            done.add(name)
    ran = []
    for name, fn in MIGRATIONS:
        if name not in done:
            fn(c)
            c.execute(f"INSERT INTO {TABLE}(name, applied_at) VALUES (?, ?)", [name, utc_now_text()])
            ran.append(name)
    return ran


@migration
def m001_tables(c: Tx) -> None:
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
        c.ddl(stmt)


@migration
def m002_config_version(c: Tx) -> None:
    """``meta.config_version`` counts every change to keys and datasets (the upload cache's check)."""
    c.execute("INSERT INTO meta(key, value) VALUES ('config_version', '1') ON CONFLICT(key) DO NOTHING")
    for stmt in c.dialect.config_triggers(("keys", "board_datasets")):
        c.execute(stmt)


def _us(text: str) -> int:
    """Microseconds since 1970 of a stored time text (old rows: any ISO form Python reads)."""
    t = datetime.fromisoformat(text.replace("Z", "+00:00"))
    if t.tzinfo is None:
        t = t.replace(tzinfo=UTC)
    d = t - datetime(1970, 1, 1, tzinfo=UTC)
    return (d.days * 86400 + d.seconds) * 1_000_000 + d.microseconds


@migration
def m003_roles_times_versions(c: Tx) -> None:
    """Key roles (auditors), times as integers (compared as times, not text), versioned dataset
    digests (a bundle stays attached to the digest it was scored on) and log entry kinds."""
    c.ddl("ALTER TABLE keys ADD COLUMN role TEXT NOT NULL DEFAULT 'submitter'")
    c.ddl("ALTER TABLE bundles ADD COLUMN created_us INTEGER")
    c.ddl("ALTER TABLE board ADD COLUMN created_us INTEGER")
    c.ddl("ALTER TABLE board ADD COLUMN datasets TEXT NOT NULL DEFAULT '{}'")
    c.ddl("ALTER TABLE board_datasets ADD COLUMN version INTEGER NOT NULL DEFAULT 1")
    c.ddl("ALTER TABLE log ADD COLUMN kind TEXT NOT NULL DEFAULT 'bundle'")
    c.ddl("""CREATE TABLE dataset_versions (
        task TEXT NOT NULL, name TEXT NOT NULL, version INTEGER NOT NULL, split TEXT NOT NULL,
        digest TEXT NOT NULL, size INTEGER NOT NULL, added_at TEXT NOT NULL, PRIMARY KEY (task, name, version))""")
    c.execute("INSERT INTO dataset_versions SELECT task, name, 1, split, digest, size, added_at FROM board_datasets")
    for seq, created in c.execute("SELECT seq, created_at FROM bundles").fetchall():
        c.execute("UPDATE bundles SET created_us = ? WHERE seq = ?", [_us(created), seq])
    for task, model, fp, bundle_id, created in c.execute(
            "SELECT task, model_name, key_fingerprint, bundle_id, created_at FROM board").fetchall():
        raw = c.execute("SELECT raw FROM bundles WHERE id = ?", [bundle_id]).fetchone()
        digests = {d["name"]: d["digest"] for d in json.loads(bytes(raw[0]))["payload"]["datasets"]} if raw else {}
        c.execute("UPDATE board SET created_us = ?, datasets = ? WHERE task = ? AND model_name = ?"
                  " AND key_fingerprint = ?", [_us(created), json.dumps(digests), task, model, fp])
    c.ddl("""CREATE TABLE attestations (
        id TEXT PRIMARY KEY, seq INTEGER NOT NULL UNIQUE REFERENCES log(seq),
        bundle_id TEXT NOT NULL REFERENCES bundles(id),
        auditor_fingerprint TEXT NOT NULL REFERENCES keys(fingerprint),
        verdict TEXT NOT NULL, summary TEXT NOT NULL, created_at TEXT NOT NULL, received_at TEXT NOT NULL,
        raw BLOB NOT NULL, UNIQUE (bundle_id, auditor_fingerprint))""")
    c.execute("DELETE FROM meta WHERE key = 'schema_version'")  # the old counter; server_migrations records names now


def results_key(payload: Payload | dict[str, Any]) -> str:
    """What an attestation attaches to: one submitter key's results (task, model digest, each dataset digest, the
    predictions digest). Re-signing them with a new time or under a new model name (a new bundle id) keeps every
    attestation of them; another key's identical results are its own claim and keep their own. Takes the typed
    payload, or a stored row's JSON object (the migration below reads raw rows, some hand-built by old tests)."""
    from dynadesk.sync.format.canonical import canonical_bytes

    p = payload if isinstance(payload, Payload) else _stored_parts(payload)
    parts = {"task": p.task, "key": p.submitter.key_fingerprint, "model": p.model.digest,
             "datasets": sorted(d.digest for d in p.datasets), "predictions": p.predictions.digest}
    return hashlib.sha256(canonical_bytes(parts)).hexdigest()


def _stored_parts(doc: dict[str, Any]) -> Any:
    """The fields :func:`results_key` reads, as attributes, from a stored row's JSON (no schema check: a row that
    lacks one raises KeyError or TypeError, which the migration turns into no key, as before)."""
    from types import SimpleNamespace as Ns

    return Ns(task=doc["task"], submitter=Ns(key_fingerprint=doc["submitter"]["key_fingerprint"]),
              model=Ns(digest=doc["model"]["digest"]), datasets=[Ns(digest=d["digest"]) for d in doc["datasets"]],
              predictions=Ns(digest=doc["predictions"]["digest"]))


@migration
def m004_tasks(c: Tx) -> None:
    """Tasks registered on this board by file (``dynadesk-server tasks add FILE.yaml``), beside the bundled four."""
    c.ddl("""CREATE TABLE IF NOT EXISTS server_tasks (
        name TEXT PRIMARY KEY, digest TEXT NOT NULL, definition TEXT NOT NULL, added_at TEXT NOT NULL)""")


@migration
def m005_results_organisations(c: Tx) -> None:
    """Bundles' results key (attestations attach to results, not to one signature's time) and the
    organisations keys belong to (an auditor never attests its own organisation's results)."""
    c.ddl("ALTER TABLE bundles ADD COLUMN results_key TEXT")
    for seq, raw in c.execute("SELECT seq, raw FROM bundles").fetchall():
        try:
            key: str | None = results_key(json.loads(bytes(raw))["payload"])
        except (ValueError, KeyError, TypeError):  # a row no upload could have made (hand-built tests): no key
            key = None
        c.execute("UPDATE bundles SET results_key = ? WHERE seq = ?", [key, seq])
    c.ddl("CREATE INDEX bundles_results ON bundles(results_key)")
    c.ddl("CREATE TABLE organisations (name TEXT PRIMARY KEY, added_at TEXT NOT NULL)")
    c.ddl("ALTER TABLE keys ADD COLUMN organisation TEXT REFERENCES organisations(name)")


@migration
def m006_default_view(c: Tx) -> None:
    """The operator's view of each task's board: its default hardware class (``dynadesk-server board
    default-class``) and the rows pinned as exchange-rate references (``dynadesk-server reference pin``).
    Both bump ``meta.config_version``, so every serving process's board cache notices a change at once."""
    c.ddl("""CREATE TABLE board_defaults (
        task TEXT PRIMARY KEY, hardware_class TEXT NOT NULL, set_at TEXT NOT NULL)""")
    c.ddl("""CREATE TABLE reference_pins (
        bundle_id TEXT PRIMARY KEY REFERENCES bundles(id), task TEXT NOT NULL, note TEXT NOT NULL,
        pinned_at TEXT NOT NULL)""")
    for stmt in c.dialect.config_triggers(("board_defaults", "reference_pins")):
        c.execute(stmt)


@migration
def m007_snapshots(c: Tx) -> None:
    """Issue 36: each bundle's intervals, compact outcomes and shared resamples, worked out once at ingest
    (``bundle_intervals``; bundles stored before it are worked out on first use), and the signed board snapshots,
    each appended to the transparency log as a ``snapshot`` entry (``snapshots``)."""
    c.ddl("""CREATE TABLE bundle_intervals (
        bundle_id TEXT PRIMARY KEY REFERENCES bundles(id), intervals TEXT NOT NULL, outcomes TEXT NOT NULL,
        resampled TEXT NOT NULL)""")
    c.ddl("""CREATE TABLE snapshots (
        id TEXT PRIMARY KEY, seq INTEGER NOT NULL UNIQUE REFERENCES log(seq), task TEXT NOT NULL,
        title TEXT NOT NULL, created_at TEXT NOT NULL, raw BLOB NOT NULL)""")


@migration
def m008_key_usage(c: Tx) -> None:
    """Stored bundle bytes per key, kept by every upload: the quota check reads one row instead of summing every
    bundle the key ever stored (a scan that grew with the board: 83% of an upload's time at 5,000 bundles)."""
    c.ddl("CREATE TABLE key_usage (fingerprint TEXT PRIMARY KEY, bundles INTEGER NOT NULL,"
          " stored_bytes INTEGER NOT NULL)")
    c.execute("INSERT INTO key_usage(fingerprint, bundles, stored_bytes)"
              " SELECT key_fingerprint, COUNT(*), SUM(LENGTH(raw)) FROM bundles GROUP BY key_fingerprint")


@migration
def m009_claims(c: Tx) -> None:
    """Issue 44: each bundle's claim key (claims.claim_key: a "reproduced" attestation shows only on the exact
    claim it re-ran) and predictions digest (a dispute follows it); worked out from every stored bundle's bytes."""
    from dynadesk.sync.rules.claims import claim_key

    c.ddl("ALTER TABLE bundles ADD COLUMN claim_key TEXT")
    c.ddl("ALTER TABLE bundles ADD COLUMN predictions_digest TEXT")
    for seq, raw in c.execute("SELECT seq, raw FROM bundles").fetchall():
        try:
            payload = json.loads(bytes(raw))["payload"]
            facts: list[str | None] = [claim_key(payload), str(payload["predictions"]["digest"])]
        except (ValueError, KeyError, TypeError):  # a row no upload could have made (hand-built tests): none
            facts = [None, None]
        c.execute("UPDATE bundles SET claim_key = ?, predictions_digest = ? WHERE seq = ?", [*facts, seq])
    c.ddl("CREATE INDEX bundles_claims ON bundles(claim_key)")


@migration
def m009_key_changes(c: Tx) -> None:
    """Issue 45, item 4: the operator's key changes as a table (who, what, when: ``dynadesk-server keys events``)
    and the operator's word that a key without an organisation may attest one submitter key's rows although its
    name matches that key's name or organisation (``dynadesk-server keys allow-attest``)."""
    c.ddl("""CREATE TABLE key_events (
        seq INTEGER PRIMARY KEY, at TEXT NOT NULL, fingerprint TEXT NOT NULL, event TEXT NOT NULL,
        detail TEXT NOT NULL)""")
    c.ddl("""CREATE TABLE attest_allowances (
        auditor_fingerprint TEXT NOT NULL REFERENCES keys(fingerprint),
        submitter_fingerprint TEXT NOT NULL REFERENCES keys(fingerprint), allowed_at TEXT NOT NULL,
        PRIMARY KEY (auditor_fingerprint, submitter_fingerprint))""")


@migration
def m010_rate_editions(c: Tx) -> None:
    """Issue 44: each task's signed rate editions (``dynadesk-server rates freeze``), numbered per task from 1, each
    appended to the transparency log as a ``rates`` entry; the board scores every row with the newest one."""
    c.ddl("""CREATE TABLE rate_editions (
        id TEXT PRIMARY KEY, seq INTEGER NOT NULL UNIQUE REFERENCES log(seq), task TEXT NOT NULL,
        edition INTEGER NOT NULL, created_at TEXT NOT NULL, raw BLOB NOT NULL, UNIQUE (task, edition))""")
    for stmt in c.dialect.config_triggers(("rate_editions",)):
        c.execute(stmt)
