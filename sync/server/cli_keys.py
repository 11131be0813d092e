"""``dynadesk-server keys`` and ``orgs``: who may upload or attest, and the organisations keys belong to."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

import click

from dynadesk.sync.server.cli_options import db_option, echo_listing, json_option, open_db

if TYPE_CHECKING:
    from dynadesk.sync.server.db import ServerDB


@click.group()
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
    db = open_db(db_path)
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
    db = open_db(db_path)
    row = db.revoke_key(fingerprint, reason)
    _key_event(db, row.fingerprint, "revoke", reason or "(no reason given)")
    click.echo(f"revoked {row.fingerprint} ({row.name}) at {row.revoked_at}")


@keys.command("list")
@db_option
@json_option
def keys_list(db_path: str, as_json: bool) -> None:
    """Registered keys and whether they are revoked."""
    rows = open_db(db_path).list_keys()
    echo_listing(as_json, [r.to_dict() for r in rows], ["fingerprint", "name", "role", "added", "revoked"],
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

    row = set_org(open_db(db_path), fingerprint, organisation)
    click.echo(f"key {row.fingerprint} ({row.name}) now belongs to organisation {row.organisation}")


@keys.command("allow-attest")
@db_option
@click.argument("auditor")
@click.argument("submitter")
def keys_allow_attest(db_path: str, auditor: str, submitter: str) -> None:
    """The operator's word that AUDITOR (a key with no organisation) may attest SUBMITTER's rows although its name
    matches that key's name or organisation; recorded in 'keys events'."""
    from dynadesk.sync.server.key_changes import allow_attest

    allow_attest(open_db(db_path), auditor, submitter)
    click.echo(f"auditor key {auditor} may attest the rows of key {submitter} (on the operator's word)")


@keys.command("events")
@db_option
@json_option
def keys_events(db_path: str, as_json: bool) -> None:
    """Every key change made with these commands, oldest first (add, revoke, set-org, allow-attest)."""
    from dynadesk.sync.server.key_changes import events

    rows = events(open_db(db_path))
    echo_listing(as_json, rows, ["#", "at", "key", "event", "detail"],
                 [[r["seq"], r["at"], r["fingerprint"], r["event"], r["detail"]] for r in rows])


@click.group()
def orgs() -> None:
    """Organisations keys belong to (an auditor never attests its own organisation's results)."""


@orgs.command("add")
@db_option
@click.argument("name")
def orgs_add(db_path: str, name: str) -> None:
    """Register an organisation; then 'keys add --org NAME' puts keys in it."""
    open_db(db_path).add_organisation(name)
    click.echo(f"registered organisation {name}")


@orgs.command("list")
@db_option
@json_option
def orgs_list(db_path: str, as_json: bool) -> None:
    """Registered organisations."""
    rows = open_db(db_path).organisations()
    echo_listing(as_json, rows, ["name", "added"],
                 [[r["name"], r["added_at"]] for r in rows])


