"""``dynadesk dynascore``, ``dynadesk leaderboard`` and ``dynadesk perturb``: thin wrappers."""

from __future__ import annotations

import json
import sys
from typing import Any

import click

from dynadesk.cli.common import (
    FALLBACK_WIDTH,
    echo_json,
    echo_table,
    echo_wrapped,
    json_option,
    pass_app,
    terminal_width,
)
from dynadesk.errors import ValidationError
from dynadesk.jsonio import MAX_FILE_BYTES, loads_bounded, read_text_capped


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
    from dynadesk.scoring.board import from_document

    try:
        text = sys.stdin.read(MAX_FILE_BYTES + 1) if file == "-" else read_text_capped(file, what="table")
        if len(text) > MAX_FILE_BYTES:
            raise ValidationError(f"{file}: table over the {MAX_FILE_BYTES:,}-byte limit; refused unread")
        doc = loads_bounded(text, file)
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


SUITE_SET_TITLES = {"dynadesk": "dynadesk (DynaDesk's suites)",
                    "dynaboard-augly": "dynaboard-augly (the reference's AugLy families)"}
TABLE_WIDTH = FALLBACK_WIDTH  # the default table fits the terminal; these many columns without one
_MIN_MODEL_WIDTH = 12


def _num(x: float | None) -> str:
    """A board cell: two decimals, none from 1000 up (throughput in the hundred thousands stays narrow)."""
    if x is None:
        return "-"
    return f"{x:.0f}" if abs(x) >= 1000 else f"{x:.2f}"


def _width(headers: list[str], rows: list[list[str]]) -> int:
    return sum(max(len(c) for c in col) for col in zip(headers, *rows)) + 2 * (len(headers) - 1)


def _elide(text: str, width: int) -> str:
    return text if len(text) <= width else text[:width - 1] + "…"


def fit_table(headers: list[str], rows: list[list[str]], width: int = TABLE_WIDTH,
              model_col: int = 1, keep: int = 3) -> tuple[list[str], list[list[str]], list[str]]:
    """Drop trailing columns (never the first ``keep``) until the table fits ``width``; only then elide model
    names, as far as needed and never under 12 characters: a reader identifies a row by its name, and a dropped
    column is named below the table (``--wide`` shows it), an elided name is not recoverable (issue 47).

    Returns the headers and rows shown and the headers left out.
    """
    headers, rows = list(headers), [list(r) for r in rows]
    dropped: list[str] = []
    while _width(headers, rows) > width and len(headers) > keep:
        dropped.insert(0, headers.pop())
        rows = [r[:-1] for r in rows]
    over = _width(headers, rows) - width
    longest = max((len(r[model_col]) for r in rows), default=0)
    if over > 0 and longest > _MIN_MODEL_WIDTH:
        target = max(_MIN_MODEL_WIDTH, longest - over, len(headers[model_col]))
        rows = [[*r[:model_col], _elide(r[model_col], target), *r[model_col + 1:]] for r in rows]
    return headers, rows, dropped


def echo_intervals(board: Any) -> None:
    """The rows' 95% bootstrap intervals of the task metric per dataset, and what 'tied' means."""
    lines = [f"  {r.model}: " + "; ".join(f"{ds} [{iv['low']:.2f}, {iv['high']:.2f}]"
                                          for ds, iv in sorted(r.intervals.items()))
             for r in board.rows if r.intervals]
    if lines:
        first = next(iv for r in board.rows for iv in r.intervals.values())
        echo_wrapped(f"{first['metric']} {first['level']:g}% intervals ({first['resamples']} seeded bootstrap "
                     "resamples of the examples):")
        for line in lines:
            echo_wrapped(line, indent="    ")
    if any(r.paired_next for r in board.rows):
        echo_wrapped("tied with next: no dataset shows a significant difference from the next row (paired bootstrap, "
                     "95% interval of the difference contains 0); rank 95%: the rank over resampled examples, "
                     "measured metrics held fixed")


@click.command()
@click.argument("task")
@click.option("--weight", "weights", multiple=True, metavar="METRIC=W",
              help="Metric weight (repeatable; default perf=4, others 1).")
@click.option("--dataset-weight", "dataset_weights", multiple=True, metavar="DATASET=W",
              help="Dataset weight (repeatable; default 1 each, normalised).")
@click.option("--memory-budget", type=float, default=16.0, show_default=True,
              help="GiB; memory counts as memory saved below this budget.")
