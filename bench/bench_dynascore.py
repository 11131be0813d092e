"""Dynascore for 10,000 models x 10 datasets x 5 metrics on one core (goal: under 1 s).

Measures the public dict API (``compute``: per-dataset values in, ranked board out),
one query on a prebuilt :class:`ScoreBoard` (what the server and the app do per slider move or
request: re-weight, score every model, rows for one page) and the vectorised core as best CPU time
(other jobs on shared cores do not count),
against a straightforward pure-Python implementation run in the same process as the
baseline (its scores must agree to 1e-9, which also cross-checks the vectorised code). ``--quick`` uses 1,000 models.

    python bench/bench_dynascore.py [--quick]
"""

from __future__ import annotations

import os

for _var in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS"):
    os.environ.setdefault(_var, "1")  # one core, as the goal says

import argparse  # noqa: E402
import random  # noqa: E402
import time  # noqa: E402
from collections.abc import Callable  # noqa: E402
from typing import Any, TypeVar  # noqa: E402

import numpy as np  # noqa: E402

from dynadesk.scoring.board import ScoreBoard, Weighting, compute  # noqa: E402
from dynadesk.scoring.dynascore import MetricSpec, compute_arrays, default_metrics  # noqa: E402

T = TypeVar("T")
Models = dict[str, dict[str, dict[str, float]]]

GOAL_S = 1.0
METRICS = ["perf", "throughput", "memory", "robustness", "fairness"]


def make_models(n_models: int, n_datasets: int, seed: int = 0) -> Models:
    rng = random.Random(seed)
    ranges = {"perf": (30, 95), "throughput": (5, 3000), "memory": (0.2, 14),
              "robustness": (40, 100), "fairness": (40, 100)}
    return {f"model-{i:05d}": {k: {f"ds{d}": rng.uniform(*ranges[k]) for d in range(n_datasets)} for k in METRICS}
            for i in range(n_models)}


def naive(models: Models, specs: dict[str, MetricSpec]) -> dict[str, float]:
    """Pure-Python reference: same definition, no numpy."""
    names = sorted(models)
    avg = {m: {k: sum(v.values()) / len(v) for k, v in models[m].items()} for m in names}
    util = {m: {k: specs[k].direction * avg[m][k] + specs[k].offset for k in specs} for m in names}
    top = max(util[m]["perf"] for m in names)
    amrs = {"perf": 1.0}
    for k in specs:
        if k == "perf":
            continue
        order = sorted(names, key=lambda m: (util[m]["perf"], util[m][k]))
        ratios = []
        for a, b in zip(order, order[1:]):
            dp = util[b]["perf"] - util[a]["perf"]
            if dp > 1e-4 * abs(top):
                ratios.append(abs(util[b][k] - util[a][k]) / dp)
        amrs[k] = sum(ratios) / len(ratios)
    total = sum(s.weight for s in specs.values())
    return {m: sum(specs[k].weight / total * util[m][k] / amrs[k] for k in specs) for m in names}


def _best_of(fn: Callable[[], T], repeat: int) -> tuple[float, T]:
    """Best CPU time of ``repeat`` runs: process time, so other jobs sharing the cores do not count."""
    t0 = time.process_time()
    out = fn()
    best = time.process_time() - t0
    for _ in range(repeat - 1):
        t0 = time.process_time()
        out = fn()
        best = min(best, time.process_time() - t0)
    return best, out


def run(quick: bool = False) -> list[dict[str, Any]]:
    n_models, n_datasets = (1_000 if quick else 10_000), 10
    models = make_models(n_models, n_datasets)
    specs = default_metrics()
    t_api, result = _best_of(lambda: compute(models, specs), 3)
    values = np.array([[[models[m][k][f"ds{d}"] for k in METRICS] for d in range(n_datasets)]
                       for m in sorted(models)])
    args = (np.array([specs[k].direction for k in METRICS]), np.array([specs[k].offset for k in METRICS]),
            np.array([specs[k].weight for k in METRICS]), 0)
    t_core, _ = _best_of(lambda: compute_arrays(values.mean(axis=1), *args), 5)
    board = ScoreBoard(models, METRICS)
    weights = {"ds0": 2.0, "ds3": 0.5}
    t_query, page = _best_of(lambda: board.score(weighting=Weighting({"memory": 2.0}, weights), limit=100), 5)
    if page.total != n_models or len(page.page()) != 100:
        raise AssertionError("the board query did not score every model")
    t_naive, ref = _best_of(lambda: naive(models, specs), 1)
    worst = max(abs(result.model(m).dynascore - ref[m]) for m in ref)
    if worst > 1e-9:
        raise AssertionError(f"vectorised and reference Dynascores differ by {worst:g}")
    size = f"{n_models:,} models x {n_datasets} datasets x {len(METRICS)} metrics"
    return [
        {"measure": f"dynascore compute() ({size})", "value": t_api, "unit": "CPU s", "goal": f"< {GOAL_S:g} s",
         "baseline": f"pure Python {t_naive:.2f} s", "ratio": t_naive / t_api, "ok": t_api < GOAL_S},
        {"measure": f"board query on a prebuilt ScoreBoard, 100-row page ({size})", "value": t_query,
         "unit": "CPU s", "goal": "-", "baseline": f"pure Python {t_naive:.2f} s", "ratio": t_naive / t_query,
         "ok": None},
        {"measure": f"dynascore numpy core ({size})", "value": t_core, "unit": "CPU s", "goal": "-",
         "baseline": f"pure Python {t_naive:.2f} s", "ratio": t_naive / t_core, "ok": None},
    ]


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--quick", action="store_true", help="1,000 models instead of 10,000")
    rows = run(quick=ap.parse_args().quick)
    print("measure | value | goal | baseline ratio")
    for r in rows:
        ok = {True: "ok", False: "MISSED", None: ""}[r["ok"]]
        print(f"{r['measure']} | {r['value']:.3f} {r['unit']} | {r['goal']} {ok} | "
              f"{r['baseline']} (x{r['ratio']:.1f})")


if __name__ == "__main__":
    main()
