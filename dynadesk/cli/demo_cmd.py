"""``dynadesk demo``: the product's front door (what ``make demo`` runs).

Stdout gets one line per step with its result, the board and the audit verdict (each line at most 160
characters); every detail the demo prints (progress, CPU accounting per step, notes, every audit check) goes to
a log file in the workspace, named at the start and at the end (issue 47).
"""

from __future__ import annotations

import time
from pathlib import Path

import click

from dynadesk.cli.common import RegistryChoice, pass_app
from dynadesk.orchestration.runner_registry import runner_names


def demo_log_path(home: str | Path) -> Path:
    """A new file under the workspace's ``logs/`` folder, named by the start time (a rerun keeps the earlier)."""
    folder = Path(home) / "logs"
    folder.mkdir(parents=True, exist_ok=True)
    stamp = time.strftime("%Y%m%d-%H%M%S")
    path, n = folder / f"demo-{stamp}.log", 1
    while path.exists():
        n += 1
        path = folder / f"demo-{stamp}-{n}.log"
    return path


@click.command()
@click.option("--runner", type=RegistryChoice(runner_names, extra=("auto",)), default="auto", show_default=True,
              help="auto: Docker when a daemon answers, otherwise the local (not sandboxed) runner.")
@click.option("--reaudit", is_flag=True, help="Re-run the audit even if this bundle was audited before.")
@pass_app
def demo(app, runner: str, reaudit: bool) -> None:
    """Run the end-to-end demo on the embedded default data (idempotent; a rerun reuses what is built)."""
    from dynadesk.demo import run_demo

    path = demo_log_path(app.workspace.home)
    click.echo(f"detailed log: {path}")
    with path.open("w", encoding="utf-8") as log:
        def detail(line: str) -> None:
            log.write(line + "\n")
            log.flush()

        try:
            run_demo(app.workspace, app.store, runner=runner, echo=detail, reaudit=reaudit, say=click.echo)
        finally:
            click.echo(f"detailed log: {path}")
