"""Issue 45, the replay hole: a model that caches its answers and replays them in the timed windows, through Docker.

The model (``replay`` in ``support/hostile_models``) is slow: every example it really computes costs it
``REPLAY_SLOW_S`` more. But it keeps each answer keyed by the input and answers any input it has seen before
from that cache at once. On the code where the prediction pass preceded the timed windows, every timed query
was one the pass had answered: the host measured ~100x its honest speed, with every timed answer "equal to the
pass", and the run was stored ``succeeded`` (seen). Now the timed windows come first, the data reach the sandbox
only after them (the model has seen none of the timed inputs), each example is issued once while unseen ones
remain, and an example answered much faster when asked again voids the windows.
"""

from __future__ import annotations

import pytest
from support.eval import add_test_set, metric, run_request

from dynadesk.orchestration.evaluate import default_limits, evaluate
from dynadesk.workspace import Workspace

REPLAY_SLOW_S = 0.03  # tests/support/hostile_models/payload/sitecustomize.py
HONEST_CEILING = 1.0 / REPLAY_SLOW_S  # examples/s: no honest answer of this model comes faster


@pytest.mark.docker
@pytest.mark.timeout(1800)
def test_a_model_that_replays_cached_answers_in_the_timed_windows_gains_nothing(home, store, tmp_path,
                                                                                evaluator_image, docker_client):
    from support.hostile_models import HostileDockerRunner, make_hostile_model

    from dynadesk.models.registry import register_model

    add_test_set(store, "replay-test", 24, seed=11, perturbed=False)
    register_model(store, make_hostile_model(tmp_path / "replayer", "replay"), "sentiment", name="replayer")
    request = run_request("replayer", ["replay-test"], runner="docker", image=evaluator_image.image_id,
                          limits=default_limits(cpus=1.0, timeout_s=300), latency_samples=4, warmup=1,
                          batch_size=4)
    rec = evaluate(store, Workspace(home), request,
                   runner=HostileDockerRunner(evaluator_image.image_id, client=docker_client))
    assert "HOSTILE replay" in (rec.log or "")
    print("replay run:", rec.status, rec.error or {m.metric: m.value for m in rec.metrics if not m.dataset})
    if rec.status == "succeeded":  # every timed query was an input it had not seen: its honest speed at most
        for name in ("throughput", "throughput_batched"):
            assert metric(rec, name, "replay-test") <= 1.5 * HONEST_CEILING, (name, rec.metrics)
    else:  # a window had to ask an example again (a small set) and the cache answered it much faster
        assert (rec.status, rec.verdict) == ("failed", "out_of_bounds"), (rec.status, rec.verdict, rec.error)
        assert "the host refused this run's timed windows" in rec.error and "faster when asked again" in rec.error
        assert rec.metrics == []
