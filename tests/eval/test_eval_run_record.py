"""The typed run record: the store's migration of the old settings bag, the typed fields, named transitions.

``assets/workspace_before_run_record.sql`` is a workspace database written by the code before
``m005_run_record`` (``sqlite3 .dump``): a local run, a Docker run with an image build, a queued run
collected from a worker, a run recorded before requests, and one whose flat settings cannot be replayed
(and hold a key no release wrote). Real SQLite files throughout.
"""

from __future__ import annotations

import json
import sqlite3
from dataclasses import asdict
from pathlib import Path

import pytest
from support import ASSETS

from dynadesk.errors import ConfigError, RunStateError
from dynadesk.evaluator.environment import hardware_class_of
from dynadesk.store import Store
from dynadesk.store.evaluations import ImageBuild, MetricValue, QueuePlacement, RunChange, RunSetup, WorkerSettings

FIXTURE = ASSETS / "workspace_before_run_record.sql"


def old_workspace(tmp_path: Path) -> Store:
    """The fixture's database, opened (and so migrated) by this code."""
    path = tmp_path / "old.db"
    con = sqlite3.connect(path)
    con.executescript(FIXTURE.read_text())
    con.close()
    return Store.open(path)


@pytest.fixture
def migrated(tmp_path):
    store = old_workspace(tmp_path)
    yield store
    store.close()


def _columns(store: Store, table: str) -> list[str]:
    return [r[1] for r in store.db.execute(f"PRAGMA table_info({table})")]


def test_the_migration_splits_the_settings_bag_into_typed_fields(migrated):
    runs = migrated.evaluations
    assert "settings" not in _columns(migrated, "evaluations")
    assert not {"log", "environment", "profile"} & set(_columns(migrated, "evaluations"))  # in evaluation_outputs
    local, docker, queued = runs.get(1), runs.get(2), runs.get(3)
    # the request, once: the column the run had (the bag's copy is gone with the bag)
    assert local.request["settings"]["batch_size"] == 8 and local.request["runner"] == "local"
    assert local.worker == WorkerSettings(batch_size=8, seed=3, threads=2, latency_samples=64, warmup=8,
                                          min_seconds=0.5)
    assert (local.image_name, local.image_build, local.queue, local.legacy_settings) == (None, None, None, None)
    assert docker.image_name == "dynadesk-evaluator:abc" and docker.worker.dedicated_cgroup
    assert docker.image_build == ImageBuild(1_700_000_000, "sha256:" + "ef" * 32)
    assert queued.queue == QueuePlacement(
        job="job-1", attempt=1, worker="w1", host="box", hardware_class="cpu=Test CPU|threads=2", requeued_from="w0",
        worker_key="sha256:" + "cc" * 32, limits=queued.request["limits"], maxima={"memory_bytes": 1234})
    assert queued.image_build == ImageBuild(1_700_000_001, "sha256:" + "ee" * 32)
    # outputs kept, metrics kept, the hardware class derived from the environment it was stored with
    assert local.log == "local log\n" and local.environment["cpu_model"] == "Test CPU"
    assert [(m.dataset, m.metric) for m in local.metrics] == [("", "throughput"), ("d-test", "perf")]
    assert local.hardware_class == hardware_class_of(local.environment) == docker.hardware_class
    assert queued.status == "failed" and queued.verdict == "oom"


def test_keys_no_typed_field_takes_are_kept_not_lost(migrated):
    odd = migrated.evaluations.get(5)
    assert odd.legacy_settings == {"colour": "blue"}
    assert (odd.worker.batch_size, odd.worker.seed) == (4, 1) and odd.request == {}
    stored = json.loads(migrated.db.execute("SELECT worker FROM evaluations WHERE id = 5").fetchone()[0])
    assert stored == {"batch_size": 4, "seed": 1}  # only what was recorded; the typed view fills the defaults
    assert migrated.integrity_check() == "ok"


def test_the_migrated_board_and_listing_read_as_before(migrated):
    board = migrated.evaluations.board_runs("sentiment", ["d-test"])
    assert [(r.model_name, r.id) for r in board] == [("bow-a", 4)]  # the newest complete succeeded run
    assert migrated.evaluations.hardware_classes("sentiment") == {
        hardware_class_of({}): 1, hardware_class_of({"cpu_model": "Test CPU", "threads": 2}): 1}
    listed = migrated.evaluations.list()
    assert [r.id for r in listed] == [5, 4, 3, 2, 1] and all(r.log == "" for r in listed)


def _model(store: Store) -> int:
    if not store.models.exists("m"):
        store.models.add("m", "sentiment", "majority", "/models/m", "sha256:m", {"task": "sentiment"})
    return int(store.models.get("m").id)


def test_a_new_run_stores_each_typed_field_once(store):
    runs = store.evaluations
    worker = WorkerSettings(batch_size=4, seed=9, threads=1)
    run = runs.create(_model(store), "sentiment", RunSetup(worker=worker,
                                                           request={"model": "m", "purpose": "evaluation"},
                                                           image_name="dynadesk-evaluator:x"), runner="docker",
                      sandboxed=True, datasets=["d"])
    runs.transition(run, "running", RunChange(started_at="t0", image_id="sha256:" + "ab" * 32,
                                              image_build=ImageBuild(5, "sha256:" + "ef" * 32),
                                              queue=QueuePlacement(job="j1", attempt=0)))
    runs.set_metrics(run, [MetricValue("d", "perf", 1.0, "score", True)],
                     RunChange(verdict="ok", environment={"cpu_model": "Z80", "threads": 1}, log="x" * 10),
                     status="succeeded")
    rec = runs.get(run)
    assert (rec.worker, rec.image_name, rec.queue, rec.image_build.source_date_epoch) == (
        worker, "dynadesk-evaluator:x", QueuePlacement(job="j1", attempt=0), 5)
    assert rec.hardware_class == hardware_class_of({"cpu_model": "Z80", "threads": 1})
    assert rec.to_dict()["worker"] == asdict(worker) and rec.to_dict()["queue"]["job"] == "j1"
    row = store.db.execute("SELECT request, worker FROM evaluations WHERE id = ?", [run]).fetchone()
    assert "batch_size" not in row[0] and json.loads(row[1]) == asdict(worker)  # no second copy of anything


def test_transitions_take_named_fields_only(store):
    runs = store.evaluations
    with pytest.raises(TypeError):
        runs.create(_model(store), "sentiment", "local", False, ["d"])  # a positional runner and bool
    run = runs.create(_model(store), "sentiment", runner="local", sandboxed=False, datasets=["d"])
    with pytest.raises(TypeError):
        RunChange("why")  # a positional field
    with pytest.raises(TypeError):
        RunChange(settings={})  # no such field: the bag is gone
    with pytest.raises(TypeError):
        runs.transition(run, "running", settings={})  # fields travel in a RunChange, not as keywords
    with pytest.raises(TypeError):
        runs.update(run, status="running")  # a status moves only through transition()
    runs.transition(run, "failed", RunChange(verdict="error", error="boom", finished_at="t1"))
    with pytest.raises(RunStateError, match="'failed'; it cannot become 'succeeded'"):
        runs.set_metrics(run, [MetricValue("", "perf", 1.0, "score", True)], status="succeeded")
    rec = runs.get(run)
    assert rec.status == "failed" and rec.metrics == []  # the refused move rolled the metric rows back


def test_a_malformed_queue_placement_is_named(migrated):
    migrated.db.execute("UPDATE evaluations SET queue = '{\"attempt\": 1}' WHERE id = 3")
    with pytest.raises(ConfigError, match="a queue placement names its job"):
        migrated.evaluations.get(3)
