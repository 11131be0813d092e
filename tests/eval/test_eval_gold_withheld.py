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


def test_the_model_view_keeps_ids_and_inputs_only_and_refuses_data_the_spec_does_not_name(tmp_path):
    import hashlib

    from dynadesk.errors import RunFolderError
    from dynadesk.evaluator.schema import DatasetSpec, Settings, Spec
    from dynadesk.orchestration.model_view import view_fields, write_model_view
    from dynadesk.tasks import get_task

    qa = get_task("qa").to_dict()
    assert view_fields(qa) == ("id", *[f["name"] for f in qa["inputs"]]) and "answers" not in view_fields(qa)
    # a task naming its gold field as an input still never shows it
    assert view_fields({**qa, "inputs": [*qa["inputs"], {"name": "answers"}]}) == view_fields(qa)
    row = {"id": "q1", "context": "Paris is in France.", "question": "Where is Paris?", "answers": ["France"],
           "metadata": {"squad_v2": True, "source_id": "q0"}, "tags": ["geo"], "notes": "France"}
    data, view = tmp_path / "data", tmp_path / "inputs"
    data.mkdir()
    raw = (json.dumps(row) + "\n").encode()
    (data / "d000.jsonl").write_bytes(raw)
    spec = Spec(task=qa, model={"name": "m", "digest": "sha256:0", "manifest": {}}, settings=Settings(),
                datasets=[DatasetSpec(name="qa-test", file="d000.jsonl", sha256=hashlib.sha256(raw).hexdigest(),
                                      size=1, role="test")])
    write_model_view(spec, data, view)
    assert json.loads((view / "d000.jsonl").read_text()) == {"id": "q1", "context": "Paris is in France.",
                                                             "question": "Where is Paris?"}
    (data / "d000.jsonl").write_bytes(raw.replace(b"q1", b"q2"))
    with pytest.raises(RunFolderError, match="dataset 'qa-test': .* does not match the spec's sha256"):
        write_model_view(spec, data, view)
