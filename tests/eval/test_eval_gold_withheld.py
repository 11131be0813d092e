"""The model never sees the gold answers: a handler that reads the data folder it is given (``peek``) finds only
ids and input fields, so it scores what its fallback scores, never 100%.

Before this, the worker got the host's data files whole (labels, answers, perturbation sources) to compute the
metrics in the container, and the peeking handler scored a perfect macro-F1 that an audit "reproduced". Now the
host mounts a model's view of each data file (:mod:`dynadesk.orchestration.model_view`) and computes every
deterministic metric itself from the predictions (:mod:`dynadesk.orchestration.recompute`)."""

from __future__ import annotations

import json

import pytest
from support.eval import add_test_set, metric, run_request
from support.handler_models import make_handler_model

from dynadesk.models import register_model
from dynadesk.orchestration.evaluate import default_limits, evaluate
from dynadesk.orchestration.folder import RunFolder
from dynadesk.workspace import Workspace

LIMITS = dict(cpus=1.0, memory_bytes=2 << 30, timeout_s=300)
N = 12  # labels cycle negative, neutral, positive: the peeking handler's fallback ("neutral") is right on 1/3


def _peeking_run(home, store, tmp_path, **kwargs):
    register_model(store, make_handler_model(tmp_path / "peek", "peek"), "sentiment", name="peek")
    add_test_set(store, "set0-test", N, seed=0)
    return evaluate(store, Workspace(home), run_request("peek", batch_size=4, latency_samples=4, warmup=1,
                                                        limits=default_limits(**LIMITS), **kwargs.pop("req", {})),
                    **kwargs)


def _assert_blind(run):
    assert run.status == "succeeded", (run.error or "") + (run.log or "")[-2000:]
    # all "neutral": accuracy 33.3, macro-F1 16.7 (percent), whichever the task ranks by; the gold gives 100
    assert metric(run, "perf", "set0-test") in (pytest.approx(100 / 3), pytest.approx(100 / 6))
    assert metric(run, "perf") == metric(run, "perf", "set0-test")
    view = RunFolder.stored(run.run_dir, run.id).inputs_dir
    rows = [json.loads(line) for f in sorted(view.iterdir()) for line in f.read_text().splitlines()]
    assert rows and all(set(r) == {"id", "statement"} for r in rows), rows[:3]


@pytest.mark.docker
@pytest.mark.timeout(1800)  # the fixture may build the image
def test_a_handler_reading_the_mounted_data_finds_no_gold_in_the_sandbox(home, store, tmp_path, evaluator_image,
                                                                         docker_client):
    _assert_blind(_peeking_run(home, store, tmp_path, req={"runner": "docker"}, client=docker_client))


def test_the_local_runner_gives_a_trusted_handler_the_same_blind_view(home, store, tmp_path):
    _assert_blind(_peeking_run(home, store, tmp_path, trust_model_code=True))
