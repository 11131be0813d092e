"""``dynadesk keys``, ``dynadesk bundle`` and ``dynadesk sync``: thin wrappers over dynadesk.sync."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

import click

from dynadesk.cli.common import PASSPHRASE_ENV, echo_json, echo_table, json_option, key_passphrase, pass_app

if TYPE_CHECKING:
    from dynadesk.sync.format.parts import Dataset


@click.group()
def keys() -> None:
    """The workspace's Ed25519 submitter key."""


@keys.command("init")
@click.option("--passphrase", "ask", is_flag=True,
              help=f"Protect the private key with a passphrase (prompted, or ${PASSPHRASE_ENV}).")
@click.option("--force", is_flag=True, help="Replace an existing key (bundles signed with it stay valid).")
@json_option
@pass_app
def keys_init(app, ask: bool, force: bool, as_json: bool) -> None:
    """Create the key pair (private key file mode 0600)."""
    from dynadesk.sync.format.keys import generate_key

    info = generate_key(app.workspace.ensure().keys_dir, key_passphrase(ask, confirm=True), force=force)
    if as_json:
        echo_json(info.to_dict())
        return
    click.echo(f"created {info.private_path} (mode 0600{', passphrase-protected' if info.encrypted else ''})")
    click.echo(f"fingerprint {info.fingerprint}")


@keys.command("show")
@json_option
@pass_app
def keys_show(app, as_json: bool) -> None:
    """Print the public key and its fingerprint."""
    from dynadesk.sync.format.keys import key_info

    info = key_info(app.workspace.keys_dir)
    if as_json:
        echo_json(info.to_dict())
        return
    click.echo(f"fingerprint  {info.fingerprint}\npublic key   {info.public_key_hex}\nprivate key  {info.private_path}"
               f" ({'passphrase-protected' if info.encrypted else 'no passphrase'})")


@keys.command("export")
@click.option("-o", "--output", type=click.Path(dir_okay=False), help="Write here instead of stdout.")
@pass_app
def keys_export(app, output: str | None) -> None:
    """Write the public key (PEM) for 'dynadesk-server keys add'."""
    from dynadesk.sync.format.keys import key_info

    pem = Path(key_info(app.workspace.keys_dir).public_path).read_bytes()
    if output:
        Path(output).write_bytes(pem)
        click.echo(f"wrote {output}", err=True)
    else:
        click.echo(pem.decode(), nl=False)


@click.group()
def bundle() -> None:
    """Signed score bundles."""


@bundle.command("create")
@click.argument("evaluation_id", type=int)
@click.option("-o", "--output", type=click.Path(dir_okay=False), help="Also write the bundle here.")
@click.option("--preflight", is_flag=True, help="First repeat the run's deterministic part (twice, and at a second "
              "batch size) and refuse to sign fields that do not reproduce.")
@json_option
@pass_app
def bundle_create(app, evaluation_id: int, output: str | None, preflight: bool, as_json: bool) -> None:
    """Sign a succeeded evaluation run's results and queue the bundle for sync."""
    if preflight:
        preflight_or_refuse(app, evaluation_id, as_json)
    from dynadesk.sync.client.create import create_bundle
    from dynadesk.sync.format.keys import key_info

    encrypted = key_info(app.workspace.keys_dir).encrypted
    b = create_bundle(app.workspace, app.store, evaluation_id, key_passphrase(encrypted), output)
    if as_json:
        echo_json(b.summary())
        return
    click.echo(f"bundle {b.id} ({b.task}, {b.model_name}) queued; file {app.workspace.bundles_dir / (b.id + '.json')}")


@bundle.command("verify")
@click.argument("file", type=click.Path(exists=True, dir_okay=False))
@json_option
def bundle_verify(file: str, as_json: bool) -> None:
    """Check a bundle's structure, canonical form and signature (exit 1 with the reason if it fails)."""
    from dynadesk.jsonio import read_capped
    from dynadesk.sync.format.envelope import MAX_BUNDLE_BYTES, load_and_verify

    b = load_and_verify(read_capped(file, MAX_BUNDLE_BYTES, "bundle"), file)
    if as_json:
        echo_json({"valid": True, **b.summary()})
        return
    click.echo(f"OK {file}: bundle {b.id}, signed by {b.key_fingerprint}")


