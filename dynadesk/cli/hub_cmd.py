"""``dynadesk hub``: serve the annotation hub on the local network, invite and revoke people."""

from __future__ import annotations

import click

from dynadesk.cli.common import echo_json, echo_table, json_option, pass_app
from dynadesk.hub import identity
from dynadesk.store.hub import HUB_ROLES


def _pct(x: float | None) -> str:
    return "-" if x is None else f"{100 * x:.1f}%"


@click.group()
def hub() -> None:
    """Annotators join this workspace from a browser on the local network."""


@hub.command("serve")
@click.option("--lan", is_flag=True, help="Listen on every interface (default: 127.0.0.1 only).")
@click.option("--port", type=click.IntRange(1, 65535), default=8765, show_default=True)
@click.option("--session-hours", type=click.FloatRange(min=0.001, max=24 * 30), default=identity.DEFAULT_SESSION_HOURS,
              show_default=True, help="How long a sign-in lasts.")
@click.option("--batch-window-ms", type=click.FloatRange(min=0, max=1000), default=5.0, show_default=True,
              help="How long a live prediction waits for others to the same model (one batch).")
@click.option("--max-batch", type=click.IntRange(1, 256), default=16, show_default=True,
              help="Most examples in one batch (1: no batching).")
@click.option("--rate", default="60/60", show_default=True,
              help="Writes (examples, votes) per session: COUNT/SECONDS.")
@click.option("--signin-rate", default="10/60", show_default=True, help="Sign-in attempts per address: COUNT/SECONDS.")
@click.option("--per-model", type=click.IntRange(1, 1024), default=16, show_default=True,
              help="Most example requests in flight per target model (the rest wait, shown as busy).")
@pass_app
def hub_serve(app, lan, port, session_hours, batch_window_ms, max_batch, rate, signin_rate, per_model) -> None:
    """Serve the annotators' web app over this workspace until Ctrl-C."""
    from dynadesk.hub.limits import parse_rate
    from dynadesk.hub.server import serve

    write_rate, sign_rate = parse_rate(rate, "--rate"), parse_rate(signin_rate, "--signin-rate")
    app.store  # noqa: B018 - create and migrate the workspace before the server's threads open it
    serve(app.workspace.home, lan=lan, port=port, session_hours=session_hours, window_s=batch_window_ms / 1000,
          max_batch=max_batch, write_rate=write_rate, signin_rate=sign_rate, per_model=per_model,
          say=lambda line: click.echo(line, err=True))


@hub.command("invite")
@click.argument("name")
@click.option("--role", type=click.Choice(HUB_ROLES), default="annotator", show_default=True,
              help="annotator: writes and judges; validator: judges only; owner: one vote settles an example.")
@click.option("--valid-hours", type=float, default=identity.DEFAULT_INVITE_HOURS, show_default=True,
              help="How long the code can be used (once).")
@json_option
@pass_app
def hub_invite(app, name, role, valid_hours, as_json) -> None:
    """Print a one-time sign-in code for NAME (replaces an unused earlier one)."""
    inv = identity.invite(app.store, name, role, valid_hours)
    if as_json:
        echo_json({"name": inv.name, "role": inv.role, "code": inv.code, "expires_at": inv.expires_at})
        return
    click.echo(f"invited {inv.role} '{inv.name}'; one-time code (valid until {inv.expires_at}):")
    click.echo(inv.code)


@hub.command("revoke")
@click.argument("name")
@pass_app
def hub_revoke(app, name) -> None:
    """End NAME's sessions and unused code at once (a new invite lets them back)."""
    n = identity.revoke(app.store, name)
    click.echo(f"revoked '{name}': {n} live session(s) ended")


@hub.command("status")
@json_option
@pass_app
def hub_status(app, as_json) -> None:
    """Who is connected, examples and votes per person, MER/vMER per round and target."""
    from dynadesk.hub.overview import overview

    ov = overview(app.store)
    if as_json:
        echo_json(ov.to_dict())
        return
    click.echo(f"{ov.connected} connected")
    echo_table(["person", "role", "connected", "last seen", "sessions", "examples", "votes"],
               [[p.name, p.role + (" (revoked)" if p.revoked else ""), "yes" if p.connected else "no",
                 p.last_seen or "-", p.sessions, p.examples, p.votes] for p in ov.people])
    click.echo("")
    echo_table(["task", "round", "status", "target", "examples", "fooled", "verified fooled", "MER", "vMER"],
               [[t.task, t.round, t.status, t.model, t.collected, t.fooled, t.verified_fooled, _pct(t.mer),
                 _pct(t.vmer)] for t in ov.targets])
