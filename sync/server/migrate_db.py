"""``dynadesk-server migrate-db SQLITE_FILE postgresql://...``: move a board onto PostgreSQL.

Every table is copied in one target transaction (all or nothing), in foreign-key order, into a
target that holds no board data yet (a non-empty target is refused: merging two boards would fork
the transparency log). Afterwards the log is read back from the target and its whole hash chain
recomputed; it must end in the source's head, so the migrated log is the one clients have seen.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey

from dynadesk.errors import AlreadyExistsError, LogIntegrityError, NotFoundError, StoreError
from dynadesk.sync.format.timestamps import utc_now_text
from dynadesk.sync.format.translog import sign_head, verify_log
from dynadesk.sync.server.backend import SQLiteBackend
from dynadesk.sync.server.db import ServerDB

# Parents before children (organisations before keys, keys before bundles, log before bundles and attestations).
TABLES = ("organisations", "keys", "board_datasets", "dataset_versions", "log", "bundles", "board", "attestations",
          "bundle_intervals", "snapshots", "key_events", "attest_allowances", "rate_editions")
BATCH = 2000
_LOG_PAGE = 10_000


def _columns(src: ServerDB, table: str) -> list[str]:
    assert isinstance(src.backend, SQLiteBackend)
    cur = src.backend.sqlite.execute(f"SELECT * FROM {table} LIMIT 0")
    return [d[0] for d in cur.description]


def _refuse_non_empty(dst: ServerDB) -> None:
    with dst.lock:
        full = [t for t in TABLES if dst.conn.execute(f"SELECT 1 FROM {t} LIMIT 1").fetchone() is not None]
    if full:
        raise AlreadyExistsError(f"target database {dst.name} is not empty (it has rows in {', '.join(full)});"
                                 " migrate-db copies into an empty database only: create a new one"
                                 " (createdb) or drop this one's tables first")


def _copy(src: ServerDB, dst: ServerDB, progress: Callable[[str, int], None]) -> dict[str, int]:
    assert isinstance(src.backend, SQLiteBackend)
    counts: dict[str, int] = {}
    with dst.tx() as c:
        for table in TABLES:
            cols = _columns(src, table)
            insert = f"INSERT INTO {table}({', '.join(cols)}) VALUES ({', '.join('?' * len(cols))})"
            cur = src.backend.sqlite.execute(f"SELECT {', '.join(cols)} FROM {table} ORDER BY rowid")
            counts[table] = 0
            while batch := cur.fetchmany(BATCH):
                c.executemany(insert, batch)
                counts[table] += len(batch)
                progress(table, counts[table])
        meta = src.backend.sqlite.execute("SELECT key, value FROM meta").fetchall()
        c.executemany("INSERT INTO meta(key, value) VALUES (?, ?)"
                      " ON CONFLICT(key) DO UPDATE SET value = excluded.value", [(k, str(v)) for k, v in meta])
        # the copy's own trigger bumps would make the counter differ from the source's: any cache must reload
        c.execute("UPDATE meta SET value = CAST(CAST(value AS INTEGER) + 1 AS TEXT) WHERE key = 'config_version'")
    return counts


def verify_chain(db: ServerDB, expected_head: tuple[int, str] | None = None) -> int:
    """Recompute ``db``'s whole log chain (and, given, check it ends in ``expected_head``); its length."""
    entries: list[dict[str, Any]] = []
    while page := db.log_entries(len(entries) + 1, _LOG_PAGE):
        entries.extend(page)
    size, head = db.log_head()
    signed = sign_head(Ed25519PrivateKey.generate(), size, head, utc_now_text())  # the chain is what is checked
    verify_log(entries, signed, known_head=expected_head)
    if expected_head is not None and (size, head) != expected_head:
        raise LogIntegrityError(f"log of {db.name} ends at entry {size}, the source's at {expected_head[0]}")
    return size


def migrate(source: str | Path, target: str | Path,
            progress: Callable[[str, int], None] = lambda table, n: None) -> dict[str, Any]:
    """Copy a SQLite server database into an empty target; returns row counts and the verified log size."""
    path = Path(source)
    if not path.is_file():
        raise NotFoundError(f"no SQLite server database at {path}")
    if str(target) == str(source):
        raise StoreError("migrate-db: source and target are the same database")
    src = ServerDB(path)  # an old file is upgraded in place first, so both sides have the same columns
    try:
        if not isinstance(src.backend, SQLiteBackend):
            raise StoreError(f"migrate-db copies from a SQLite file, not {src.name}")
        dst = ServerDB(target)
        try:
            _refuse_non_empty(dst)
            source_head = src.log_head()
            verify_chain(src, source_head)
            counts = _copy(src, dst, progress)
            for table, n in counts.items():
                with dst.lock:
                    got = int(dst.conn.execute(f"SELECT COUNT(*) FROM {table}").fetchone()[0])
                if got != n:
                    raise StoreError(f"migrate-db: {table} has {got} rows on {dst.name}, {n} were copied")
            size = verify_chain(dst, source_head if source_head[0] else None)
            return {"source": src.name, "target": dst.name, "rows": counts, "log_size": size,
                    "log_head": source_head[1]}
        finally:
            dst.close()
    finally:
        src.close()
