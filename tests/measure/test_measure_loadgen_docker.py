"""The host is the load generator (issue 45 item 1): a model whose code forges the timed windows, through Docker.

On the code before the host issued the timed queries itself, the worker printed ``@@dynadesk-window`` lines that
the host timestamped. This model's code holds each start line until just before its end line (so every window
lasted ~0 s on the host's clock and bounded nothing), prints one early start line before loading (so the
memory floor was taken before the model loaded) and, at exit, claims 1000x the throughput and a tenth of the
memory. It was seen stored ``succeeded`` with the forged figures on that code. Now the timed queries come from
the host over its own socket and the host's stamps are the figures, so the forged run is refused.
"""

from __future__ import annotations

import pytest
from support.eval import add_test_set, run_request

from dynadesk.orchestration.evaluate import default_limits, evaluate
from dynadesk.workspace import Workspace


def _forged_run(home, store, tmp_path, image, client, target):
    from support.hostile_models import HostileDockerRunner, make_hostile_model

    from dynadesk.models.registry import register_model

    add_test_set(store, "small-test", 12, seed=7, perturbed=False)
    name = f"forger-{target or 'all'}"
    register_model(store, make_hostile_model(tmp_path / name, "forge_windows", target), "sentiment", name=name)
    request = run_request(name, ["small-test"], runner="docker", image=image.image_id,
                          limits=default_limits(cpus=1.0, timeout_s=300), latency_samples=4, warmup=0,
                          batch_size=4)
    return evaluate(store, Workspace(home), request, runner=HostileDockerRunner(image.image_id, client=client))


@pytest.mark.docker
@pytest.mark.timeout(1800)
def test_a_model_that_forges_its_timed_windows_and_memory_is_refused(home, store, tmp_path, evaluator_image,
                                                                    docker_client):
    rec = _forged_run(home, store, tmp_path, evaluator_image, docker_client, None)
    assert "HOSTILE forge_windows" in (rec.log or "")
    assert (rec.status, rec.verdict) == ("failed", "out_of_bounds"), (rec.status, rec.error)
    assert "measured 'memory'" in rec.error and "the worker reports" in rec.error
    assert "'throughput' on 'small-test'" in rec.error and "the host measured" in rec.error
    assert rec.metrics == []


@pytest.mark.docker
@pytest.mark.timeout(1800)
def test_a_model_that_forges_only_its_speed_is_refused_naming_the_host_figure(home, store, tmp_path,
                                                                            evaluator_image, docker_client):
    rec = _forged_run(home, store, tmp_path, evaluator_image, docker_client, "speed")
    assert (rec.status, rec.verdict) == ("failed", "out_of_bounds"), (rec.status, rec.error)
    assert "'throughput_batched' on 'small-test'" in rec.error and "the host measured" in rec.error
    assert "memory" not in rec.error
