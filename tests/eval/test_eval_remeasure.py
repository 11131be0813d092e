"""``dynadesk eval --remeasure RUN`` (issue 39): a noisy run's timed windows taken again as a new run.

Real tiny transformers model, real worker subprocess (the local runner), real SQLite workspace. The new
run reuses the old run's predictions (the worker predicts nothing again), takes the timed windows
afresh, recomputes every deterministic figure identical to the old run's, keeps its memory figures,
names the old run and becomes the model's row on the local board. What cannot be re-measured is
refused before a run is made, with nothing left queued.
"""

from __future__ import annotations

import json
import shutil
from dataclasses import replace
from pathlib import Path

import pytest
from click.testing import CliRunner
from support.eval import deterministic_metrics, metric, predictions_bytes, run_request, setup_workspace

from dynadesk.cli import cli
from dynadesk.errors import EvaluationError, RunFolderError
from dynadesk.orchestration.evaluate import evaluate
from dynadesk.orchestration.remeasure import TIMED_METRICS, differences, remeasure
from dynadesk.scoring.leaderboard import build_leaderboard
from dynadesk.store.evaluations import MetricValue, RunChange
from dynadesk.workspace import Workspace

BUSY = {"noisy": True, "noisy_measurements": ["set0-test batch1: other processes used 1.7 of 2 cores"]}


@pytest.fixture(scope="module")
def workspace(tmp_path_factory):
    """One workspace for the module (one evaluation of the tiny model is the costly part): small sets, short
    timed windows."""
    tmp = tmp_path_factory.mktemp("remeasure")
    home = tmp / "ws"
    ws = Workspace(home)
    store = ws.open_store()
    setup_workspace(store, tmp, sizes=(12, 8))
    rec = evaluate(store, ws, run_request("tiny", runner="local", latency_samples=8, warmup=2, min_seconds=0.0))
    assert rec.status == "succeeded", rec.error
    store.evaluations.update(rec.id, RunChange(environment={**rec.environment, "measurement": BUSY}))
    yield home, ws, store, rec.id
    store.close()


@pytest.fixture
def noisy_run(workspace):
    """A succeeded local run of the tiny model whose timed windows the evaluator flagged noisy."""
    home, ws, store, run_id = workspace
    return home, ws, store, store.evaluations.get(run_id)


def _row(store):
    """The tiny model's board row: ranked, or (it may answer one label for every example) a baseline (issue 44)."""
    board = build_leaderboard(store, "sentiment")
    (found,) = board.rows + board.baselines
    return found


def test_remeasure_retakes_only_the_timed_windows_as_a_linked_run(noisy_run):
    home, _ws, store, old = noisy_run
    assert _row(store).noisy == BUSY["noisy_measurements"]
    out = CliRunner().invoke(cli, ["--home", str(home), "eval", "--remeasure", str(old.id), "--json"])
    assert out.exit_code == 0, out.output
    answer = json.loads(out.output)
    assert answer["old_run"] == old.id and answer["deterministic_identical"] is True and answer["differences"] == []
    assert answer["noisy_before"] == BUSY["noisy_measurements"]
    new = store.evaluations.get(answer["new_run"])
    assert new.id != old.id and new.status == "succeeded" and new.remeasure_of == old.id
    # nothing was predicted again: every dataset's predictions came from the old run, byte for byte
    assert new.profile["prediction_pass"] == {} and sorted(new.profile["resumed_datasets"]) == sorted(
        old.profile["prediction_pass"])
    assert predictions_bytes(new) == predictions_bytes(old) and new.predictions_digest == old.predictions_digest
    assert deterministic_metrics(new) == deterministic_metrics(old)
    # the timed windows were taken again (their own trials), memory is the old run's and says so
    assert new.profile["measurement"]["datasets"] != old.profile["measurement"]["datasets"]
    timed = {m.metric for m in old.metrics} & set(TIMED_METRICS)  # tokens/s and first-token time: generation runs only
    assert {"throughput", "throughput_batched", "latency_p50_ms"} <= timed
    for name in timed:
        assert metric(new, name) > 0
    assert metric(new, "memory") == metric(old, "memory") and new.profile["memory"] == old.profile["memory"]
    assert new.profile["remeasure"]["of_run"] == old.id and "memory" in new.profile["remeasure"]["kept_from_old_run"]
    assert {(m.dataset, m.metric) for m in new.metrics} == {(m.dataset, m.metric) for m in old.metrics}
    # the board ranks the model by its new run, marked only if the new windows were noisy too
    row = _row(store)
    assert row.evaluation_id == new.id and row.noisy == answer["noisy_after"]
    shown = CliRunner().invoke(cli, ["--home", str(home), "runs", "show", str(new.id)])
    assert f"re-measurement of run {old.id}" in shown.output


def test_a_deterministic_difference_is_named_not_hidden(noisy_run):
    *_, old = noisy_run
    moved = [MetricValue(m.dataset, m.metric, m.value + (0.5 if (m.dataset, m.metric) == ("set0-test", "perf")
                                                         else 0.0), m.unit, m.deterministic) for m in old.metrics]
    other = replace(old, id=old.id + 1, metrics=moved, predictions_digest="sha256:" + "0" * 64)
    found = differences(old, other)
    assert found[0].startswith(f"predictions digest {old.predictions_digest} in run {old.id}")
    assert len(found) == 2 and found[1].startswith("set0-test perf: ") and f"in run {old.id + 1}" in found[1]
    assert differences(old, old) == []


def test_what_cannot_be_remeasured_is_refused_before_a_run_is_made(noisy_run):
    home, ws, store, old = noisy_run
    runs_before = len(store.evaluations.list(limit=1000))
    parts = Path(old.run_dir) / "out" / "parts"
    shutil.move(str(parts), str(parts.with_name("parts.away")))
    with pytest.raises(RunFolderError, match=f"run {old.id} has no finished predictions"):
        remeasure(store, ws, old.id)
    made = store.evaluations.list(limit=1)[0]
    assert len(store.evaluations.list(limit=1000)) == runs_before + 1
    assert made.status == "failed" and made.verdict == "refused"
    shutil.move(str(parts.with_name("parts.away")), str(parts))
    with pytest.raises(EvaluationError, match=f"run {made.id} is failed: only a succeeded run"):
        remeasure(store, ws, made.id)
    out = CliRunner().invoke(cli, ["--home", str(home), "eval", "tiny", "--remeasure", str(old.id)])
    assert out.exit_code != 0 and "give no MODEL" in out.output
    # the data changed since the run (a perturbation set removed): not what the run read (last: it
    # changes the module's workspace)
    store.datasets.remove("set1-test~case")
    with pytest.raises(EvaluationError, match=rf"run {old.id}'s data changed since it ran \(set1-test~case\)"):
        remeasure(store, ws, old.id)
    assert store.evaluations.list(limit=1)[0].verdict == "refused"
