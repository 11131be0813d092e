"""What every ``dynadesk-server`` command shares: the ``--db`` and ``--json`` options, opening the database and
printing a table (with :mod:`dynadesk.texttable`, not the desktop CLI: the server imports neither it nor the
workspace store)."""

from __future__ import annotations

import json
from typing import TYPE_CHECKING, Any

import click

from dynadesk.texttable import table_lines

if TYPE_CHECKING:
    from dynadesk.sync.server.db import ServerDB

__all__ = ["db_option", "echo_listing", "echo_rows", "json_option", "open_db"]

db_option = click.option("--db", "db_path", required=True, metavar="FILE|URL", envvar="DYNADESK_SERVER_DB",
                         help="Server database: a SQLite file (created if missing) or"
                              " postgresql://user:password@host:port/dbname (schema created if missing).")
json_option = click.option("--json", "as_json", is_flag=True, help="Print machine-readable JSON.")



def open_db(path: str) -> ServerDB:
    """The server database at ``path`` (a file or a ``postgresql://`` URL), migrated on open."""
    from dynadesk.sync.server.db import ServerDB

    return ServerDB(path)


def echo_rows(headers: list[str], rows: list[list[Any]]) -> None:
    """A plain aligned text table on stdout."""
    for line in table_lines(headers, rows):
        click.echo(line)


def echo_listing(as_json: bool, found: Any, headers: list[str], rows: list[list[Any]]) -> None:
    """What every listing command prints: ``found`` as indented JSON with ``--json``, else the aligned table of
    ``rows`` under ``headers``."""
    if as_json:
        click.echo(json.dumps(found, indent=2))
    else:
        echo_rows(headers, rows)
