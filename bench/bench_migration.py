"""Migration m005_run_record at 1k and 10k runs, and the fitted exponent (issue 50 item 5: goal <= 1.05).

The workspaces are written in the old schema by ``bench_store_reads.build`` (64 KiB log tails, two hardware
classes, 100 models); each is opened by this code, which migrates it, timed from open to close. Before issue 50
the migration took 13.5 s for 1k runs and 186 s for 10k (exponent 1.14; on the busy 2-core machine of that
change 81 s for 10k); the batched one copies each run's outputs once and sets the typed columns in one UPDATE.

    .venv/bin/python bench/bench_migration.py [--quick]
"""

from __future__ import annotations

import argparse
import math
import os
import shutil
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent


def migrate_seconds(runs: int, log_kib: int) -> tuple[float, float]:
    """(seconds to open and so migrate a workspace of ``runs`` old-schema runs, its size in MiB)."""
    sys.path.insert(0, str(HERE))
    from bench_store_reads import build

    from dynadesk.store import Store

    work = Path(tempfile.mkdtemp(prefix="bench-migration-"))
    try:
        path = work / "old.db"
        build(path, runs, 100, log_kib)
        size = path.stat().st_size / (1 << 20)
        t0 = time.perf_counter()
        Store.open(path).close()
        return time.perf_counter() - t0, size
    finally:
        shutil.rmtree(work, ignore_errors=True)


def run(quick: bool = False) -> list[dict[str, Any]]:
    small, large = (200, 2000) if quick else (1000, 10_000)
    log_kib = 8 if quick else 64
    (t_small, mib_small), (t_large, mib_large) = migrate_seconds(small, log_kib), migrate_seconds(large, log_kib)
    exponent = math.log(t_large / t_small) / math.log(large / small)
    load = os.getloadavg()[0]
    return [
        {"measure": f"migration m005_run_record, {small:,} runs ({mib_small:.0f} MiB; load {load:.1f})",
         "value": round(t_small, 2), "unit": "s", "goal": "linear in runs (the exponent row)",
         "baseline": "before issue 50: 13.5 s at 1,000 runs", "ratio": None, "ok": None},
        {"measure": f"migration m005_run_record, {large:,} runs ({mib_large:.0f} MiB; load {load:.1f})",
         "value": round(t_large, 2), "unit": "s", "goal": "linear in runs (the exponent row)",
         "baseline": "before issue 50: 186 s at 10,000 runs", "ratio": None, "ok": None},
        {"measure": f"migration time exponent, {small:,} -> {large:,} runs", "value": round(exponent, 3),
         "unit": "", "goal": "<= 1.05", "baseline": "before issue 50: 1.14 (13.5 s -> 186 s)", "ratio": None,
         "ok": exponent <= 1.05 if not quick else None},
    ]


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--quick", action="store_true")
    args = ap.parse_args(argv)
    for row in run(args.quick):
        print(f"{row['measure']}: {row['value']} {row['unit']} (goal {row['goal'] or '-'}; {row['baseline']})")
    return 0


if __name__ == "__main__":
    sys.exit(main())