@bundle.command("canonical")
@click.argument("file", type=click.Path(exists=True, dir_okay=False))
@click.option("-o", "--output", required=True, type=click.Path(dir_okay=False),
              help="Where to write the canonical bundle (never over FILE).")
def bundle_canonical(file: str, output: str) -> None:
    """Restore a re-formatted (pretty-printed, re-saved) bundle's RFC 8785 form, then verify it: the signature
    covers the canonical bytes, so it verifies again when only the form changed."""
    from dynadesk.errors import BundleFormatError
    from dynadesk.sync.format.canonical import canonical_bytes, loads_checked
    from dynadesk.sync.format.envelope import load_and_verify

    if Path(output).resolve() == Path(file).resolve():
        raise click.UsageError("--output must be another file than FILE")
    try:
        doc, _ = loads_checked(Path(file).read_bytes())
    except (ValueError, RecursionError) as exc:
        raise BundleFormatError(f"{file}: not JSON ({exc}); nothing to restore") from None
    raw = canonical_bytes(doc)
    b = load_and_verify(raw, file)  # refuses (naming why) anything else than the form
    Path(output).write_bytes(raw)
    click.echo(f"wrote {output}: bundle {b.id} in canonical form, signature verified ({b.key_fingerprint})")


@bundle.command("show")
@click.argument("file", type=click.Path(exists=True, dir_okay=False))
@json_option
def bundle_show(file: str, as_json: bool) -> None:
    """Print a bundle's contents (parsed, not trusted: run 'bundle verify' for that)."""
    from dynadesk.jsonio import read_capped
    from dynadesk.sync.format.envelope import MAX_BUNDLE_BYTES, parse_bundle

    b = parse_bundle(read_capped(file, MAX_BUNDLE_BYTES, "bundle"), file)
    if as_json:
        echo_json({"id": b.id, "payload": b.payload.to_json(), "public_key": b.public_key.hex()})
        return
    p = b.payload
    click.echo(f"bundle {b.id}\n  task {p.task}  model {p.model.name} ({p.model.digest})\n"
               f"  created {p.created_at}  runner {p.runner.kind}"
               f"{' sandboxed' if p.runner.sandboxed else ''}  key {b.key_fingerprint}\n"
               f"  predictions {p.predictions.count} (merkle root {p.predictions.merkle_root})")
    click.echo(f"  task digest {p.task_digest or '(not recorded: made before task digests)'}")
    if p.worker:
        click.echo(f"  evaluated by queue worker {p.worker.name}  worker key {p.worker.key_fingerprint}")
    lineage = p.model.lineage
    if lineage:
        trained = ", ".join(f"{t.dataset}×{t.weight:g} ({t.digest[:19]})" for t in lineage.train)
        click.echo(f"  trained from {lineage.base_name} ({lineage.base_digest[:19]}) on {trained}; "
                   f"dev {lineage.dev.dataset}; dynadesk {lineage.code_version}")
    echo_table(["dataset", "split", "size", "digest", "labels"],
               [[d.name, d.split, d.size, d.digest, dataset_label_text(d)] for d in p.datasets])
    echo_table(["dataset", "metric", "value", "unit", "kind"],
               [[m.dataset or "(run)", m.metric, f"{m.value:.4g}", m.unit,
                 "deterministic" if m.deterministic else "measured"] for m in p.metrics])
    from dynadesk.audit.hardware import measurement_lines  # measure branch: hardware class and noise

    for line in measurement_lines(dict(p.environment)):
        click.echo(f"  {line}")


def dataset_label_text(d: Dataset) -> str:
    """A dataset entry's optional labels in words: answerable-only, and the robustness suite set."""
    parts = ["answerable-only"] if d.answerable_only else []
    if d.robustness_suites:
        parts.append("robustness suites " + ", ".join(d.robustness_suites))
    return "; ".join(parts) or "-"


