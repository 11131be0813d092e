"""Every command of ``dynadesk`` and ``dynadesk-server`` is documented in docs/cli.md, which is
generated from the click trees (``python packaging/gen_cli_docs.py``) and must be up to date."""

from __future__ import annotations

import sys

import click
from support import REPO

sys.path.insert(0, str(REPO / "packaging"))

import gen_cli_docs

DOC = REPO / "docs" / "cli.md"


def test_every_command_has_a_section_in_docs_cli_md() -> None:
    paths = gen_cli_docs.command_paths()
    assert "dynadesk eval" in paths and "dynadesk data import" in paths and "dynadesk-server serve" in paths
    missing = gen_cli_docs.undocumented(DOC.read_text(encoding="utf-8"), paths)
    assert not missing, f"not in docs/cli.md (run python packaging/gen_cli_docs.py): {missing}"


def test_docs_cli_md_is_the_generated_text() -> None:
    assert DOC.read_text(encoding="utf-8") == gen_cli_docs.render(), \
        "docs/cli.md is stale: run python packaging/gen_cli_docs.py and commit the result"


def test_every_registered_group_is_in_the_tree() -> None:
    """The lazy group lists every entry of COMMANDS and each one imports (none hidden by a gate)."""
    from dynadesk.cli import COMMANDS, cli

    ctx = click.Context(cli, info_name="dynadesk")
    assert cli.list_commands(ctx) == sorted(COMMANDS)
    assert all(isinstance(cli.get_command(ctx, name), click.Command) for name in COMMANDS)


def test_a_new_subcommand_without_docs_is_caught() -> None:
    @click.group()
    def tool() -> None:
        """A tool."""

    @tool.command()
    def old() -> None:
        """Documented."""

    @tool.command()
    def new() -> None:
        """Not documented yet."""

    paths = [p for p, _, _ in gen_cli_docs.walk("tool", tool)]
    assert paths == ["tool", "tool new", "tool old"]
    doc = "## `tool`\n\n### `tool old`\n"
    assert gen_cli_docs.undocumented(doc, paths) == ["tool new"]


def test_readme_links_the_reference() -> None:
    assert "(docs/cli.md)" in (REPO / "README.md").read_text(encoding="utf-8")
