"""Which backend a ``--db`` value means: a ``postgresql://`` URL or a SQLite file path.

Its own module so that :mod:`~dynadesk.sync.server.backend` (the interface and SQLite) and
:mod:`~dynadesk.sync.server.pg` (PostgreSQL, which builds on that interface) import in one direction.
"""

from __future__ import annotations

from pathlib import Path

from dynadesk.errors import ConfigError, StoreError
from dynadesk.sync.server.backend import Backend, SQLiteBackend
from dynadesk.sync.server.dialect import is_postgres


def open_backend(target: str | Path, *, background_checkpoint: bool = False) -> Backend:
    """A PostgreSQL backend for a ``postgresql://`` URL, else SQLite at that path."""
    if is_postgres(target):
        try:
            from dynadesk.sync.server.pg import PostgresBackend
        except ImportError as exc:
            raise ConfigError(f"a PostgreSQL --db needs the psycopg driver ({exc}):"
                              " pip install 'dynadesk[server]'") from exc
        return PostgresBackend(str(target))
    if isinstance(target, str) and "://" in target:
        raise StoreError(f"--db {target.split('://', 1)[0]}://...: not a database this server knows;"
                         " give a SQLite file path or a postgresql://user:password@host:port/dbname URL")
    return SQLiteBackend(target, background_checkpoint=background_checkpoint)



