"""DEVELOPERS.md "a metric", followed literally: a toy task metric is written and registered once, then a real
evaluation reports it and the local board scores it by its Dynascore default.

The toy is the error rate (100 - accuracy; lower is better, so it enters the Dynascore with direction -1 and offset
100). It is a plugin module both processes load: the host (which recomputes every deterministic value from the
predictions and refuses a worker whose values differ) and the worker, which a plain-subprocess runner starts after
installing the plugin (in the product the metric lives in evaluator/, inside the image). Computing it, its unit, its
place in task files, the Dynascore and the server's checks all go through the registry: bypass it anywhere on the
path and the run fails or the board lacks the metric.
"""

from __future__ import annotations

import textwrap

import pytest
from support.eval import LABELS, metric, run_request, setup_workspace
from support.tiny_models import make_tiny_classifier

from dynadesk.errors import ConfigError
from dynadesk.evaluator.kinds import KINDS
from dynadesk.evaluator.metric_registry import METRICS
from dynadesk.evaluator.schema import METRIC_UNITS
from dynadesk.models.registry import register_model
from dynadesk.orchestration import runner_registry as R
from dynadesk.orchestration.evaluate import evaluate
from dynadesk.orchestration.folder import RunPaths
from dynadesk.orchestration.runners import LocalRunner
from dynadesk.scoring.dynascore import default_metrics
from dynadesk.scoring.leaderboard import build_leaderboard
from dynadesk.tasks import parse_task_text
from dynadesk.workspace import Workspace

# Steps 1-3 of the guide, as a plugin module: the function, its MetricDef, and the kind that may use it.
PLUGIN = '''
from dynadesk.evaluator.kinds import KINDS
from dynadesk.evaluator.metric_registry import TASK, DynascoreDefault, MetricDef, register_metric
from dynadesk.evaluator.metrics import accuracy


def error_rate(task, preds, golds):
    return 100.0 - accuracy(preds, golds)


TOY = MetricDef("error_rate", "score", TASK, True, compute=error_rate,
                dynascore=DynascoreDefault(1.0, direction=-1.0, offset=100.0, order=5))


def install():
    register_metric(TOY)
    KINDS["label"].metrics = (*KINDS["label"].metrics, TOY.name)
'''

TASK_FILE = """\
name: toy_sentiment
title: Sentiment with an error rate
description: The sentiment task, reporting the toy metric too.
inputs:
  - name: statement
output:
  kind: label
  labels: [negative, neutral, positive]
metric: macro_f1
secondary_metrics: [accuracy, error_rate]
fooled_rule:
  kind: label_mismatch
"""


class PluginWorkerRunner(LocalRunner):
    """The worker in a plain subprocess that installs the toy metric plugin first (the image would hold it)."""

    name = "toy-plugin-worker"

    def command(self, paths: RunPaths) -> list[str]:
        code = ("import sys, toy_metric_plugin; toy_metric_plugin.install(); "
                "from dynadesk.evaluator.__main__ import main; sys.exit(main(sys.argv[1:]))")
        return [self.python, "-c", code, "run", "--spec", str(paths.spec_dir / "spec.json"),
                "--out", str(paths.out_dir), "--model", str(paths.model_dir), "--data", str(paths.data_dir)]


@pytest.fixture
def toy_metric(tmp_path, monkeypatch):
    plugins = tmp_path / "plugins"
    plugins.mkdir()
    (plugins / "toy_metric_plugin.py").write_text(textwrap.dedent(PLUGIN))
    monkeypatch.syspath_prepend(str(plugins))
    monkeypatch.setenv("PYTHONPATH", str(plugins))  # the worker subprocess finds the plugin too
    import toy_metric_plugin

    # what install() does, undone after the test
    monkeypatch.setitem(METRICS, "error_rate", toy_metric_plugin.TOY)
    monkeypatch.setattr(KINDS["label"], "metrics", (*KINDS["label"].metrics, "error_rate"))
    monkeypatch.setitem(R.RUNNERS, PluginWorkerRunner.name, R.RunnerSpec(
        PluginWorkerRunner.name, "Plugin worker", False, f"{__name__}:PluginWorkerRunner"))
    return toy_metric_plugin.TOY


def test_a_task_file_may_not_name_an_unregistered_metric():
    with pytest.raises(ConfigError, match="error_rate"):
        parse_task_text(TASK_FILE, "toy.yaml")


def test_a_toy_metric_added_by_the_guide_is_in_the_run_and_on_the_board(home, store, tmp_path, toy_metric):
    assert METRIC_UNITS["error_rate"] == ("score", True)  # the result files' unit table is the registry
    assert default_metrics()["error_rate"].direction == -1.0 and default_metrics()["error_rate"].offset == 100.0
    task = parse_task_text(TASK_FILE, "toy.yaml")  # task files may now choose it
    store.tasks.add(task, TASK_FILE)
    setup_workspace(store, tmp_path, sizes=(12,), task=task.name)
    other = make_tiny_classifier(tmp_path / "models" / "tiny-b", LABELS, task=task.name, seed=7)
    register_model(store, other, task.name, name="tiny-b")
    ws = Workspace(home)

    runs = [evaluate(store, ws, run_request(m, runner=PluginWorkerRunner.name, latency_samples=4, warmup=0))
            for m in ("tiny", "tiny-b")]
    for rec in runs:
        assert rec.status == "succeeded", rec.error  # the host recomputed the worker's error_rate and agreed
        for ds in ("set0-test", ""):
            assert metric(rec, "error_rate", ds) == pytest.approx(100.0 - metric(rec, "accuracy", ds))
        row = next(m for m in rec.metrics if m.metric == "error_rate")
        assert row.unit == "score" and row.deterministic

    board = build_leaderboard(store, task.name)
    # a tiny random model may answer one label for every example: a baseline (issue 44), scored at the board's rates
    assert {r.model for r in board.rows + board.baselines} == {"tiny", "tiny-b"}
    for r in board.rows + board.baselines:
        rec = next(x for x in runs if x.model_name == r.model)
        assert r.values["error_rate"] == pytest.approx(metric(rec, "error_rate", "set0-test"))
        assert "error_rate" in r.converted  # scored by its Dynascore default, beside perf, throughput, ...

    from dynadesk.sync.server.values import registry

    assert registry(task)["error_rate"].unit == "score"  # the server's upload check knows it too
