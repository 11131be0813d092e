"""Writes docs/cli.md from the click command trees of ``dynadesk`` and ``dynadesk-server``.

The reference is generated, not written by hand, so it cannot fall behind the code:
``tests/cli/test_cli_docs.py`` fails when the committed file differs from what this prints.
Run ``python packaging/gen_cli_docs.py`` after changing a command, an option or a help text.
"""

from __future__ import annotations

import sys
from collections.abc import Iterator
from pathlib import Path

import click

ROOT = Path(__file__).resolve().parent.parent
OUTPUT = ROOT / "docs" / "cli.md"
WIDTH = 100  # fixed, so the text does not depend on the terminal

HEADER = """# Command-line reference

Generated from the code by `python packaging/gen_cli_docs.py`; do not edit by hand
(`tests/cli/test_cli_docs.py` fails when this file and the commands disagree).
Every command also prints this text with `--help`.
"""


def roots() -> list[tuple[str, click.Command]]:
    """The installed programs (``[project.scripts]`` in pyproject.toml) that are click trees."""
    from dynadesk.cli import cli
    from dynadesk.sync.server.cli import cli as server_cli

    return [("dynadesk", cli), ("dynadesk-server", server_cli)]


def walk(name: str, command: click.Command,
         parent: click.Context | None = None) -> Iterator[tuple[str, click.Command, click.Context]]:
    """Every command of the tree, depth first, groups before their subcommands."""
    ctx = click.Context(command, info_name=name, parent=parent, terminal_width=WIDTH, max_content_width=WIDTH)
    yield ctx.command_path, command, ctx
    if isinstance(command, click.Group):
        for sub in command.list_commands(ctx):
            child = command.get_command(ctx, sub)
            if child is not None:
                yield from walk(sub, child, ctx)


def command_paths() -> list[str]:
    """``dynadesk``, ``dynadesk data``, ``dynadesk data import``, ... for every command."""
    return [path for prog, root in roots() for path, _, _ in walk(prog, root)]


def heading(path: str) -> str:
    return f"{'#' * min(2 + path.count(' '), 6)} `{path}`"


def undocumented(doc: str, paths: list[str]) -> list[str]:
    """The command paths that have no heading of their own in ``doc``."""
    lines = set(doc.splitlines())
    return [p for p in paths if heading(p) not in lines]


def render() -> str:
    parts = [HEADER]
    for prog, root in roots():
        for path, command, ctx in walk(prog, root):
            text = command.get_help(ctx).rstrip()
            parts.append(f"{heading(path)}\n\n```text\n{text}\n```\n")
    return "\n".join(parts)


def main() -> int:
    OUTPUT.write_text(render(), encoding="utf-8")
    print(f"wrote {OUTPUT.relative_to(ROOT)} ({len(command_paths())} commands)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
