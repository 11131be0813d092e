"""``dynadesk tasks``."""

from __future__ import annotations

import click

from dynadesk.cli.common import echo_json, echo_table, json_option
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
    if as_json:
        echo_json(t.to_dict())
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
