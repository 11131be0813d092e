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
    echo_table(["rank", "model", "dynascore", *names],
               [[m.rank, m.name, _fmt(m.dynascore), *(_fmt(m.converted[k]) for k in names)] for m in result.models])
    click.echo("AMRS: " + ", ".join(f"{k}={_fmt(v, 6)}" for k, v in result.amrs.items()))
    click.echo("weights: " + ", ".join(f"{k}={v:.4f}" for k, v in result.weights.items()))
    for model, why in result.left_off.items():
        click.echo(f"left off: {model}: {why}")
    for note in result.notes:
        click.echo(f"note: {note}")