@click.option("--stability", is_flag=True, help="Also show each model's rank range when each weight varies over 0-5.")
@click.option("--wide", is_flag=True, help=f"Show every stored metric (default: the Dynascore metrics, fitting "
                                           f"the terminal's width, {TABLE_WIDTH} columns without a terminal).")
@click.option("--hardware-class", "hardware_class", default=None, metavar="CLASS|all",
              help="Rank the runs of this hardware class (default: the class with the most models; 'all': every "
                   "run, measured metrics then not comparable). The classes present are listed.")
@click.option("--amrs", "amrs_mode", type=click.Choice(["dynaboard", "robust"]), default="dynaboard",
              show_default=True,
              help="robust: leave a metric whose exchange rate rests on noise unconverted (a deviation from "
                   "Dynaboard; docs/board.md).")
@click.option("--exclude-noisy", is_flag=True,
              help="Rank without runs whose measured figures were flagged noisy (they are marked '*' otherwise).")
@click.option("--rates", "rates_board", metavar="BOARD",
              help="Score with a leaderboard's rate edition (a server URL or a saved edition file; its signature is"
                   " checked against the board's server key): each run then shows the Dynascore that board shows"
                   " for it. Default: Dynaboard's rule, rates from the runs ranked.")
@click.option("--csv", "as_csv", is_flag=True, help="Print CSV.")
@json_option
@pass_app
def leaderboard(app: Any, task: str, weights: tuple[str, ...], dataset_weights: tuple[str, ...],
                memory_budget: float, stability: bool, wide: bool, hardware_class: str | None, amrs_mode: str,
                exclude_noisy: bool, rates_board: str | None, as_csv: bool, as_json: bool) -> None:
    """Rank the latest evaluation of every model of TASK by Dynascore."""
    from dynadesk.scoring.answerability import beside
    from dynadesk.scoring.board import Weighting
    from dynadesk.scoring.leaderboard import COVERAGE_LEGEND, build_leaderboard, parse_weights

    if as_csv and as_json:
        raise click.UsageError("choose one of --json and --csv")
    rates, rates_from = None, None
    if rates_board:
        from dynadesk.sync.client.upload import load_rate_edition

        edition, rates_from = load_rate_edition(app.store, rates_board, task)
        rates = edition.amrs
    weighting = Weighting(parse_weights(weights, "--weight"), parse_weights(dataset_weights, "--dataset-weight"),
                          memory_budget, amrs_mode, rates)
    board = build_leaderboard(app.store, task, weighting, stability=stability, hardware_class=hardware_class,
                              exclude_noisy=exclude_noisy, rates_from=rates_from)
    if rates_board:
        board.notes += edition.notes()  # what the public board says of the same edition (sync.format.rate_edition)
    if as_json:
        echo_json(board.to_dict())
        return
    if as_csv:
        click.echo(board.to_csv(), nl=False)
        return
    if not board.rows and not board.left_off:
        click.echo(f"no succeeded evaluations for task '{task}' yet (run 'dynadesk eval')")
        return
    shown = board.shown_metrics if wide else list(board.metrics)  # every stored metric, or the scored ones
    # --wide: units in the headers; by default in one line below the table (narrower columns)
    headers = ["rank", "model", "dynascore", *(f"{m} ({board.units[m]})" if wide and board.units.get(m) else m
                                               for m in shown)]
    if stability:
        headers.insert(3, "rank range")
    rows = []
    paired = any(r.paired_next for r in board.rows)
    for r in board.rows:
        row = [str(r.rank), r.model + (" *" if r.noisy else ""), _fmt(r.dynascore, 2),
               *(beside(r.with_coverage(m, _num(r.values.get(m))), r.values) if m == "perf"
                 else r.with_coverage(m, _num(r.values.get(m))) for m in shown)]
        if stability:
            s = r.stability or {}
            lo, hi = s.get("min_rank", r.rank), s.get("max_rank", r.rank)
            row.insert(3, f"{lo}-{hi}" if lo != hi else str(lo))
        if paired:
            lo, hi = r.rank_interval or [r.rank, r.rank]
            row[3:3] = [f"{lo}-{hi}" if lo != hi else str(lo), f"= {r.tied_with}" if r.tied_with else ""]
        rows.append(row)
    for r in board.baselines:  # unranked (scoring.baselines): after the ranked rows, rank column 'baseline'
        trivial = set((r.baseline or {}).get("trivial") or ())
        row = ["baseline", r.model + (" *" if r.noisy else ""), _fmt(r.dynascore, 2),
               *(r.with_coverage(m, _num(r.values.get(m))) + (" trivial" if m in trivial else "") for m in shown)]
        row[3:3] = [""] * ((1 if stability else 0) + (2 if paired else 0))
        rows.append(row)
    if paired:  # runs stored with per-example outcomes (dynadesk.scoring.bootstrap)
        headers[3:3] = ["rank 95%", "tied with next"]
    left_out: list[str] = []
    width = terminal_width()
    if not wide:
        headers, rows, left_out = fit_table(headers, rows, width)
    echo_table(headers, [list(r) for r in rows])
    if not wide:
        echo_wrapped("units: dynascore points, " + ", ".join(f"{m} {board.units[m]}" for m in shown
                                                            if board.units.get(m)))
    echo_wrapped("weights: " + ", ".join(f"{k}={v:.3f}" for k, v in board.weights.items()))
    echo_wrapped(f"exchange rates: {board.rates}")
    echo_wrapped(f"hardware class: {board.hardware_class}"
                 + (f" (classes present: {'; '.join(f'{c} [{n} model(s)]' for c, n in board.hardware_classes.items())})"
                    if len(board.hardware_classes) > 1 else ""))
    if stability:
        echo_wrapped("rank range: best-worst rank as each weight varies over 0-5")
    if any(r.coverage() for r in board.rows):
        echo_wrapped(COVERAGE_LEGEND)
    echo_intervals(board)
    if left_out:
        echo_wrapped(f"not shown to fit {width} columns: {', '.join(left_out)} (--wide shows them)")
    if not wide and len(board.shown_metrics) > len(board.metrics):
        echo_wrapped(f"{len(board.shown_metrics) - len(board.metrics)} more stored metric(s): --wide, --csv or --json")
    for line in board.row_notes("--exclude-noisy"):
        echo_wrapped(line)
    sets = {", ".join(r.robustness_suites) for r in board.rows if r.robustness_suites}
    if sets:
        echo_wrapped("robustness suites: " + "; ".join(
            f"{r.model} {', '.join(SUITE_SET_TITLES.get(s, s) for s in r.robustness_suites)}"
            for r in board.rows if r.robustness_suites))
    for note in board.notes:
        echo_wrapped(f"note: {note}")