@bundle.command("list")
@click.option("--status", type=click.Choice(["queued", "sent", "rejected"]))
@json_option
@pass_app
def bundle_list(app, status: str | None, as_json: bool) -> None:
    """Bundles created in this workspace."""
    rows = app.store.bundles.list(status)
    if as_json:
        echo_json([r.to_dict() for r in rows])
        return
    echo_table(["id", "task", "model", "created", "status"],
               [[r.id[:16], r.task, r.model_name, r.created_at, r.status] for r in rows])


@click.group(invoke_without_command=True)
@click.option("--server", help="Leaderboard URL (default: $DYNADESK_SERVER or the last one used).")
@json_option
@click.pass_context
def sync(ctx: click.Context, server: str | None, as_json: bool) -> None:
    """Upload queued bundles to the leaderboard server; 'sync status' shows the queue."""
    if ctx.invoked_subcommand is not None:
        return
    from dynadesk.sync.client.upload import sync_queue

    app = ctx.obj
    report = sync_queue(app.store, server, progress=None if as_json else
                        lambda bid, outcome: click.echo(f"{bid[:16]}  {outcome}", err=True))
    if as_json:
        echo_json(report.to_dict())
    else:
        click.echo(f"{report.server}: {len(report.sent)} sent, {len(report.already)} already there,"
                   f" {len(report.rejected)} rejected, {len(report.still_queued)} still queued")
        if report.attestations_sent or report.attestations_rejected:
            click.echo(f"attestations: {len(report.attestations_sent)} sent,"
                       f" {len(report.attestations_rejected)} rejected")
        for bid, why in {**report.rejected, **report.attestations_rejected}.items():
            click.echo(f"  rejected {bid[:16]}: {why}", err=True)
    if not report.ok:
        raise click.ClickException(f"sync stopped, bundles stay queued: {report.error}")
    refused = len(report.rejected) + len(report.attestations_rejected)
    if refused:  # the exit status says what happened: a rejection is not a success
        raise click.ClickException(
            f"{refused} upload(s) rejected by {report.server} (reasons above; 'dynadesk sync status' lists them): fix "
            "each, then 'dynadesk sync requeue --all-rejected' and 'dynadesk sync'")


@sync.command("status")
@json_option
@pass_app
def sync_status(app, as_json: bool) -> None:
    """What is queued, sent and rejected, each rejection with the server's reason."""
    rows = app.store.bundles.list()
    atts = app.store.bundles.attestations()
    if as_json:
        echo_json({"counts": app.store.bundles.counts(), "bundles": [r.to_dict() for r in rows],
                   "attestations": [a.to_dict() for a in atts]})
        return
    counts = app.store.bundles.counts()
    click.echo(", ".join(f"{n} {s}" for s, n in counts.items()))
    echo_table(["id", "model", "status", "attempts", "server", "reason / last error"],
               [[r.id[:16], r.model_name, r.status, r.attempts, r.server or "", r.last_error or ""] for r in rows])
    if atts:
        click.echo("attestations:")
        echo_table(["id", "bundle", "verdict", "status", "attempts", "reason / last error"],
                   [[a.id[:16], a.bundle_id[:16], a.verdict, a.status, a.attempts, a.last_error or ""]
                    for a in atts])


@sync.command("requeue")
@click.argument("bundle_ids", nargs=-1)
@click.option("--all-rejected", is_flag=True, help="Re-queue every rejected bundle.")
@json_option
@pass_app
def sync_requeue(app, bundle_ids: tuple[str, ...], all_rejected: bool, as_json: bool) -> None:
    """Put rejected bundles back in the queue (after fixing the reason 'sync status' shows); then run 'sync'."""
    if not bundle_ids and not all_rejected:
        raise click.UsageError("name the bundle id(s) to re-queue, or give --all-rejected")
    ids = list(bundle_ids) + ([r.id for r in app.store.bundles.list("rejected")] if all_rejected else [])
    done = [app.store.bundles.requeue(bid) for bid in dict.fromkeys(ids)]
    if as_json:
        echo_json([r.to_dict() for r in done])
        return
    for r in done:
        click.echo(f"re-queued {r.id[:16]} ({r.model_name})")
    click.echo(f"{len(done)} bundle(s) queued; run 'dynadesk sync' to upload", err=True)


