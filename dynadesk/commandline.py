"""Running a click command tree as a program: the exit codes and one-line errors both command-line programs give.

``dynadesk`` and ``dynadesk-server`` run their trees with ``standalone_mode=False`` so that a library error
(:class:`DynaDeskError`) prints as one red line with exit status 1 rather than a traceback; what click itself would
have done (usage errors, ``--help``/``--version`` exits, Ctrl-C at a prompt) is kept. Kept apart from
``dynadesk.cli`` so the leaderboard server runs its tree without importing the desktop CLI."""

from __future__ import annotations

import sys
from collections.abc import Sequence

import click

from dynadesk.errors import DynaDeskError

__all__ = ["run_command"]


def run_command(command: click.Command, argv: Sequence[str] | None, prog_name: str, aborted: str = "") -> None:
    """Run ``command`` on ``argv`` and exit as a program does: 130 on an abort (printing ``aborted`` when given),
    click's own status and message on a usage error or an exit, 1 with ``Error: ...`` on a :class:`DynaDeskError`.
    Anything else (Ctrl-C outside a prompt, a foreign error) is the caller's to handle."""
    try:
        command.main(args=list(argv) if argv is not None else None, prog_name=prog_name, standalone_mode=False)
    except click.exceptions.Abort:
        if aborted:
            click.echo(aborted, err=True)
        sys.exit(130)
    except click.ClickException as exc:
        exc.show()
        sys.exit(exc.exit_code)
    except click.exceptions.Exit as exc:
        sys.exit(exc.exit_code)
    except DynaDeskError as exc:
        click.secho(f"Error: {exc}", fg="red", err=True)
        sys.exit(1)
