"""Core schema: workspace metadata (key/value), shared by every area."""

from __future__ import annotations

from sqlite_utils import Database, Migrations

migrations = Migrations("dynadesk.core")


@migrations()
def m001_meta(db: Database) -> None:
    db.table("meta").create({"key": str, "value": str}, pk="key")


def get_meta(db: Database, key: str) -> str | None:
    row = db.execute("SELECT value FROM meta WHERE key = ?", [key]).fetchone()
    return row[0] if row else None


def set_meta(db: Database, key: str, value: str) -> None:
    db.execute("INSERT INTO meta(key, value) VALUES(?, ?) ON CONFLICT(key) DO UPDATE SET value = excluded.value",
               [key, value])
