"""``dynadesk gui``: open the desktop app (the GUI module is loaded by name, since the
core may not import ``dynadesk.gui`` — see the import-linter contracts)."""

from __future__ import annotations

import importlib
import sys

import click

from dynadesk.cli.common import AppContext


@click.command()
@click.option("--page", help="Page to open first (tasks_data, models, annotate, validate, rounds, evaluate, "
                             "leaderboard, bundles, audit, settings).")
@click.option("--smoke", is_flag=True, help="Open the workspace, load a model, predict once and exit.")
@click.option("--model", help="Model for --smoke (default: the first registered).")
@click.pass_obj
def gui(app: AppContext, page: str | None, smoke: bool, model: str | None) -> None:
    """Open the DynaDesk desktop app on this workspace."""
    try:
        gui_app = importlib.import_module("dynadesk.gui.app")
    except ImportError as exc:
        raise click.ClickException(f"the desktop app needs PySide6 (pip install 'dynadesk[gui]'): {exc}") from exc
    explicit = click.get_current_context().find_root().params.get("home")  # --home or $DYNADESK_HOME
    argv = ["--home", str(app.workspace.home)] if explicit else []  # else: the app's last-used workspace
    if page:
        argv += ["--page", page]
    if smoke:
        argv.append("--smoke")
    if model:
        argv += ["--model", model]
    sys.exit(gui_app.main(argv))
