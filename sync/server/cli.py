"""``dynadesk-server``: run the leaderboard and administer its keys and datasets (no Qt, no Docker)."""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import TYPE_CHECKING, Any

import click

from dynadesk import defaults
from dynadesk.errors import DynaDeskError
from dynadesk.sync.server.limits import DEFAULT_LIMITS
from dynadesk.sync.server.rates_cli import rates as rates_group

if TYPE_CHECKING:
    import uvicorn

    from dynadesk.sync.server.db import ServerDB

db_option = click.option("--db", "db_path", required=True, metavar="FILE|URL", envvar="DYNADESK_SERVER_DB",
                         help="Server database: a SQLite file (created if missing) or"
                              " postgresql://user:password@host:port/dbname (schema created if missing).")
json_option = click.option("--json", "as_json", is_flag=True, help="Print machine-readable JSON.")


def _db(path: str) -> ServerDB:
    from dynadesk.sync.server.db import ServerDB

    return ServerDB(path)


def _table(headers: list[str], rows: list[list[Any]]) -> None:
    from dynadesk.cli.common import echo_table

    echo_table(headers, rows)


@click.group()
def cli() -> None:
    """DynaDesk leaderboard server and its administration."""


@cli.command()
@db_option
@click.option("--host", default="127.0.0.1", show_default=True, help="Address to bind (loopback unless told).")
@click.option("--port", default=defaults.SERVER_PORT, show_default=True, type=click.IntRange(0, 65535))
@click.option("--key", "key_path", type=click.Path(dir_okay=False),
              help="Server log-signing key (default: DB path + .server.key; created on first start)."
                   " Required with a PostgreSQL --db: every serve process of one board uses the same key.")
@click.option("--workers", default=1, show_default=True, type=click.IntRange(1, 64),
              help="Worker processes (uploads are CPU-bound: one per core).")
@click.option("--address-rate", default=DEFAULT_LIMITS.per_address.text(), show_default=True, metavar="PER_S/BURST",
              help="Uploads each client address may make that are not signed by a registered key (per second /"
                   " at once), per worker; then 429. Signed uploads count only against --key-rate.")
@click.option("--key-rate", default=DEFAULT_LIMITS.per_key.text(), show_default=True, metavar="PER_S/BURST",
              help="Uploads each signing key may make (per second / at once), per worker; then 429.")
@click.option("--trusted-proxy", "trusted_proxies", multiple=True, metavar="ADDRESS",
              help="A load balancer's address whose X-Forwarded-For names the client for the address limit"
                   " (repeatable). From any other peer the header is ignored.")
@click.option("--key-quota", "key_quota", type=click.IntRange(1), metavar="BYTES",
              help="Bundle bytes each key may store in all (default 256 MiB); then 429 quota_exceeded.")
@click.option("--verify-processes", "verify_processes", type=click.IntRange(0, 256), metavar="N",
              help="Processes per worker that verify uploads (signature, canonical form, schema); default: the"
                   " cores shared among the workers; 0 checks in the worker itself. Up to 8 uploads per process"
                   " are admitted at once, then 503 server_busy.")
