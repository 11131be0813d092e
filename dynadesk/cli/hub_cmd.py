"""``dynadesk hub``: serve the annotation hub on the local network, invite and revoke people."""

from __future__ import annotations

from pathlib import Path

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
@click.option("--lan", is_flag=True, help="Listen on every interface, over HTTPS only (default: 127.0.0.1, HTTP).")
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
@click.option("--read-rate", default="300/60", show_default=True,
              help="Reads (pages of examples, stats, models) per session: COUNT/SECONDS.")
@click.option("--tls-cert", type=click.Path(dir_okay=False, path_type=Path), default=None,
              help="Serve HTTPS with this PEM certificate (with --tls-key). With --lan and no certificate, a "
                   "self-signed one is made and kept in the workspace; its fingerprint is printed.")
@click.option("--tls-key", type=click.Path(dir_okay=False, path_type=Path), default=None,
              help="The certificate's PEM private key.")
@click.option("--trusted-proxy", metavar="ADDR", default=None,
              help="The address of a reverse proxy whose X-Forwarded-For is believed (default: none is).")
@click.option("--max-connections", type=click.IntRange(8, 100_000), default=256, show_default=True,
              help="Open connections at most; more are answered 503 and closed at once.")
@click.option("--header-timeout", type=click.FloatRange(min=1, max=600), default=10.0, show_default=True,
              help="Seconds a connection has to finish its TLS handshake, then to send a whole request head, "
                   "before it is closed.")
@pass_app
def hub_serve(app, lan, port, session_hours, batch_window_ms, max_batch, rate, signin_rate, per_model, read_rate,
              tls_cert, tls_key, trusted_proxy, max_connections, header_timeout) -> None:
    """Serve the annotators' web app over this workspace until Ctrl-C (HTTPS with --lan)."""
    from dynadesk.hub.limits import parse_rate
    from dynadesk.hub.server import NetOptions, serve

    net = NetOptions(lan=lan, port=port, tls_cert=tls_cert, tls_key=tls_key, trusted_proxy=trusted_proxy,
                     max_connections=max_connections, header_timeout_s=header_timeout,
                     read_rate=parse_rate(read_rate, "--read-rate"), write_rate=parse_rate(rate, "--rate"),
                     signin_rate=parse_rate(signin_rate, "--signin-rate"))
    app.store  # noqa: B018 - create and migrate the workspace before the server's threads open it
    serve(app.workspace.home, session_hours=session_hours, window_s=batch_window_ms / 1000, max_batch=max_batch,
          per_model=per_model, net=net, say=lambda line: click.echo(line, err=True))


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
