"""Every difference between the server's two SQL dialects (SQLite, PostgreSQL), in one place.

The server's SQL is written once, for SQLite: ``?`` placeholders, ``INTEGER``/``TEXT``/``BLOB``
columns and ``ON CONFLICT`` upserts (which both dialects read alike). A :class:`Dialect` turns a
statement into the other dialect's form: placeholders, column types (PostgreSQL's ``BIGINT`` for
64-bit sequence numbers and microsecond times, ``BYTEA`` for bundle bytes, ``TEXT COLLATE "C"`` so
text sorts byte-wise as in SQLite and both boards list rows in the same order) and the trigger
that counts key and dataset changes (SQLite triggers run SQL; PostgreSQL ones call a function).
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from functools import lru_cache
from urllib.parse import urlsplit, urlunsplit

PG_SCHEMES = ("postgresql://", "postgres://")
_BUMP = "UPDATE meta SET value = CAST(value AS INTEGER) + 1 WHERE key = 'config_version'"  # SQLite's, as first applied
_PG_BUMP = "UPDATE meta SET value = CAST(CAST(value AS BIGINT) + 1 AS TEXT) WHERE key = 'config_version'"
_PG_TYPES = [(re.compile(r"\bBLOB\b"), "BYTEA"), (re.compile(r"\bINTEGER\b"), "BIGINT"),
             (re.compile(r"\bTEXT\b"), 'TEXT COLLATE "C"')]


def is_postgres(target: object) -> bool:
    """Whether a ``--db`` value names a PostgreSQL database (a URL) rather than a SQLite file."""
    return isinstance(target, str) and target.lower().startswith(PG_SCHEMES)


def redact(url: str) -> str:
    """A database URL fit for messages and logs: its password replaced by ``***``."""
    try:
        parts = urlsplit(url)
        if parts.password is None:
            return url
        netloc = parts.netloc.rsplit("@", 1)
        user = netloc[0].split(":", 1)[0]
        return urlunsplit(parts._replace(netloc=f"{user}:***@{netloc[1]}"))
    except ValueError:
        return url.split("://", 1)[0] + "://***"


@dataclass(frozen=True)
class Dialect:
    name: str  # "sqlite" or "postgresql"

    @property
    def postgres(self) -> bool:
        return self.name == "postgresql"

    def sql(self, statement: str) -> str:
        """A statement with ``?`` placeholders in this dialect's form (``%s`` and ``%%`` for psycopg)."""
        if not self.postgres:
            return statement
        return _pg_sql(statement)

    def ddl(self, statement: str) -> str:
        """A ``CREATE``/``ALTER`` statement with this dialect's column types."""
        if not self.postgres:
            return statement
        for pattern, replacement in _PG_TYPES:
            statement = pattern.sub(replacement, statement)
        return statement

    def config_triggers(self, tables: tuple[str, ...]) -> list[str]:
        """Statements that make every change to ``tables`` bump ``meta.config_version`` (the upload cache's check)."""
        if not self.postgres:
            return [f"CREATE TRIGGER IF NOT EXISTS {t}_{op.lower()}_config AFTER {op} ON {t}"
                    f" BEGIN {_BUMP}; END"
                    for t in tables for op in ("INSERT", "UPDATE", "DELETE")]
        out = ["CREATE OR REPLACE FUNCTION dynadesk_bump_config() RETURNS trigger LANGUAGE plpgsql AS"
               f" $$ BEGIN {_PG_BUMP}; RETURN NULL; END $$"]
        for t in tables:
            out.append(f"DROP TRIGGER IF EXISTS {t}_config ON {t}")
            out.append(f"CREATE TRIGGER {t}_config AFTER INSERT OR UPDATE OR DELETE ON {t}"
                       " FOR EACH ROW EXECUTE FUNCTION dynadesk_bump_config()")
        return out


@lru_cache(maxsize=512)
def _pg_sql(statement: str) -> str:
    return statement.replace("%", "%%").replace("?", "%s")


SQLITE = Dialect("sqlite")
POSTGRES = Dialect("postgresql")