def serve(db_path: str, host: str, port: int, key_path: str | None, workers: int, address_rate: str,
          key_rate: str, trusted_proxies: tuple[str, ...], key_quota: int | None,
          verify_processes: int | None) -> None:
    """Serve the board, the API (/docs) and the transparency log."""
    import os

    import uvicorn

    from dynadesk.sync.format.keys import load_or_create_server_key
    from dynadesk.sync.server.app import create_app, default_key_path
    from dynadesk.sync.server.db import ServerDB
    from dynadesk.sync.server.dialect import is_postgres
    from dynadesk.sync.server.limits import parse_limits
    from dynadesk.sync.server.pool import default_processes

    limits = parse_limits(address_rate, key_rate)
    verify = default_processes(workers) if verify_processes is None else verify_processes

    key_path = str(Path(key_path or default_key_path(db_path)).resolve())
    db = ServerDB(db_path)  # create and migrate once, before any worker starts
    shown = db.name  # a URL without its password
    db.close()
    load_or_create_server_key(key_path)
    click.echo(f"dynadesk-server: http://{host}:{port}/ (database {shown}, {workers} worker(s),"
               f" {verify} upload-check process(es) each)", err=True)
    if workers == 1:
        # proxy_headers=False: uvicorn would otherwise take X-Forwarded-For from loopback as the client address
        uvicorn.run(create_app(db_path, key_path, limits=limits, trusted_proxies=trusted_proxies,
                               key_quota_bytes=key_quota, verify_processes=verify), host=host,
                    port=port, log_level="warning", access_log=False, proxy_headers=False)
        return
    os.environ["DYNADESK_SERVER_DB"] = db_path if is_postgres(db_path) else str(Path(db_path).resolve())
    os.environ["DYNADESK_SERVER_KEY"] = key_path
    os.environ["DYNADESK_SERVER_LIMITS"] = f"{address_rate},{key_rate}"
    os.environ["DYNADESK_SERVER_TRUSTED_PROXIES"] = ",".join(trusted_proxies)
    os.environ["DYNADESK_SERVER_KEY_QUOTA"] = str(key_quota or "")
    os.environ["DYNADESK_SERVER_VERIFY_PROCESSES"] = str(verify)
    _serve_workers(uvicorn.Config("dynadesk.sync.server.app:app_from_env", factory=True, workers=workers, host=host,
                                  port=port, log_level="warning", access_log=False, proxy_headers=False))


def _serve_workers(config: uvicorn.Config) -> None:
    """``uvicorn.run`` for several workers, but with ``TCP_NODELAY`` on the shared listening socket.

    uvicorn binds that socket with protocol 0, so asyncio does not set ``TCP_NODELAY`` on the
    connections (it only does for ``IPPROTO_TCP`` sockets); a response written as headers then
    body then waits for the client's delayed ACK (~40 ms), capping a keep-alive client at ~25
    requests/s. Linux copies the option from the listening socket to every accepted connection.
    """
    import socket

    from uvicorn.supervisors import Multiprocess

    sock = config.bind_socket()
    if sock.family in (socket.AF_INET, socket.AF_INET6):
        sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
    try:
        Multiprocess(config, sockets=[sock]).run()
    except KeyboardInterrupt:
        pass


@cli.group()
def keys() -> None:
    """Submitter keys allowed to upload."""


@keys.command("add")
@db_option
@click.argument("public_key_file", type=click.Path(exists=True, dir_okay=False))
@click.option("--name", required=True, help="Who the key belongs to (shown on the board).")
@click.option("--role", type=click.Choice(["submitter", "auditor"]), default="submitter", show_default=True,
              help="auditor: may upload audit attestations of other organisations' bundles.")
@click.option("--org", "organisation", metavar="NAME",
              help="The organisation the key belongs to (registered first with 'orgs add'); an auditor key never"
                   " attests its own organisation's results. Unset: the key is an organisation of its own.")
def keys_add(db_path: str, public_key_file: str, name: str, role: str, organisation: str | None) -> None:
    """Register a public key exported with 'dynadesk keys export'."""
    from dynadesk.sync.format.keys import fingerprint, load_public_pem, public_raw

    raw = public_raw(load_public_pem(Path(public_key_file).read_bytes(), public_key_file))
    db = _db(db_path)
    row = db.add_key(fingerprint(raw), raw, name, role, organisation)
    _key_event(db, row.fingerprint, "add", f"{row.name}, {row.role}, organisation {row.organisation or '(none)'}")
    click.echo(f"registered {row.fingerprint} ({row.name}, {row.role}"
               + (f", organisation {row.organisation}" if row.organisation else "") + ")")


@keys.command("revoke")
@db_option
@click.argument("fingerprint")
@click.option("--reason", default="", help="Shown to the submitter when an upload is refused.")
def keys_revoke(db_path: str, fingerprint: str, reason: str) -> None:
    """Revoke a key: its uploads are refused and its rows leave the boards."""
    db = _db(db_path)
    row = db.revoke_key(fingerprint, reason)
    _key_event(db, row.fingerprint, "revoke", reason or "(no reason given)")
    click.echo(f"revoked {row.fingerprint} ({row.name}) at {row.revoked_at}")