@sync.command("check-log")
@click.option("--server", help="Leaderboard URL (default: $DYNADESK_SERVER or the last one used).")
@json_option
@pass_app
def sync_check_log(app, server: str | None, as_json: bool) -> None:
    """Verify the server's transparency log and that it still contains what this workspace saw before."""
    from dynadesk.sync.client.upload import check_log

    result = check_log(app.store, server)
    if as_json:
        echo_json(result)
        return
    since = "first check; server key pinned" if result["previous_size"] is None else \
        f"extends the {result['previous_size']} entries seen before"
    click.echo(f"OK {result['server']}: {result['size']} entries, head {result['head'][:16]} ({since})")


def preflight_or_refuse(app, evaluation_id: int, as_json: bool) -> None:
    """The ``bundle create --preflight`` hook: raise NotReproducibleError before anything is signed."""
    from dynadesk.audit.preflight import preflight, require_reproducible

    report = preflight(app.store, app.workspace, evaluation_id,
                       step=lambda s: click.echo(f"pre-flight: {s}", err=True))
    if not as_json:
        echo_table(["field", "verdict", "note"], [[c.field, c.verdict, c.note] for c in report.checks])
    require_reproducible(report)


@sync.command("verify-snapshot")
@click.argument("source", metavar="URL|FILE")
@click.option("--save", type=click.Path(dir_okay=False, writable=True),
              help="Keep what was fetched (snapshot, log entries, bundles) in FILE, to check again offline later.")
@click.option("--server-key", metavar="HEX", help="The server's public key (64 hex digits) the snapshot must be"
              " signed with (default: the key 'sync check-log' pinned for that server; with neither, refused).")
@json_option
@pass_app
def sync_verify_snapshot(app, source: str, save: str | None, server_key: str | None, as_json: bool) -> None:
    """Check a board snapshot offline: the pinned or given server key's signature, the log up to its head, every
    row, exclusion and reference row against the log's bundles and attestations at that head with the stated
    weights (exit 1 naming what does not follow); then say whether a newer head or snapshot exists."""
    import json as _json

    from dynadesk.sync.client.upload import LOG_HEAD_META, snapshot_currency, snapshot_evidence, verify_snapshot

    evidence = snapshot_evidence(source)
    online = source.startswith(("http://", "https://"))
    server = source.split("/snapshots/")[0].split("/api/")[0].rstrip("/") if online else evidence.get("server")
    if save:
        Path(save).write_text(_json.dumps({**evidence, "server": server}), encoding="utf-8")
    pinned = None
    if server_key:
        try:
            pinned = bytes.fromhex(server_key)
        except ValueError:
            raise click.BadParameter("must be 64 hex digits", param_hint="--server-key") from None
    else:
        seen = _json.loads(app.store.get_meta(LOG_HEAD_META) or "null")
        if seen and isinstance(server, str) and server and str(seen["server"]).rstrip("/") == server:
            pinned = bytes.fromhex(seen["public_key"])
    result = verify_snapshot(evidence, pinned)  # no key: refused, naming how to pin one
    currency = (snapshot_currency(server, result) if isinstance(server, str) and server
                else "NOT CHECKED whether it is current: the file names no server to ask")
    pins = result["pinned_reference_rows"]
    if as_json:
        echo_json({**result, "verified": True, "currency": currency})
        return
    click.echo(f"OK snapshot {result['snapshot'][:16]} '{result['title']}': {result['rows']} rows of"
               f" '{result['task']}' follow from the log's bundles at head {result['log_size']}"
               f" ({result['log_head'][:16]}), signed by {result['server_key']}"
               + (f"; logged as entry {result['logged_at']}" if result["logged_at"] else ""))
    if pins:
        click.echo(f"reference rows pinned by the operator (not in the log; the server's word): {', '.join(pins)}")
    click.echo(currency)
