"""``dynadesk-server``: run the leaderboard and administer its keys and datasets (no Qt, no Docker)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import TYPE_CHECKING

import click

from dynadesk import defaults
from dynadesk.commandline import run_command
from dynadesk.sync.server.cli_board import board, reference, snapshot
from dynadesk.sync.server.cli_data import datasets, log, tasks_list
from dynadesk.sync.server.cli_keys import keys, orgs
from dynadesk.sync.server.cli_options import db_option, json_option
from dynadesk.sync.server.limits import DEFAULT_LIMITS
from dynadesk.sync.server.rates_cli import rates as rates_group

if TYPE_CHECKING:
    import uvicorn



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
    from dynadesk.sync.server.app import ServerOptions, create_app, default_key_path
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
        options = ServerOptions(trusted_proxies=trusted_proxies, key_quota_bytes=key_quota, verify_processes=verify)
        uvicorn.run(create_app(db_path, key_path, limits=limits, options=options), host=host,
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




for _group in (keys, orgs, datasets, log, tasks_list, board, reference, snapshot):  # one module per resource
    cli.add_command(_group)
cli.add_command(rates_group)  # issue 44: rate editions (sync/server/rates_cli.py)


def main(argv: list[str] | None = None) -> None:
    run_command(cli, argv, "dynadesk-server")


if __name__ == "__main__":
    main()
