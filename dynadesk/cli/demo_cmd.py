"""``dynadesk demo``: the product's front door (what ``make demo`` runs)."""

from __future__ import annotations

import click

from dynadesk.cli.common import RegistryChoice, pass_app
from dynadesk.orchestration.runner_registry import runner_names


@click.command()
@click.option("--runner", type=RegistryChoice(runner_names, extra=("auto",)), default="auto", show_default=True,
              help="auto: Docker when a daemon answers, otherwise the local (not sandboxed) runner.")
@click.option("--reaudit", is_flag=True, help="Re-run the audit even if this bundle was audited before.")
@pass_app
def demo(app, runner: str, reaudit: bool) -> None:
    """Run the end-to-end demo on the embedded default data (idempotent; a rerun reuses what is built)."""
    from dynadesk.demo import run_demo

    run_demo(app.workspace, app.store, runner=runner, echo=click.echo, reaudit=reaudit)