@keys.command("list")
@db_option
@json_option
def keys_list(db_path: str, as_json: bool) -> None:
    """Registered keys and whether they are revoked."""
    rows = _db(db_path).list_keys()
    if as_json:
        click.echo(json.dumps([r.to_dict() for r in rows], indent=2))
        return
    _table(["fingerprint", "name", "role", "added", "revoked"],
           [[r.fingerprint, r.name, r.role, r.added_at, r.revoked_at or ""] for r in rows])


def _key_event(db: ServerDB, fingerprint: str, event: str, detail: str) -> None:
    from dynadesk.sync.server.key_changes import record

    record(db, fingerprint, event, detail)


@keys.command("set-org")
@db_option
@click.argument("fingerprint")
@click.argument("organisation")
def keys_set_org(db_path: str, fingerprint: str, organisation: str) -> None:
    """Move a registered key into a registered organisation (an auditor never attests its own organisation's
    results); recorded in 'keys events'."""
    from dynadesk.sync.server.key_changes import set_org

    row = set_org(_db(db_path), fingerprint, organisation)
    click.echo(f"key {row.fingerprint} ({row.name}) now belongs to organisation {row.organisation}")


@keys.command("allow-attest")
@db_option
@click.argument("auditor")
@click.argument("submitter")
def keys_allow_attest(db_path: str, auditor: str, submitter: str) -> None:
    """The operator's word that AUDITOR (a key with no organisation) may attest SUBMITTER's rows although its name
    matches that key's name or organisation; recorded in 'keys events'."""
    from dynadesk.sync.server.key_changes import allow_attest

    allow_attest(_db(db_path), auditor, submitter)
    click.echo(f"auditor key {auditor} may attest the rows of key {submitter} (on the operator's word)")


@keys.command("events")
@db_option
@json_option
def keys_events(db_path: str, as_json: bool) -> None:
    """Every key change made with these commands, oldest first (add, revoke, set-org, allow-attest)."""
    from dynadesk.sync.server.key_changes import events

    rows = events(_db(db_path))
    if as_json:
        click.echo(json.dumps(rows, indent=2))
        return
    _table(["#", "at", "key", "event", "detail"], [[r["seq"], r["at"], r["fingerprint"], r["event"], r["detail"]]
                                                   for r in rows])


@cli.group()
def orgs() -> None:
    """Organisations keys belong to (an auditor never attests its own organisation's results)."""


@orgs.command("add")
@db_option
@click.argument("name")
def orgs_add(db_path: str, name: str) -> None:
    """Register an organisation; then 'keys add --org NAME' puts keys in it."""
    _db(db_path).add_organisation(name)
    click.echo(f"registered organisation {name}")


@orgs.command("list")
@db_option
@json_option
def orgs_list(db_path: str, as_json: bool) -> None:
    """Registered organisations."""
    rows = _db(db_path).organisations()
    if as_json:
        click.echo(json.dumps(rows, indent=2))
        return
    _table(["name", "added"], [[r["name"], r["added_at"]] for r in rows])


