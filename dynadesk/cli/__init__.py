"""The ``dynadesk`` command line: a thin layer over the library.

Command groups live in their own modules and are imported only when used, so
``dynadesk tasks list`` never pays for torch or docker.
"""

from __future__ import annotations

import importlib
import sys
from types import FrameType

import click

from dynadesk import __version__
from dynadesk.commandline import run_command

# command name -> "module:attribute"
COMMANDS = {
    "tasks": "dynadesk.cli.tasks_cmd:tasks",
    "data": "dynadesk.cli.data_cmd:data",
    "models": "dynadesk.cli.models_cmd:models",
    "dynascore": "dynadesk.cli.scoring_cmd:dynascore",
    "leaderboard": "dynadesk.cli.scoring_cmd:leaderboard",
    "perturb": "dynadesk.cli.scoring_cmd:perturb",
    "eval": "dynadesk.cli.eval_cmd:eval_cmd",
    "runs": "dynadesk.cli.eval_cmd:runs",
    "image": "dynadesk.cli.image_cmd:image",
    "annotators": "dynadesk.cli.annotate_cmd:annotators",
    "annotate": "dynadesk.cli.annotate_cmd:annotate",
    "rounds": "dynadesk.cli.annotate_cmd:rounds",
    "keys": "dynadesk.cli.bundle_cmd:keys",
    "bundle": "dynadesk.cli.bundle_cmd:bundle",
    "sync": "dynadesk.cli.bundle_cmd:sync",
    "audit": "dynadesk.cli.audit_cmd:audit",
    "gui": "dynadesk.cli.gui_cmd:gui",
    "demo": "dynadesk.cli.demo_cmd:demo",
    "worker": "dynadesk.cli.queue_cmd:worker",
    "jobs": "dynadesk.cli.queue_cmd:jobs",
    "hub": "dynadesk.cli.hub_cmd:hub",
}


class LazyGroup(click.Group):
    """Imports a command group's module only when the group is listed or run."""

    def list_commands(self, ctx: click.Context) -> list[str]:
        return sorted(COMMANDS)

    def get_command(self, ctx: click.Context, name: str) -> click.Command | None:
        target = COMMANDS.get(name)
        if target is None:
            return None
        module, attr = target.split(":")
        command: click.Command = getattr(importlib.import_module(module), attr)
        return command


@click.group(cls=LazyGroup)
@click.option("--home", envvar="DYNADESK_HOME", type=click.Path(file_okay=False),
              help="Workspace folder (default ~/.local/share/dynadesk, or $DYNADESK_HOME).")
@click.version_option(__version__, prog_name="dynadesk")
@click.pass_context
def cli(ctx: click.Context, home: str | None) -> None:
    """DynaDesk: adversarial annotation, sandboxed evaluation and Dynascore leaderboards, offline."""
    from dynadesk.cli.common import AppContext

    ctx.obj = AppContext(home)
    ctx.call_on_close(ctx.obj.close)


def _terminated(signum: int, frame: FrameType | None) -> None:
    """SIGTERM (a service manager, ``kill``, a closed terminal's job control) unwinds like Ctrl-C,
    so running evaluations stop their worker or container and are marked interrupted."""
    raise KeyboardInterrupt


def main(argv: list[str] | None = None) -> None:
    import signal
    import threading

    if threading.current_thread() is threading.main_thread():
        signal.signal(signal.SIGTERM, _terminated)
    try:
        run_command(cli, argv, "dynadesk", aborted="Aborted.")
    except KeyboardInterrupt:
        click.echo("Interrupted.", err=True)
        sys.exit(130)
    except Exception as exc:  # only a refused write (read-only workspace) is turned into one line; else re-raised
        from dynadesk.cli.common import AppContext
        from dynadesk.oserrors import write_problem

        line = write_problem(exc, AppContext.current_home)
        if line is None:
            raise
        click.secho(f"Error: {line}", fg="red", err=True)
        sys.exit(1)
