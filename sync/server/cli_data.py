"""``dynadesk-server datasets``, ``tasks`` and ``log``: what a board accepts, and the log's own check."""

from __future__ import annotations

import json
from pathlib import Path
from typing import TYPE_CHECKING

import click

from dynadesk.sync.server.cli_options import db_option, echo_listing, json_option, open_db

if TYPE_CHECKING:
    pass


@click.group()
def datasets() -> None:
    """Datasets each task's board accepts (by name and digest)."""


@datasets.command("add")
@db_option
@click.option("--task", required=True, help="Task name (one of the bundled task files).")
@click.option("--name", required=True, help="Dataset name as bundles state it.")
@click.option("--digest", help="sha256:<hex> dataset digest (or give --file).")
@click.option("--size", type=click.IntRange(0), help="Number of examples (with --digest).")
@click.option("--split", default="test", show_default=True)
@click.option("--file", "file_", type=click.Path(exists=True, dir_okay=False),
              help="A JSONL/CSV dataset file: digest and size are computed from it.")
@click.option("--replace", is_flag=True, help="Replace an accepted dataset of the same name.")
def datasets_add(db_path: str, task: str, name: str, digest: str | None, size: int | None, split: str,
                 file_: str | None, replace: bool) -> None:
    """Accept a dataset on a task's board."""
    from dynadesk.sync.server.admin import register_dataset

    d = register_dataset(open_db(db_path), task, name, split=split, digest=digest, size=size, file=file_,
                         replace=replace)
    was = f"; replaces version {d['version'] - 1} ({d['previous_digest']})" if d["previous_digest"] else ""
    click.echo(f"task '{d['task']}' accepts dataset '{d['name']}' version {d['version']} ({d['digest']},"
               f" {d['size']} examples{was})")


@datasets.command("import-workspace")
@db_option
@click.option("--home", required=True, type=click.Path(exists=True, file_okay=False),
              help="A DynaDesk workspace whose datasets to accept.")
@click.option("--split", default="test", show_default=True, help="Only datasets of this split.")
@click.option("--task", help="Only this task.")
def datasets_import(db_path: str, home: str, split: str, task: str | None) -> None:
    """Accept every dataset of one split found in a workspace (digests as the workspace stored them)."""
    from dynadesk.sync.server.admin import import_workspace_datasets

    added = import_workspace_datasets(open_db(db_path), home, split=split, task=task)
    click.echo(f"accepted {len(added)} dataset(s): {', '.join(d['name'] for d in added) or 'none'}")
    for d in added:
        if d["previous_digest"]:
            click.echo(f"  {d['name']}: digest changed, now version {d['version']} (was {d['previous_digest']});"
                       " bundles scored on the old version stay on the board, marked stale")


@datasets.command("list")
@db_option
@click.option("--task")
@json_option
def datasets_list(db_path: str, task: str | None, as_json: bool) -> None:
    rows = open_db(db_path).datasets(task)
    echo_listing(as_json, rows, ["task", "name", "version", "split", "size", "digest"],
                 [[d["task"], d["name"], d["version"], d["split"], d["size"], d["digest"]] for d in rows])


@click.group()
def log() -> None:
    """The transparency log as this database holds it."""


@log.command("verify")
@db_option
@json_option
def log_verify(db_path: str, as_json: bool) -> None:
    """Recompute the whole hash chain from entry 1, check every entry against the stored bundle or attestation it
    names and every board row against its bundles; exit 1 if any of it is broken."""
    from dynadesk.sync.server.migrate_db import verify_chain
    from dynadesk.sync.server.truth import check_board, check_documents

    db = open_db(db_path)
    try:
        size = verify_chain(db)
        head = db.log_head()[1]
        check_documents(db)  # every entry's stored bundle or attestation, its bytes and id
        check_board(db)  # the board table is what the stored bundles give
    finally:
        db.close()
    if as_json:
        click.echo(json.dumps({"size": size, "head": head, "verified": True}))
        return
    click.echo(f"log verified: {size} entries, head {head}")



@click.group("tasks", invoke_without_command=True)
@click.option("--db", "db_path", default=None, metavar="FILE|URL", envvar="DYNADESK_SERVER_DB",
              help="Also list the tasks registered on this board (dynadesk-server tasks add).")
@json_option
@click.pass_context
def tasks_list(ctx: click.Context, db_path: str | None, as_json: bool) -> None:
    """Tasks the board knows: the bundled task files, and those registered by file on --db."""
    if ctx.invoked_subcommand is not None:
        return
    from dynadesk.sync.server.task_registry import board_tasks
    from dynadesk.tasks import load_tasks, task_digest

    tasks = board_tasks(open_db(db_path)) if db_path else load_tasks()
    found = [{"name": t.name, "title": t.title, "metric": t.metric, "digest": task_digest(t)} for t in tasks.values()]
    echo_listing(as_json, found, ["task", "title", "metric", "digest"],
                 [[t["name"], t["title"], t["metric"], t["digest"]] for t in found])


@tasks_list.command("add")
@db_option
@click.argument("path", type=click.Path(exists=True, dir_okay=False, path_type=Path))
def tasks_add(db_path: str, path: Path) -> None:
    """Register a task file on this board (validated as by 'dynadesk tasks add'; a running serve accepts it at once)."""
    from dynadesk.sync.server.task_registry import add_task_file

    task, digest = add_task_file(open_db(db_path), path)
    click.echo(f"registered task '{task.name}' ({digest})")


