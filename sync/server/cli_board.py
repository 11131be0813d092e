"""``dynadesk-server board``, ``reference`` and ``snapshot``: the operator's choices about the public board and
its signed snapshots."""

from __future__ import annotations

import json
from typing import TYPE_CHECKING

import click

from dynadesk.sync.server.cli_options import db_option, echo_listing, json_option, open_db

if TYPE_CHECKING:
    from dynadesk.sync.server.db import ServerDB


@click.group()
def board() -> None:
    """The board table: a cache of what the stored bundles give."""


@board.command("rebuild")
@db_option
def board_rebuild(db_path: str) -> None:
    """Derive every board row again from the stored bundles (after 'log verify' found a row that differs)."""
    from dynadesk.sync.server.truth import rebuild_board

    db = open_db(db_path)
    try:
        n = rebuild_board(db)
    finally:
        db.close()
    click.echo(f"board rebuilt from the stored bundles: {n} rows")


@board.command("default-class")
@db_option
@click.option("--task", required=True, help="The task whose board this sets.")
@click.option("--class", "hardware_class", metavar="CLASS",
              help="The canonical hardware class (the hardware_classes[].class of /api/leaderboard/TASK).")
@click.option("--unset", is_flag=True, help="Forget the operator's class: the board chooses by distinct submitters.")
@json_option
def board_default_class(db_path: str, task: str, hardware_class: str | None, unset: bool, as_json: bool) -> None:
    """Set the hardware class a task's board opens on (without --class or --unset: show it).

    Unset, the board opens on the class with the most distinct submitters whose rows an auditor reproduced on
    that class, then the most distinct submitters (never the most rows); see docs/board.md."""
    from dynadesk.sync.server.operator_view import OperatorView
    from dynadesk.sync.server.task_registry import board_tasks

    if hardware_class is not None and unset:
        raise click.UsageError("give --class or --unset, not both")
    db = open_db(db_path)
    try:
        known = board_tasks(db)
        if task not in known:
            from dynadesk.errors import NotFoundError

            raise NotFoundError(f"no task '{task}' on this board (known: {', '.join(sorted(known))})")
        view = OperatorView(db)
        if hardware_class is not None or unset:
            view.set_default_class(task, None if unset else hardware_class)
        current = view.default_classes().get(task)
        classes = _classes_with_rows(db, task)
    finally:
        db.close()
    if as_json:
        click.echo(json.dumps({"task": task, "default_class": current, "classes_with_rows": classes}, indent=2))
        return
    if current is None:
        click.echo(f"task '{task}': no default class set by the operator (chosen by distinct submitters)")
        return
    click.echo(f"task '{task}': default hardware class {current['hardware_class']} (set {current['set_at']})")
    if current["hardware_class"] not in classes:
        click.echo("  note: no row has this class yet; until one does the board chooses by distinct submitters",
                   err=True)


def _classes_with_rows(db: ServerDB, task: str) -> list[str]:
    from dynadesk.sync.rules.board_facts import FactsCache

    facts = FactsCache(db.bundle_raw).of_rows(db.board_rows(task))
    return sorted({f.hardware_class for f in facts.values()})


@click.group()
def reference() -> None:
    """Rows the operator pins as exchange-rate references (beside the reproduced rows)."""


@reference.command("pin")
@db_option
@click.argument("bundle_id")
@click.option("--note", default="", help="Why this row is a reference (shown in 'reference list').")
def reference_pin(db_path: str, bundle_id: str, note: str) -> None:
    """Pin an accepted bundle's row: it sets its board's exchange rates with the reproduced rows."""
    from dynadesk.sync.server.operator_view import OperatorView

    db = open_db(db_path)
    try:
        pin = OperatorView(db).pin(bundle_id, note)
    finally:
        db.close()
    click.echo(f"pinned {pin['model']} ({bundle_id}) as a reference row of the '{pin['task']}' board")


@reference.command("unpin")
@db_option
@click.argument("bundle_id")
def reference_unpin(db_path: str, bundle_id: str) -> None:
    """Stop using a pinned row as a reference."""
    from dynadesk.sync.server.operator_view import OperatorView

    db = open_db(db_path)
    try:
        OperatorView(db).unpin(bundle_id)
    finally:
        db.close()
    click.echo(f"unpinned {bundle_id}")


