"""``dynadesk-server rates``: freeze a task's exchange rates into a signed, logged rate edition; list and show them."""

from __future__ import annotations

import json
from typing import Any

import click

db_option = click.option("--db", "db_path", required=True, metavar="FILE|URL", envvar="DYNADESK_SERVER_DB",
                         help="Server database: a SQLite file or a postgresql:// URL.")


@click.group()
def rates() -> None:
    """Rate editions: a task's exchange rates, frozen by the operator and signed (docs/board.md, "Rate editions")."""


@rates.command("freeze")
@db_option
@click.option("--task", required=True, help="The task whose rates are frozen.")
@click.option("--bundle", "bundle_ids", multiple=True, metavar="BUNDLE_ID",
              help="Make the rates from exactly these board rows (repeatable; default: the reference rows, i.e. the"
                   " pinned rows and each organisation's latest reproduced sandboxed row).")
@click.option("--note", default="", help="Why this edition (kept in the signed edition).")
@click.option("--factor", type=click.FloatRange(min=1.0, min_open=True), default=2.0, show_default=True,
              help="The bound: no reference row may move a rate by more than this factor (a row that does is left out"
                   " of that rate); stated in the edition.")
@click.option("--rule", type=click.Choice(["robust", "dynaboard"]), default="robust", show_default=True,
              help="robust: the bounded robust estimator; dynaboard: Dynaboard's own AMRS over exactly the reference"
                   " rows, unbounded (for a board whose few rows the bound leaves rate-less); stated in the edition"
                   " and on the board.")
@click.option("--single-organisation", "single_organisation", default="", metavar="WHY",
              help="Allow reference rows that are not of distinct organisations (a board of one lab): every pinned"
                   " row counts; WHY is kept in the signed edition and every board scored with it says so.")
@click.option("--key", "key_path", type=click.Path(dir_okay=False),
              help="The server's log-signing key (default: DB path + .server.key; required with PostgreSQL).")
@click.option("--json", "as_json", is_flag=True, help="Print machine-readable JSON.")
def rates_freeze(db_path: str, task: str, bundle_ids: tuple[str, ...], note: str, key_path: str | None,
                 as_json: bool, **how: Any) -> None:
    """Freeze TASK's exchange rates into its next signed edition, appended to the log; every row is then scored
    with it."""
    from dynadesk.sync.format.keys import load_or_create_server_key
    from dynadesk.sync.server.app import default_key_path
    from dynadesk.sync.server.board_view import BoardView
    from dynadesk.sync.server.db import ServerDB
    from dynadesk.sync.server.rate_editions import FreezeChoice
    from dynadesk.sync.server.task_registry import board_tasks
    from dynadesk.sync.server.values import registry

    db = ServerDB(db_path)
    try:
        key = load_or_create_server_key(key_path or default_key_path(db_path))
        tasks = board_tasks(db)
        view = BoardView(db, tasks, {name: registry(t) for name, t in tasks.items()})
        edition = view.freeze_rates(task, key, FreezeChoice(list(bundle_ids) or None, note, float(how["factor"]),
                                                            str(how["rule"]), str(how["single_organisation"]).strip()))
    finally:
        db.close()
    p = edition.payload
    if as_json:
        click.echo(json.dumps({"task": task, "edition": edition.number, "id": edition.id, "amrs": p["amrs"],
                               "url": f"/api/rates/{task}/{edition.number}"}, indent=2))
        return
    click.echo(f"{edition.describe()}: edition {edition.number}, from {len(p['reference'])} reference rows")
    for metric, rate in p["amrs"].items():
        detail = p["rates"].get(metric) or {}
        click.echo(f"  {metric}: {'no rate (' + str(detail.get('why')) + ')' if rate is None else f'{rate:.6g}'}"
                   + "".join(f"; left out {row}: {why}" for row, why in (detail.get("left_out") or {}).items()))


@rates.command("list")
@db_option
@click.option("--task", help="Only this task's editions.")
@click.option("--json", "as_json", is_flag=True, help="Print machine-readable JSON.")
def rates_list(db_path: str, task: str | None, as_json: bool) -> None:
    """Rate editions, by task and number."""
    from dynadesk.sync.server.cli_options import echo_listing
    from dynadesk.sync.server.db import ServerDB
    from dynadesk.sync.server.rate_editions import RateBook

    db = ServerDB(db_path)
    try:
        found = RateBook(db).listing(task)
    finally:
        db.close()
    echo_listing(as_json, found, ["task", "edition", "id", "log entry", "frozen"],
                 [[r["task"], r["edition"], r["id"][:16], r["seq"], r["created_at"]] for r in found])


@rates.command("show")
@db_option
@click.option("--task", required=True)
@click.option("--edition", "number", type=int, help="The edition (default: the current one).")
def rates_show(db_path: str, task: str, number: int | None) -> None:
    """One signed rate edition, as JSON (its exact signed bytes)."""
    from dynadesk.errors import NotFoundError
    from dynadesk.sync.server.db import ServerDB
    from dynadesk.sync.server.rate_editions import RateBook

    db = ServerDB(db_path)
    try:
        book = RateBook(db)
        edition = book.current(task) if number is None else book.get(task, number)
    finally:
        db.close()
    if edition is None:
        raise NotFoundError(f"no rate edition of '{task}' yet (dynadesk-server rates freeze --task {task})")
    click.echo(edition.raw.decode("utf-8"))
