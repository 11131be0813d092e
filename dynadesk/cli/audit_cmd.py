"""``dynadesk audit``: a thin layer over :mod:`dynadesk.audit`.

``dynadesk audit BUNDLE ...`` is short for ``dynadesk audit check BUNDLE ...``.
Exit status of ``check``: 0 when nothing failed, 1 when a signature, input or
deterministic field differs (or the bundle is malformed), 3 when a requested
re-run could not be made (nothing differed, but nothing was re-computed either),
4 when measured claims were not reproduced (same hardware class, outside tolerance
of the re-measurement) and nothing deterministic failed.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import TYPE_CHECKING, Any

import click

from dynadesk.cli.common import RegistryChoice, echo_json, echo_table, json_option, pass_app
from dynadesk.orchestration.runner_registry import runner_names

if TYPE_CHECKING:
    from dynadesk.progress import ProgressEvent

EXIT_DIFFERS = 1
EXIT_INCOMPLETE = 3
EXIT_MEASURED = 4


class _DefaultCheck(click.Group):
    """Routes ``audit BUNDLE`` to ``audit check BUNDLE``."""

    def parse_args(self, ctx: click.Context, args: list[str]) -> list[str]:
        if args and args[0] not in self.commands and args[0] not in ("--help", "-h"):
            args = ["check", *args]
        return super().parse_args(ctx, args)


@click.group(cls=_DefaultCheck)
def audit() -> None:
    """Audit a signed bundle: 'audit BUNDLE' (= 'audit check'), 'audit prove', 'audit check-proof'."""


def _short(value: Any, width: int = 24) -> str:
    if value is None:
        return "-"
    if isinstance(value, float):
        return f"{value:.6g}"
    text = value if isinstance(value, str) else json.dumps(value, sort_keys=True)
    return text if len(text) <= width else text[: width - 3] + "..."


def print_report(report) -> None:
    click.echo(f"bundle {report.bundle_id}  task {report.task}  model {report.model}")
    echo_table(["field", "kind", "verdict", "bundle", "found", "tolerance", "note"],
               [[c.field, c.kind, c.verdict, _short(c.expected), _short(c.actual),
                 "" if c.tolerance is None else f"±{c.tolerance:.0%}", c.note] for c in report.checks])
    for note in report.notes:
        click.echo(f"note: {note}")
    click.echo(", ".join(f"{n} {v}" for v, n in report.counts().items() if n))
    click.echo("VERDICT\n" + "\n".join(report.verdict_lines()))


@audit.command("check")
@click.argument("bundle_file", metavar="BUNDLE", type=click.Path(exists=True, dir_okay=False))
@click.option("--model", "model_path", type=click.Path(exists=True, file_okay=False),
              help="The model folder to check (default: the workspace's model of the bundle's name).")
@click.option("--rerun", is_flag=True, help="Evaluate again with the recorded settings and seeds, then compare.")
@click.option("--runner", type=RegistryChoice(runner_names), help="Re-run here (default: the recorded runner).")
@click.option("--against", type=int, metavar="RUN", help="Compare with an existing run instead of re-running.")
@click.option("--server", help="Also check the bundle is in this leaderboard server's transparency log.")
@click.option("--server-key", help="The server's log-signing public key (64 hex digits) to pin.")
@click.option("--attest", is_flag=True, help="With --rerun: sign the verdict with this workspace's key and queue it"
              " for 'dynadesk sync' (the board shows it; the server takes it from auditor keys only).")
@json_option
@pass_app
def check(app, bundle_file: str, model_path: str | None, rerun: bool, runner: str | None, against: int | None,
          server: str | None, server_key: str | None, attest: bool, as_json: bool) -> None:
    """Verify a bundle, check its model, datasets and image, and (with --rerun) compare every field."""
    from dynadesk.audit.audit import AuditOptions, audit_bundle

    if rerun and against is not None:
        raise click.UsageError("give --rerun or --against RUN, not both")
    if attest and not rerun:
        raise click.UsageError("--attest needs --rerun: only a re-run can be attested")
    if attest:
        from dynadesk.audit.attest import refuse_own_bundle

        refuse_own_bundle(app.workspace, Path(bundle_file).read_bytes())
    try:
        key = bytes.fromhex(server_key) if server_key else None
    except ValueError:
        raise click.BadParameter("must be 64 hex digits", param_hint="--server-key") from None
    progress = None if as_json else _progress()
    report = audit_bundle(app.store, app.workspace, Path(bundle_file).read_bytes(),
                          AuditOptions(model_path=model_path, rerun=rerun, runner=runner, against=against,
                                       server=server, server_key=key),
                          where=bundle_file, progress=progress)
    attestation = None
    if attest:
        from dynadesk.audit.attest import attest as sign_verdict
        from dynadesk.cli.common import key_passphrase
        from dynadesk.sync.format.keys import key_info

        att = sign_verdict(app.store, app.workspace, report, Path(bundle_file).read_bytes(),
                           key_passphrase(key_info(app.workspace.keys_dir).encrypted))
        attestation = {"id": att.id, "verdict": att.verdict, "bundle_id": att.bundle_id}
    if as_json:
        echo_json({**report.to_dict(), **({"attestation": attestation} if attestation else {})})
    else:
        print_report(report)
        if attestation:
            click.echo(f"attestation {attestation['id'][:16]} ({attestation['verdict']}) queued;"
                       " run 'dynadesk sync' to upload it")
    if report.failures:
        sys.exit(EXIT_DIFFERS)
    if report.measured_failures:
        sys.exit(EXIT_MEASURED)
    if report.incomplete:
        sys.exit(EXIT_INCOMPLETE)


def _progress():
    shown: dict[str, str | None] = {"phase": None}

    def event(ev: ProgressEvent) -> None:
        phase = ev.phase
        if phase != shown["phase"]:
            shown["phase"] = phase
            click.echo(f"re-run: {phase}", err=True)

    return event


def _bundle(path: str):
    from dynadesk.sync.format.envelope import parse_bundle

    return parse_bundle(Path(path).read_bytes(), path)


@audit.command("prove")
@click.argument("bundle_file", metavar="BUNDLE", type=click.Path(exists=True, dir_okay=False))
@click.argument("example_id")
@click.option("--dataset", help="The dataset, when the example id occurs in several.")
@click.option("-o", "--output", type=click.Path(dir_okay=False), help="Write the proof document here.")
@json_option
@pass_app
def prove(app, bundle_file: str, example_id: str, dataset: str | None, output: str | None, as_json: bool) -> None:
    """Print one example's prediction with its Merkle path (needs the run's predictions in this workspace)."""
    from dynadesk.audit.proofs import proof_document, prove_example
    from dynadesk.sync.format.envelope import verify_bundle

    b = _bundle(bundle_file)
    verify_bundle(b)
    proof = prove_example(app.store, b.payload, example_id, dataset)
    doc = proof_document(b.id, proof)
    if output:
        Path(output).write_text(json.dumps(doc, indent=2, ensure_ascii=False) + "\n", encoding="utf-8")
    if as_json:
        echo_json(doc)
        return
    click.echo(f"bundle {b.id}\nprediction {json.dumps(proof.record, ensure_ascii=False, sort_keys=True)}")
    click.echo(f"leaf {proof.index} of {proof.tree_size}; root {proof.root}")
    for i, h in enumerate(proof.path):
        click.echo(f"  path[{i}] {h}")
    if output:
        click.echo(f"wrote {output}", err=True)


@audit.command("check-proof")
@click.argument("bundle_file", metavar="BUNDLE", type=click.Path(exists=True, dir_okay=False))
@click.argument("proof_file", type=click.Path(exists=True, dir_okay=False))
@json_option
def check_proof_cmd(bundle_file: str, proof_file: str, as_json: bool) -> None:
    """Verify a proof against the bundle's signed Merkle root (exit 1 with the reason if it fails)."""
    from dynadesk.audit.proofs import check_proof, read_proof_file

    b = _bundle(bundle_file)
    proof = check_proof(b, read_proof_file(proof_file))
    if as_json:
        echo_json({"valid": True, "bundle_id": b.id, "index": proof.index, "record": proof.record})
        return
    click.echo(f"OK: the prediction {json.dumps(proof.record, ensure_ascii=False, sort_keys=True)} is leaf "
               f"{proof.index} of {proof.tree_size} under bundle {b.id}'s signed Merkle root")