@click.command()
@click.argument("dataset")
@click.option("--suite", "suites", multiple=True, metavar="SUITE",
              help="Suite to generate (repeatable; default: the task's suites). "
                   "Robustness: case contractions punctuation whitespace zero_width homoglyphs typos char_typos "
                   "misspellings split_words; "
                   "fairness: gender ethnic_names.")
@click.option("--suite-set", "suite_set", type=click.Choice(["dynadesk", "dynaboard-augly"]), default=None,
              help="dynaboard-augly: the reference's AugLy robustness families (docs/perturbations.md), opt-in; "
                   "default: DynaDesk's suites.")
@click.option("--seed", type=click.IntRange(min=0), default=0, show_default=True)
@click.option("--replace", is_flag=True, help="Regenerate a derived dataset whose content differs.")
@click.option("--sample", type=click.IntRange(min=1), default=None,
              help="Perturb a seeded sample of this many examples of DATASET (docs/perturbations.md "
                   "\"Sized suites\"; what 'dynadesk demo' uses); default: every example.")
@json_option
@pass_app
def perturb(app, dataset, suites, suite_set, seed, replace, sample, as_json) -> None:
    """Generate the robustness and fairness suites of DATASET as derived datasets."""
    from dynadesk.scoring.perturb import SUITE_SETS, generate_suites, task_suites
    from dynadesk.tasks import get_task

    task = get_task(app.store.datasets.get(dataset).task)
    n = len(set(suites)) if suites else (len(SUITE_SETS[suite_set]) + len(task.fairness_suites)
                                         if suite_set == "dynaboard-augly" else len(task_suites(task)))
    with click.progressbar(length=n, label="perturbing", file=sys.stderr, show_pos=True,
                           item_show_func=lambda s: s or "") as bar:
        def step(suite: str) -> None:
            bar.update(1, suite)

        results = generate_suites(app.store, dataset, suites or None, seed, replace, progress=step,
                                  suite_set=suite_set, sample=sample)
    if as_json:
        echo_json([r.to_dict() for r in results])
        return
    echo_table(["suite", "kind", "dataset", "status", "size", "dropped", "digest"],
               [[r.suite, r.kind, r.name, r.status, r.size, r.dropped, (r.digest or "-")[:19]] for r in results])
