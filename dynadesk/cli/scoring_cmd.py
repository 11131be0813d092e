"""``dynadesk dynascore``, ``dynadesk leaderboard`` and ``dynadesk perturb``: thin wrappers."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import click

from dynadesk.cli.common import echo_json, echo_table, json_option, pass_app
from dynadesk.errors import ValidationError


def _fmt(x: float | None, digits: int = 4) -> str:
    return "-" if x is None else f"{x:.{digits}f}"


@click.command()
@click.argument("file", type=click.Path(dir_okay=False, allow_dash=True))
@json_option
def dynascore(file: str, as_json: bool) -> None:
    """Compute the Dynascore of a table of models in FILE.json ('-' reads stdin).

    FILE holds {"perf_metric": "perf", "metrics": {name: {"direction", "offset",
    "weight"}}, "models": {model: {metric: value or {dataset: value}}}}.
    """
    from dynadesk.scoring.dynascore import from_document

    try:
        text = sys.stdin.read() if file == "-" else Path(file).read_text(encoding="utf-8")
        doc = json.loads(text)
    except OSError as exc:
        raise ValidationError(f"{file}: cannot read: {exc}") from exc
    except (json.JSONDecodeError, UnicodeDecodeError) as exc:
        raise ValidationError(f"{file}: not valid JSON: {exc}") from exc
    try:
        result = from_document(doc)
    except ValidationError as exc:
        raise ValidationError(f"{file}: {exc}") from exc
    if as_json:
        echo_json(result.to_dict())
        return
    names = list(result.metrics)
    click.echo("converted values (performance units):")
    echo_table(["rank", "model", "dynascore", *names],
               [[m.rank, m.name, _fmt(m.dynascore), *(_fmt(m.converted[k]) for k in names)] for m in result.models])
    click.echo("AMRS: " + ", ".join(f"{k}={_fmt(v, 6)}" for k, v in result.amrs.items()))
    click.echo("weights: " + ", ".join(f"{k}={v:.4f}" for k, v in result.weights.items()))
    for model, why in result.left_off.items():
        click.echo(f"left off: {model}: {why}")
    for note in result.notes:
        click.echo(f"note: {note}")


@click.command()
@click.argument("task")
@click.option("--weight", "weights", multiple=True, metavar="METRIC=W",
              help="Metric weight (repeatable; default perf=4, others 1).")
@click.option("--dataset-weight", "dataset_weights", multiple=True, metavar="DATASET=W",
              help="Dataset weight (repeatable; default 1 each, normalised).")
@click.option("--memory-budget", type=float, default=16.0, show_default=True,
              help="GiB; memory counts as memory saved below this budget.")
@click.option("--stability", is_flag=True, help="Also show each model's rank range when each weight varies over 0-5.")
@click.option("--csv", "as_csv", is_flag=True, help="Print CSV.")
@json_option
@pass_app
def leaderboard(app, task, weights, dataset_weights, memory_budget, stability, as_csv, as_json) -> None:
    """Rank the latest evaluation of every model of TASK by Dynascore."""
    from dynadesk.scoring.leaderboard import build_leaderboard, parse_weights

    if as_csv and as_json:
        raise click.UsageError("choose one of --json and --csv")
    board = build_leaderboard(app.store, task, parse_weights(weights, "--weight"),
                              parse_weights(dataset_weights, "--dataset-weight"), memory_budget, stability)
    if as_json:
        echo_json(board.to_dict())
        return
    if as_csv:
        click.echo(board.to_csv(), nl=False)
        return
    shown = board.shown_metrics  # the Dynascore metrics, then every other stored metric
    headers = ["rank", "model", "dynascore", *(f"{m} ({board.units[m]})" if board.units.get(m) else m for m in shown)]
    if stability:
        headers.append("rank range (weights 0-5)")
    rows = []
    for r in board.rows:
        row = [r.rank, r.model, _fmt(r.dynascore, 2), *(_fmt(r.values.get(m), 2) for m in shown)]
        if stability:
            s = r.stability or {}
            row.append(f"{s['min_rank']}-{s['max_rank']}" if s["min_rank"] != s["max_rank"] else str(s["min_rank"]))
        rows.append(row)
    if not rows and not board.left_off:
        click.echo(f"no succeeded evaluations for task '{task}' yet (run 'dynadesk eval')")
        return
    echo_table(headers, rows)
    click.echo("weights: " + ", ".join(f"{k}={v:.3f}" for k, v in board.weights.items()))
    for model, why in board.left_off.items():
        click.echo(f"left off: {model}: {why}")
    for note in board.notes:
        click.echo(f"note: {note}")


@click.command()
@click.argument("dataset")
@click.option("--suite", "suites", multiple=True, metavar="SUITE",
              help="Suite to generate (repeatable; default: the task's suites). "
                   "Robustness: typos misspellings case punctuation whitespace contractions homoglyphs; "
                   "fairness: gender_words gender_names ethnic_names.")
@click.option("--seed", type=click.IntRange(min=0), default=0, show_default=True)
@click.option("--replace", is_flag=True, help="Regenerate a derived dataset whose content differs.")
@json_option
@pass_app
def perturb(app, dataset, suites, seed, replace, as_json) -> None:
    """Generate the robustness and fairness suites of DATASET as derived datasets."""
    from dynadesk.scoring.perturb import generate_suites, task_suites
    from dynadesk.tasks import get_task

    n = len(set(suites)) if suites else len(task_suites(get_task(app.store.datasets.get(dataset).task)))
    with click.progressbar(length=n, label="perturbing", file=sys.stderr, show_pos=True,
                           item_show_func=lambda s: s or "") as bar:
        def step(suite: str) -> None:
            bar.update(1, suite)

        results = generate_suites(app.store, dataset, suites or None, seed, replace, progress=step)
    if as_json:
        echo_json([r.to_dict() for r in results])
        return
    echo_table(["suite", "kind", "dataset", "status", "size", "dropped", "digest"],
               [[r.suite, r.kind, r.name, r.status, r.size, r.dropped, (r.digest or "-")[:19]] for r in results])
