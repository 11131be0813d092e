"""The end-to-end demo, step by step, each step reusing what a previous run built."""

from __future__ import annotations

import time
from typing import Callable

from dynadesk.tasks import load_tasks

Echo = Callable[[str], None]


def _step(echo: Echo, title: str) -> float:
    echo("")
    echo(f"== {title}")
    return time.monotonic()


def show_tasks(echo: Echo) -> None:
    for t in load_tasks().values():
        out = ", ".join(t.labels) if t.labels else f"span of {t.span_of}"
        echo(f"  {t.name:<12} inputs: {', '.join(t.input_names):<20} output: {out:<36} metric: {t.metric}")


def show_default_datasets(store, names: list[str], echo: Echo) -> None:
    by_source: dict[str, list] = {}
    for n in names:
        d = store.datasets.get(n)
        by_source.setdefault(n.rsplit("-", 1)[0], []).append(d)
    for source, items in by_source.items():
        sizes = ", ".join(f"{d.split} {d.size}" for d in items)
        counts: dict[str, int] = {}
        for d in items:
            for k, v in d.label_counts.items():
                counts[k] = counts.get(k, 0) + v
        total = sum(d.size for d in items)
        labels = "  ".join(f"{k} {v}" for k, v in counts.items())
        echo(f"  {source:<14} {total:6d} examples ({sizes})   labels: {labels}")


def run_demo(workspace, store, runner: str = "auto", echo: Echo = print) -> None:
    from dynadesk.recipes import fetch_default_data

    t0 = time.monotonic()
    _step(echo, f"Workspace {workspace.home}")
    _step(echo, "Tasks")
    show_tasks(echo)
    _step(echo, "Bundled sentiment data (vaderSentiment 3.3.2 sdist from PyPI; Hutto & Gilbert 2014, MIT)")
    names = fetch_default_data(store, workspace.cache_dir, progress=lambda s: None)
    show_default_datasets(store, names, echo)
    echo("")
    echo(f"demo finished in {time.monotonic() - t0:.1f} s")
