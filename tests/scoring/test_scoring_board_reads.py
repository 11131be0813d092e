"""Run-list and board reads do a fixed number of SQL statements whatever the number of runs, and never read logs.

Statements are counted with sqlite3's trace callback on the store's own connection (real SQLite files);
the same reads on a workspace with 5x the models and 10x the runs must take exactly as many statements.
The old reads took 3 per listed run and 3 per board model (metrics fetched row by row, every board run
read again with its log); ``bench/bench_store_reads.py`` measures both side by side at 10,000 runs.
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from dynadesk.scoring.leaderboard import build_leaderboard
from dynadesk.store.evaluations import MetricValue, RunChange
from dynadesk.workspace import Workspace

LOG = "worker output line\n" * 6000  # ~110 KiB each
SETS = ("ra-test", "rb-test")


def _workspace(home: Path, models: int, runs_per_model: int):
    from dynadesk.datasets import dataset_digest

    store = Workspace(home).open_store()
    for name in SETS:
        examples = [{"id": f"{name}-{i}", "statement": f"text {i}", "label": "positive"} for i in range(4)]
        store.datasets.add(name, "sentiment", "test", examples, dataset_digest(examples), {"positive": 4})
    with store.atomic():
        for m in range(models):
            model = store.models.add(f"m{m:03d}", "sentiment", "majority", f"/models/m{m}", f"sha256:{m:064x}", {})
            for r in range(runs_per_model):
                run = store.evaluations.create(model.id, "sentiment", runner="local", sandboxed=False,
                                               datasets=list(SETS), status="running")
                store.evaluations.set_metrics(
                    run, [MetricValue(d, metric, 50.0 + m + r, "%", True) for d in SETS
                          for metric in ("perf", "robustness", "fairness")]
                    + [MetricValue("", "throughput", 100.0 + m, "examples/s", False),
                       MetricValue("", "memory", 1.0, "GiB", False)],
                    RunChange(verdict="ok", log=LOG,
                              environment={"cpu_model": ["CPU A", "CPU B"][r % 2], "threads": 2}),
                    status="succeeded")
    return store


def _statements(store, fn):
    seen: list[str] = []
    store.db.conn.set_trace_callback(seen.append)
    try:
        result = fn()
    finally:
        store.db.conn.set_trace_callback(None)
    return result, seen


READS = {
    "list(limit=200)": lambda s: s.evaluations.list(limit=200),
    "hardware_classes": lambda s: s.evaluations.hardware_classes("sentiment"),
    "board_runs": lambda s: s.evaluations.board_runs("sentiment"),
    "build_leaderboard": lambda s: build_leaderboard(s, "sentiment"),
}


@pytest.fixture(scope="module")
def small_and_large(tmp_path_factory):
    small = _workspace(tmp_path_factory.mktemp("small") / "ws", models=4, runs_per_model=3)
    large = _workspace(tmp_path_factory.mktemp("large") / "ws", models=20, runs_per_model=6)
    yield small, large
    small.close()
    large.close()


@pytest.mark.parametrize("read", list(READS))
def test_the_statement_count_does_not_grow_with_the_runs(small_and_large, read):
    small, large = small_and_large
    got_small, few = _statements(small, lambda: READS[read](small))
    got_large, many = _statements(large, lambda: READS[read](large))
    assert len(few) == len(many), (read, few, many)  # O(1) in the number of runs and models
    assert len(many) <= 25, many
    if read == "board_runs":
        assert len(got_large) == 20 and len(got_small) == 4  # one entry per model, each with its metrics
        assert all(len(r.metrics) == 8 for r in got_large)


@pytest.mark.parametrize("read", list(READS))
def test_no_read_selects_a_log(small_and_large, read):
    _, large = small_and_large
    records, statements = _statements(large, lambda: READS[read](large))
    columns = [s.replace("'' AS log", "").split(" FROM ")[0] for s in statements]  # a constant '' is no read
    assert not [c for c in columns if re.search(r"\blog\b", c)], statements
    if read in ("list(limit=200)", "board_runs"):
        assert records and all(r.log == "" for r in records)
    assert large.evaluations.log(large.evaluations.list(limit=1)[0].id) == LOG  # still there, read on demand


def test_the_board_reads_the_hardware_class_from_the_index_alone(small_and_large):
    _, large = small_and_large
    plan = " ".join(str(r) for r in large.db.execute(
        "EXPLAIN QUERY PLAN SELECT id, model_id, datasets FROM evaluations WHERE task = ? AND status = 'succeeded'"
        " AND purpose = 'evaluation' AND (? IS NULL OR hardware_class = ?)", ["sentiment", "x", "x"]))
    assert "COVERING INDEX" in plan, plan
    assert large.evaluations.hardware_classes("sentiment") == {
        "cpu=CPU A;cores=2;memory=unknown;gpus=none;runtime=cpu": 20,
        "cpu=CPU B;cores=2;memory=unknown;gpus=none;runtime=cpu": 20}
