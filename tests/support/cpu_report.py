"""Where the suite's CPU goes: each test's CPU seconds, its own process's and its reaped children's.

``make test`` is CPU-bound on 2 cores (load 4-6 with 4 workers), so its wall time follows the CPU every test spends,
not the wall time pytest's ``--durations`` prints (a test waiting on a server shares its wall time with the others'
work). With ``DYNADESK_TEST_CPU_REPORT=FILE`` set, each pytest process (each xdist worker) appends one JSON line per
test to ``FILE``: ``{"test", "self_s", "children_s", "wall_s"}``, setup, call and teardown together. A child counts
when it is reaped (a server a module fixture starts counts on the test whose teardown stops it); what a container
spends is dockerd's, not counted. Sum by file with ``python tests/support/cpu_report.py FILE``.
"""

from __future__ import annotations

import json
import os
import resource
import sys
import time
from collections import defaultdict
from pathlib import Path

import pytest

ENV = "DYNADESK_TEST_CPU_REPORT"


def _cpu() -> tuple[float, float]:
    me, kids = resource.getrusage(resource.RUSAGE_SELF), resource.getrusage(resource.RUSAGE_CHILDREN)
    return me.ru_utime + me.ru_stime, kids.ru_utime + kids.ru_stime


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_protocol(item, nextitem):
    target = os.environ.get(ENV)
    if not target:
        yield
        return
    (self0, kids0), wall0 = _cpu(), time.monotonic()
    yield
    (self1, kids1), wall = _cpu(), time.monotonic() - wall0
    line = json.dumps({"test": item.nodeid, "self_s": round(self1 - self0, 3), "children_s": round(kids1 - kids0, 3),
                       "wall_s": round(wall, 3)})
    with open(target, "a", encoding="utf-8") as fh:  # one short line per append: workers' lines do not interleave
        fh.write(line + "\n")


def main(path: str, top: int = 40) -> None:
    """CPU seconds per test file, most first, with the share of the whole."""
    by_file: dict[str, list[float]] = defaultdict(lambda: [0.0, 0.0, 0.0, 0])
    for row in map(json.loads, Path(path).read_text().splitlines()):
        acc = by_file[row["test"].split("::")[0]]
        acc[0] += row["self_s"]
        acc[1] += row["children_s"]
        acc[2] += row["wall_s"]
        acc[3] += 1
    total = sum(a[0] + a[1] for a in by_file.values())
    head = f"{'CPU-s':>8} {'self':>7} {'kids':>7} {'wall-s':>7} {'tests':>5} {'share':>6}"
    print(f"{head}  file (total {total:.0f} CPU-s)")
    for name, (me, kids, wall, n) in sorted(by_file.items(), key=lambda kv: -(kv[1][0] + kv[1][1]))[:top]:
        print(f"{me + kids:8.1f} {me:7.1f} {kids:7.1f} {wall:7.1f} {n:5d} {(me + kids) / total:6.1%}  {name}")


if __name__ == "__main__":
    main(sys.argv[1], int(sys.argv[2]) if len(sys.argv) > 2 else 40)
