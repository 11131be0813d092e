"""``make bench``: run every benchmark in bench/ and print one table.

Each ``bench/bench_<area>.py`` exposes ``run(quick: bool) -> list[dict]`` whose rows
have: ``measure``, ``value`` (number), ``unit``, ``goal`` (text such as "<= 30 ms"),
``baseline`` (text, the side-by-side comparison measured in the same run) and
``ratio`` (number or None), and ``ok`` (bool or None when there is no goal).
"""

from __future__ import annotations

import argparse
import importlib.util
import json
import os
import resource
import sys
import time
import traceback
from pathlib import Path

HERE = Path(__file__).resolve().parent
os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")
os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")


def load(path: Path):
    spec = importlib.util.spec_from_file_location(path.stem, path)
    mod = importlib.util.module_from_spec(spec)
    sys.modules[path.stem] = mod
    spec.loader.exec_module(mod)
    return mod


def _cpu_seconds() -> float:
    """CPU seconds of this process and its reaped children: what a benchmark costs a shared machine (a server or a
    worker it starts counts once it has exited)."""
    me, kids = resource.getrusage(resource.RUSAGE_SELF), resource.getrusage(resource.RUSAGE_CHILDREN)
    return me.ru_utime + me.ru_stime + kids.ru_utime + kids.ru_stime


def _smoke_torch() -> None:
    """The suite's smoke run (``DYNADESK_BENCH_SMOKE``, beside the parallel phase's other workers) loads torch here
    as the suite's workers do (tests/conftest.py): passive OpenMP waiting, threads for the cores free. Its figures
    mean nothing; beside three busy loops its in-process benchmarks (eval, loadgen, backend, models, threads) took
    133.7 and 133.7 s under torch's default, 129.4 and 123.2 s so (alternated). A benchmark's own children choose
    their own, and ``make bench`` is unchanged: the process loads torch where its first benchmark does."""
    from dynadesk.evaluator.threads import load_torch

    load_torch(others_beside=True)


def fmt(v) -> str:
    if v is None:
        return "-"
    if isinstance(v, float):
        return f"{v:.3g}" if abs(v) < 1000 else f"{v:,.0f}"
    return str(v)


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--quick", action="store_true", help="small sizes: proves every benchmark still runs")
    ap.add_argument("--only", action="append", default=[], help="run only bench_<NAME>.py (repeatable)")
    ap.add_argument("--json", dest="json_out", help="also write the rows to this JSON file")
    args = ap.parse_args(argv)
    if os.environ.get("DYNADESK_BENCH_SMOKE"):
        _smoke_torch()
    rows, failures = [], []
    for path in sorted(HERE.glob("bench_*.py")):
        name = path.stem.removeprefix("bench_")
        if args.only and name not in args.only:
            continue
        t0, cpu0 = time.monotonic(), _cpu_seconds()
        module = load(path)
        if args.quick and getattr(module, "FULL_ONLY", False):  # e.g. the demo's first run: minutes by definition
            print(f"{path.name}: full runs only (make bench), left out of --quick", file=sys.stderr, flush=True)
            continue
        print(f"running {path.name} ...", file=sys.stderr, flush=True)
        try:
            for row in module.run(quick=args.quick):
                rows.append({"bench": name, **row})
        except Exception as exc:  # noqa: BLE001 - one failing bench must not hide the others
            traceback.print_exc()
            failures.append(name)
            rows.append({"bench": name, "measure": "FAILED", "value": None, "unit": "", "goal": "",
                         "baseline": f"{type(exc).__name__}: {exc}"[:80], "ratio": None, "ok": False})
        print(f"  {path.name}: {time.monotonic() - t0:.1f} s, {_cpu_seconds() - cpu0:.1f} CPU-s", file=sys.stderr,
              flush=True)
    headers = ["bench", "measure", "value", "unit", "goal", "baseline (same run)", "ratio", "ok"]
    table = [[r["bench"], r["measure"], fmt(r.get("value")), r.get("unit", ""), r.get("goal", ""),
              r.get("baseline", ""), fmt(r.get("ratio")), {True: "yes", False: "NO", None: "-"}[r.get("ok")]]
             for r in rows]
    widths = [max(len(str(x)) for x in col) for col in zip(headers, *table)]
    line = lambda cells: " | ".join(str(c).ljust(w) for c, w in zip(cells, widths))  # noqa: E731
    print(line(headers))
    print("-+-".join("-" * w for w in widths))
    for r in table:
        print(line(r))
    if args.json_out:
        Path(args.json_out).write_text(json.dumps(rows, indent=2))
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
