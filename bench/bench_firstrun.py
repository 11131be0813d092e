"""A newcomer's first contact (issue 39): the demo's first run and the whole test suite, in wall time.

Both take minutes by definition, so this benchmark runs in full ``make bench`` only (``run_all.py --quick``
names it and leaves it out). The demo runs in a fresh temporary workspace through :func:`dynadesk.demo.run_demo`
(the same steps ``make demo`` runs: the zoo really trained, every model evaluated in the sandbox when a Docker
daemon answers, the audit really re-run); its per-step wall and CPU seconds are the demo's own
(:class:`dynadesk.demo.StepTime`). The suite is ``pytest -q`` as ``make test`` runs it. Their baselines are the
figures before issue 39 on a quiet 2-core machine (docs/performance-history.md "The demo's first run"): they
cannot be measured side by side, since the old code is gone; the load average is printed with each row so a
loaded machine shows.

    python bench/bench_firstrun.py [--only demo|suite]
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
FULL_ONLY = True  # run_all.py --quick leaves this benchmark out and says so
DEMO_GOAL_S = 6 * 60  # issue 50, item 5: the first run on a fresh home in 6 minutes, quiet (15 before)
DEMO_BEFORE_S = 21 * 60 + 16
SUITE_GOAL_S = 20 * 60
SUITE_BEFORE_S = 25 * 60


def _load() -> str:
    return "load " + " ".join(f"{x:.1f}" for x in os.getloadavg())


def demo_rows() -> list[dict]:
    from dynadesk.demo import run_demo
    from dynadesk.workspace import Workspace

    with tempfile.TemporaryDirectory(prefix="dynadesk-bench-firstrun-") as tmp:
        ws = Workspace(Path(tmp) / "home").ensure()
        store = ws.open_store()
        try:
            t0 = time.monotonic()
            state = run_demo(ws, store, echo=lambda _line: None)
            wall = time.monotonic() - t0
        finally:
            store.close()
    rows = [{"measure": f"demo first run, step {i}: {t.title[:60]}", "value": t.wall, "unit": "s", "goal": "-",
             "baseline": f"{t.cpu:.1f} CPU s ({t.cpu / t.wall if t.wall else 0:.2f} cores)", "ratio": None,
             "ok": None} for i, t in enumerate(state.steps, start=1)]
    rows.append({"measure": f"demo first run, total ({state.runner} runner)", "value": wall, "unit": "s",
                 "goal": f"<= {DEMO_GOAL_S} s", "baseline": f"before issue 39: {DEMO_BEFORE_S} s quiet ({_load()})",
                 "ratio": wall / DEMO_BEFORE_S, "ok": wall <= DEMO_GOAL_S})
    return rows


def suite_rows() -> list[dict]:
    env = {**os.environ, "HF_HUB_OFFLINE": "1"}
    t0 = time.monotonic()
    proc = subprocess.run([sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider"], cwd=REPO, env=env,
                          capture_output=True, text=True)
    wall = time.monotonic() - t0
    last = (proc.stdout.strip().splitlines() or ["(no output)"])[-1]
    return [{"measure": "make test: the whole suite (pytest -q)", "value": wall, "unit": "s",
             "goal": f"<= {SUITE_GOAL_S} s, every test passing",
             "baseline": f"before issue 39: {SUITE_BEFORE_S} s quiet; {last[:60]} ({_load()})",
             "ratio": wall / SUITE_BEFORE_S, "ok": wall <= SUITE_GOAL_S and proc.returncode == 0}]


def run(quick: bool = False, only: str | None = None) -> list[dict]:
    if quick:
        raise ValueError("bench_firstrun has no quick form: a first run takes minutes by definition")
    rows = []
    if only in (None, "demo"):
        rows += demo_rows()
    if only in (None, "suite"):
        rows += suite_rows()
    return rows


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--only", choices=("demo", "suite"))
    args = ap.parse_args()
    for r in run(only=args.only):
        ratio = "" if r["ratio"] is None else f"  ratio {r['ratio']:.2f}"
        print(f"{r['measure']}: {r['value']:.1f} {r['unit']} (goal {r['goal']}; baseline {r['baseline']}){ratio}")


if __name__ == "__main__":
    main()
