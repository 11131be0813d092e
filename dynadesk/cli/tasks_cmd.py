"""``dynadesk tasks``."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import click

from dynadesk.cli.common import AppContext, echo_json, echo_table, json_option, pass_app
from dynadesk.formats import FORMATS
from dynadesk.formats.schema import file_schema
from dynadesk.taskfile_guard import read_task_text
from dynadesk.tasks import bundled_task_names, get_task, load_tasks, parse_task_text, task_digest


@click.group()
def tasks() -> None:
    """The task definitions: the bundled four (NLI, sentiment, hate speech, QA) and the workspace's own."""


@tasks.command("list")
@json_option
def list_tasks(as_json: bool) -> None:
    """List every task with its inputs, labels, metric and where it is defined."""
    all_tasks = load_tasks()
    bundled = bundled_task_names()
    if as_json:
        echo_json([{**t.to_dict(), "digest": task_digest(t), "defined": "bundled" if t.name in bundled
                    else "workspace"} for t in all_tasks.values()])
        return
    echo_table(["task", "inputs", "output", "metric", "defined"], [
        [t.name, ", ".join(t.input_names), ", ".join(t.labels) if t.labels else f"span of {t.span_of}", t.metric,
         "bundled" if t.name in bundled else "workspace"]
        for t in all_tasks.values()])


@tasks.command("add")
@click.argument("path", type=click.Path(exists=True, dir_okay=False, path_type=Path))
@json_option
@pass_app
def add_task(app: AppContext, path: Path, as_json: bool) -> None:
    """Validate a task file and store it in the workspace (refused whole on any problem)."""
    text = read_task_text(path)  # refused unread over the size cap
    task = parse_task_text(text, str(path))
    row = app.store.tasks.add(task, text)
    if as_json:
        echo_json({"name": task.name, "digest": row.digest})
        return
    click.echo(f"added task '{task.name}' ({row.digest})")


@tasks.command("remove")
@click.argument("name")
@pass_app
def remove_task(app: AppContext, name: str) -> None:
    """Remove a workspace task; refused while datasets, rounds, models or runs use it."""
    app.store.tasks.remove(name)
    click.echo(f"removed task '{name}'")


@tasks.command("show")
@click.argument("name")
@json_option
def show_task(name: str, as_json: bool) -> None:
    """Show one task in full, with its canonical digest."""
    t = get_task(name)
    schema = file_schema(t)
    digest = task_digest(t)
    if as_json:
        echo_json({**t.to_dict(), "digest": digest, "file_schema": schema})
        return
    click.echo(f"{t.name}: {t.title}\n  {t.description}")
    click.echo(f"  digest {digest}")
    for f in t.inputs:
        click.echo(f"  input  {f.name}{' (context)' if f.is_context else ''}: {f.description}")
    click.echo(f"  output {', '.join(t.labels) if t.labels else 'span of ' + str(t.span_of)}")
    click.echo(f"  metric {t.metric}" + (f" (+ {', '.join(t.secondary_metrics)})" if t.secondary_metrics else ""))
    rule = t.fooled_rule
    click.echo(f"  fooled when {rule.kind}" + (f" < {rule.threshold}" if rule.threshold is not None else ""))
    click.echo(f"  robustness suites: {', '.join(t.robustness_suites)}")
    click.echo(f"  fairness suites: {', '.join(t.fairness_suites)}")
    click.echo(f"  validation votes needed: {t.votes_needed}")
    _echo_schema(schema)


def _echo_schema(schema: dict[str, Any]) -> None:
    """The data file schema: what ``dynadesk data import`` reads for this task."""
    click.echo("\nfile schema (dynadesk data import; formats: " + ", ".join(FORMATS) + ")")
    echo_table(["field", "type", "required", "aliases", "description"], [
        [f["name"], f["type"], "yes" if f["required"] else "no", ", ".join(f["aliases"]) or "-", f["description"]]
        for f in schema["fields"]])
    if schema["labels"]:
        click.echo(f"labels: {', '.join(schema['labels'])}")
    if schema["label_aliases"]:
        click.echo("label aliases: " + ", ".join(f"{k} -> {v}" for k, v in schema["label_aliases"].items()))
    if schema["integer_labels"]:
        click.echo("integer labels: " + ", ".join(f"{k} -> {v}" for k, v in schema["integer_labels"].items()))
    click.echo("other names: --map TASK_FIELD=SOURCE_FIELD; other labels: --label-map SOURCE=TARGET")
