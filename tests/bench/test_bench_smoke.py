"""`make bench` smoke run: every benchmark still runs (quick sizes) and fills every row.

Speed goals are judged by `make bench` on a quiet machine, not here: this only proves
that each benchmark runs end to end and reports a value, a goal or baseline, and a ratio
where it has one.
"""

import json
import os
import subprocess
import sys

import pytest
from support import REPO

# the quick rows' one run_all.py process may take its own 1800 s limit (the suite's default per test is 900 s): on a
# busy 2-core machine, beside the parallel phase's other workers, it took more than 900 s
pytestmark = pytest.mark.timeout(1800)

ALL = sorted(p.stem.removeprefix("bench_") for p in (REPO / "bench").glob("bench_*.py"))
FULL_ONLY = ["firstrun"]  # the demo's first run and the whole suite: minutes by definition, `make bench` only
BENCHES = [b for b in ALL if b not in FULL_ONLY]


def test_every_area_has_a_benchmark():
    assert {"dynascore", "eval", "gui", "models", "server", "load", "roofline"} <= set(BENCHES)


def test_a_full_only_benchmark_says_so_in_quick_runs_and_declares_it():
    for name in FULL_ONLY:
        proc = subprocess.run([sys.executable, str(REPO / "bench" / "run_all.py"), "--quick", "--only", name],
                              cwd=REPO, capture_output=True, text=True, timeout=120)
        assert proc.returncode == 0 and f"bench_{name}.py: full runs only" in proc.stderr, proc.stderr
    declared = [n for n in ALL if "FULL_ONLY = True" in (REPO / "bench" / f"bench_{n}.py").read_text()]
    assert declared == FULL_ONLY  # no other benchmark may leave the quick runs


@pytest.fixture(scope="module")
def quick_rows(tmp_path_factory, docker_client) -> tuple[dict[str, list[dict]], str]:
    """Every benchmark's quick rows from one ``run_all.py --quick`` process, as ``make bench --quick`` runs them
    (one interpreter: the heavy imports once, not once per benchmark), and the run's stderr (each benchmark's own
    part of it, its traceback, goes into that benchmark's failure)."""
    out = tmp_path_factory.mktemp("bench") / "rows.json"
    # the server bench's quick size (5,000 stored bundles per backend) is for `make bench --quick`; here it only
    # has to run end to end (300 stored); DYNADESK_BENCH_SMOKE: smaller sizes again (every row still filled)
    env = {**os.environ, "HF_HUB_OFFLINE": "1", "QT_QPA_PLATFORM": "offscreen", "DYNADESK_BENCH_SERVER_STORED": "300",
           "DYNADESK_BENCH_SMOKE": "1"}
    only = [arg for name in BENCHES for arg in ("--only", name)]
    proc = subprocess.run([sys.executable, str(REPO / "bench" / "run_all.py"), "--quick", *only, "--json", str(out)],
                          cwd=REPO, capture_output=True, text=True, env=env, timeout=1800)
    rows: dict[str, list[dict]] = {}
    for row in json.loads(out.read_text()) if out.exists() else []:
        rows.setdefault(row["bench"], []).append(row)
    return rows, proc.stderr


def _own_output(stderr: str, name: str) -> str:
    """The part of the run's stderr that bench_NAME wrote (its traceback when it failed), else the run's end."""
    start = stderr.find(f"running bench_{name}.py")
    if start < 0:
        return stderr[-6000:]
    end = stderr.find("running bench_", start + 1)
    return stderr[start:end if end > 0 else None][-8000:]


@pytest.mark.parametrize("name", BENCHES)
def test_benchmark_runs_quick_and_fills_its_rows(name, quick_rows):
    by_bench, stderr = quick_rows
    rows = by_bench.get(name)
    assert rows, f"bench_{name} reported no rows\n{_own_output(stderr, name)}"
    for row in rows:
        assert row["measure"] != "FAILED", f"bench_{name} failed: {row['baseline']}\n{_own_output(stderr, name)}"
        assert isinstance(row["value"], (int, float)), row
        assert row.get("unit") is not None and (row.get("goal") or row.get("baseline")), row