@reference.command("list")
@db_option
@click.option("--task", help="Only this task's pins.")
@json_option
def reference_list(db_path: str, task: str | None, as_json: bool) -> None:
    """Pinned reference rows."""
    from dynadesk.sync.server.operator_view import OperatorView

    db = open_db(db_path)
    try:
        pins = OperatorView(db).pins(task)
    finally:
        db.close()
    echo_listing(as_json, pins, ["task", "model", "bundle", "pinned", "note"],
                 [[p["task"], p["model"], p["bundle_id"], p["pinned_at"], p["note"]] for p in pins])



@click.group()
def snapshot() -> None:
    """Signed board snapshots: a task's board frozen for citation (/snapshots/ID)."""


def _pairs(values: tuple[str, ...], option: str, prefix: str) -> dict[str, str]:
    out = {}
    for item in values:
        name, sep, value = item.partition("=")
        if not sep or not name:
            raise click.BadParameter(f"{item!r}: use NAME=NUMBER", param_hint=option)
        out[f"{prefix}.{name}"] = value
    return out


@snapshot.command("create")
@db_option
@click.argument("task")
@click.option("--title", required=True, help="What the snapshot is called in citations.")
@click.option("--key", "key_path", type=click.Path(dir_okay=False),
              help="The server's log-signing key (default: DB path + .server.key; required with PostgreSQL).")
@click.option("--weight", "weights", multiple=True, metavar="METRIC=N", help="A metric weight (repeatable).")
@click.option("--dataset-weight", "dataset_weights", multiple=True, metavar="DATASET=N",
              help="A dataset weight (repeatable).")
@click.option("--memory-budget", type=float, metavar="GIB", help="GiB the memory metric counts savings below.")
@click.option("--hardware-class", help="The hardware class ranked, or 'all' (default: the one with most models).")
@click.option("--runner", help="Only rows of this runner (docker, local).")
@click.option("--sandboxed", type=click.Choice(["yes", "no"]), help="Only sandboxed (or only not sandboxed) rows.")
@click.option("--audit", type=click.Choice(["all", "reproduced"]), default=None,
              help="reproduced: only rows an auditor reproduced; all: every row (default: the board's default view,"
                   " reproduced rows only once the view has one).")
@json_option
def snapshot_create(db_path: str, task: str, title: str, key_path: str | None, weights: tuple[str, ...],
                    dataset_weights: tuple[str, ...], memory_budget: float | None, hardware_class: str | None,
                    runner: str | None, sandboxed: str | None, audit: str, as_json: bool) -> None:
    """Freeze TASK's board (rows, weights, the log head), sign it with the server key and append it to the log."""
    from datetime import UTC, datetime

    from dynadesk.sync.format.keys import load_or_create_server_key
    from dynadesk.sync.server.app import default_key_path
    from dynadesk.sync.server.board_view import BoardView
    from dynadesk.sync.server.snapshots import create_snapshot
    from dynadesk.sync.server.task_registry import board_tasks
    from dynadesk.sync.server.values import registry

    params = {**_pairs(weights, "--weight", "weight"), **_pairs(dataset_weights, "--dataset-weight", "dataset"),
              **({"memory_budget": str(memory_budget)} if memory_budget is not None else {}),
              **({"hardware_class": hardware_class} if hardware_class else {}),
              **({"runner": runner} if runner else {}), **({"sandboxed": sandboxed} if sandboxed else {}),
              **({"audit": audit} if audit else {})}
    db = open_db(db_path)
    try:
        key = load_or_create_server_key(key_path or default_key_path(db_path))
        tasks = board_tasks(db)
        view = BoardView(db, tasks, {name: registry(t) for name, t in tasks.items()})
        snap, entry = create_snapshot(view, key, task, title, params, datetime.now(UTC))
    finally:
        db.close()
    p = snap.payload
    if as_json:
        click.echo(json.dumps({"id": snap.id, "url": f"/snapshots/{snap.id}", "log_seq": entry["seq"],
                               "rows": len(p["rows"]), "log_size": p["log"]["size"]}, indent=2))
        return
    click.echo(f"snapshot {snap.id}: '{p['title']}', {len(p['rows'])} rows of '{task}' at log head {p['log']['size']},"
               f" logged as entry {entry['seq']}; page /snapshots/{snap.id}")


@snapshot.command("list")
@db_option
@click.option("--task")
@json_option
def snapshot_list(db_path: str, task: str | None, as_json: bool) -> None:
    """Snapshots taken on this board, oldest first."""
    rows = open_db(db_path).list_snapshots(task)
    echo_listing(as_json, rows, ["id", "log entry", "task", "title", "taken"],
                 [[r["id"], r["seq"], r["task"], r["title"], r["created_at"]] for r in rows])


