"""Shared CLI plumbing: the lazily opened workspace, JSON output, progress."""

from __future__ import annotations

import json
import os
import shutil
import textwrap
from collections.abc import Callable, Iterable, Sequence
from pathlib import Path
from typing import Any

import click

from dynadesk.store import Store
from dynadesk.task_sources import register_task_source, unregister_task_source
from dynadesk.texttable import table_lines
from dynadesk.workspace import Workspace, resolve_home


class AppContext:
    current_home: Path | None = None  # the last command's workspace, named by errors that reach ``main``

    def __init__(self, home: str | None):
        self.workspace = Workspace(resolve_home(home))
        AppContext.current_home = self.workspace.home
        self._store: Store | None = None
        # any task lookup during the command sees this workspace's own tasks (opening the store then)
        register_task_source(self._source_key, lambda: self.store.tasks.all())

    @property
    def _source_key(self) -> str:
        return f"cli#{id(self)}"

    @property
    def store(self) -> Store:
        if self._store is None:
            self._store = self.workspace.open_store()
        return self._store

    def close(self) -> None:
        """End of the command: its workspace stops being a task source; the store closes."""
        unregister_task_source(self._source_key)
        if self._store is not None:
            self._store.close()
            self._store = None


pass_app = click.make_pass_decorator(AppContext)

json_option = click.option("--json", "as_json", is_flag=True, help="Print machine-readable JSON.")


def echo_json(obj: Any) -> None:
    click.echo(json.dumps(obj, indent=2, ensure_ascii=False, default=str))


def echo_table(headers: list[str], rows: list[list[Any]]) -> None:
    """A plain aligned text table (:func:`dynadesk.texttable.table_lines`)."""
    for line in table_lines(headers, rows):
        click.echo(line)


FALLBACK_WIDTH = 120  # columns when stdout is no terminal and COLUMNS is unset (a pipe, a file, a test)
MIN_WIDTH = 40


def terminal_width() -> int:
    """The terminal's columns (``COLUMNS`` first, as :func:`shutil.get_terminal_size` reads it), never under
    :data:`MIN_WIDTH`: tables fit it and long notes wrap to it."""
    return max(MIN_WIDTH, shutil.get_terminal_size((FALLBACK_WIDTH, 24)).columns)


def echo_wrapped(text: str, width: int | None = None, indent: str = "  ") -> None:
    """``text`` wrapped to ``width`` (default the terminal's), continuation lines indented; words are never cut
    unless one alone is wider than the line (a long path or digest is then split, not dropped)."""
    for line in textwrap.wrap(text, width or terminal_width(), subsequent_indent=indent, break_on_hyphens=False) \
            or [""]:
        click.echo(line)


PASSPHRASE_ENV = "DYNADESK_KEY_PASSPHRASE"


def key_passphrase(prompt: bool, confirm: bool = False) -> str | None:
    """The key passphrase: from the environment, else prompted when the key is protected, else None."""
    env = os.environ.get(PASSPHRASE_ENV)
    if env:
        return env
    if prompt:
        return click.prompt("Key passphrase", hide_input=True, confirmation_prompt=confirm)
    return None


class RegistryHelpOption(click.Option):
    """An option whose help is read from a registry each time it is shown (``help_from``), as
    :class:`RegistryChoice` reads its choices: a help string computed at import would keep the entries registered
    then, and show a removed one (a test's toy runner) in every later ``--help`` of that process."""

    def __init__(self, *args: Any, help_from: Callable[[], str], **kwargs: Any) -> None:
        self._help_from = help_from
        super().__init__(*args, **kwargs)

    def get_help_record(self, ctx: click.Context) -> tuple[str, str] | None:
        self.help = self._help_from()
        return super().get_help_record(ctx)


class RegistryChoice(click.Choice[str]):
    """A ``click.Choice`` over a registry (runners, data formats), read each time the option is parsed or its help
    shown, so an entry registered after this module was imported is offered too."""

    def __init__(self, names: Callable[[], Iterable[str]], extra: Sequence[str] = ()) -> None:
        self._names = names
        self._extra = tuple(extra)
        super().__init__(())

    @property  # click.Choice keeps a fixed tuple; this one reads the registry
    def choices(self) -> tuple[str, ...]:
        return (*self._extra, *self._names())

    @choices.setter
    def choices(self, _value: Any) -> None:
        """click.Choice.__init__ assigns the tuple; the registry stays the source."""
