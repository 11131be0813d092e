"""``dynadesk tasks``."""

from __future__ import annotations

from typing import Any

import click

from dynadesk.cli.common import echo_json, echo_table, json_option
from dynadesk.formats import FORMATS
from dynadesk.formats.schema import file_schema
from dynadesk.tasks import get_task, load_tasks


@click.group()
def tasks() -> None:
    """The task definitions (NLI, sentiment, hate speech, QA)."""


@tasks.command("list")
@json_option
def list_tasks(as_json: bool) -> None:
    """List every task with its inputs, labels and metric."""
    all_tasks = load_tasks()
    if as_json:
        echo_json([t.to_dict() for t in all_tasks.values()])
        return
    echo_table(["task", "inputs", "output", "metric"], [
        [t.name, ", ".join(t.input_names), ", ".join(t.labels) if t.labels else f"span of {t.span_of}", t.metric]
        for t in all_tasks.values()])


@tasks.command("show")
@click.argument("name")
@json_option
def show_task(name: str, as_json: bool) -> None:
    """Show one task in full."""
    t = get_task(name)
    schema = file_schema(t)
    if as_json:
        echo_json({**t.to_dict(), "file_schema": schema})
        return
    click.echo(f"{t.name}: {t.title}\n  {t.description}")
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