@cli.group()
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

    d = register_dataset(_db(db_path), task, name, split=split, digest=digest, size=size, file=file_,
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

    added = import_workspace_datasets(_db(db_path), home, split=split, task=task)
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
    rows = _db(db_path).datasets(task)
    if as_json:
        click.echo(json.dumps(rows, indent=2))
        return
    _table(["task", "name", "version", "split", "size", "digest"],
           [[d["task"], d["name"], d["version"], d["split"], d["size"], d["digest"]] for d in rows])


@cli.group()
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

    db = _db(db_path)
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


@cli.group()
def board() -> None:
    """The board table: a cache of what the stored bundles give."""


@board.command("rebuild")
@db_option
def board_rebuild(db_path: str) -> None:
    """Derive every board row again from the stored bundles (after 'log verify' found a row that differs)."""
    from dynadesk.sync.server.truth import rebuild_board

    db = _db(db_path)
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
    db = _db(db_path)
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
    from dynadesk.sync.board_facts import FactsCache

    facts = FactsCache(db.bundle_raw).of_rows(db.board_rows(task))
    return sorted({f.hardware_class for f in facts.values()})


@cli.group()
def reference() -> None:
    """Rows the operator pins as exchange-rate references (beside the reproduced rows)."""


@reference.command("pin")
@db_option
@click.argument("bundle_id")
@click.option("--note", default="", help="Why this row is a reference (shown in 'reference list').")
def reference_pin(db_path: str, bundle_id: str, note: str) -> None:
    """Pin an accepted bundle's row: it sets its board's exchange rates with the reproduced rows."""
    from dynadesk.sync.server.operator_view import OperatorView

    db = _db(db_path)
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

    db = _db(db_path)
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

    db = _db(db_path)
    try:
        pins = OperatorView(db).pins(task)
    finally:
        db.close()
    if as_json:
        click.echo(json.dumps(pins, indent=2))
        return
    _table(["task", "model", "bundle", "pinned", "note"],
           [[p["task"], p["model"], p["bundle_id"], p["pinned_at"], p["note"]] for p in pins])


@cli.command("migrate-db")
@click.argument("sqlite_file", type=click.Path(exists=True, dir_okay=False))
@click.argument("target", metavar="POSTGRESQL_URL")
@json_option
def migrate_db(sqlite_file: str, target: str, as_json: bool) -> None:
    """Copy a SQLite server database into an empty PostgreSQL one, then verify the log chain there.

    Stop the servers writing to SQLITE_FILE first; afterwards start them with --db POSTGRESQL_URL and the
    same --key (the old default is SQLITE_FILE.server.key)."""
    from dynadesk.sync.server.migrate_db import migrate

    def progress(table: str, n: int) -> None:
        if n % 20000 == 0:
            click.echo(f"  {table}: {n} rows", err=True)

    out = migrate(sqlite_file, target, progress)
    if as_json:
        click.echo(json.dumps(out, indent=2))
        return
    rows = ", ".join(f"{n} {t}" for t, n in out["rows"].items())
    click.echo(f"copied {out['source']} to {out['target']}: {rows}")
    click.echo(f"log verified on the target: {out['log_size']} entries, head {out['log_head']}")


@cli.group("tasks", invoke_without_command=True)
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

    tasks = board_tasks(_db(db_path)) if db_path else load_tasks()
    if as_json:
        click.echo(json.dumps([{"name": t.name, "title": t.title, "metric": t.metric, "digest": task_digest(t)}
                               for t in tasks.values()], indent=2))
        return
    _table(["task", "title", "metric", "digest"], [[t.name, t.title, t.metric, task_digest(t)] for t in tasks.values()])


@tasks_list.command("add")
@db_option
@click.argument("path", type=click.Path(exists=True, dir_okay=False, path_type=Path))
def tasks_add(db_path: str, path: Path) -> None:
    """Register a task file on this board (validated as by 'dynadesk tasks add'; a running serve accepts it at once)."""
    from dynadesk.sync.server.task_registry import add_task_file

    task, digest = add_task_file(_db(db_path), path)
    click.echo(f"registered task '{task.name}' ({digest})")


@cli.group()
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
    db = _db(db_path)
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
    rows = _db(db_path).list_snapshots(task)
    if as_json:
        click.echo(json.dumps(rows, indent=2))
        return
    _table(["id", "log entry", "task", "title", "taken"], [[r["id"], r["seq"], r["task"], r["title"], r["created_at"]]
                                                           for r in rows])


cli.add_command(rates_group)  # issue 44: rate editions (sync/server/rates_cli.py)


def main(argv: list[str] | None = None) -> None:
    try:
        cli.main(args=argv, prog_name="dynadesk-server", standalone_mode=False)
    except click.exceptions.Abort:
        sys.exit(130)
    except click.ClickException as exc:
        exc.show()
        sys.exit(exc.exit_code)
    except click.exceptions.Exit as exc:
        sys.exit(exc.exit_code)
    except DynaDeskError as exc:
        click.secho(f"Error: {exc}", fg="red", err=True)
        sys.exit(1)


if __name__ == "__main__":
    main()
