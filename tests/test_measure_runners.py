"""One definition of every measured field on both runners: the same job in a real container
(real Docker daemon, the offline-built image) and in a local subprocess, on the same machine,
gives every measured metric within its declared tolerance of the other, memory included."""

from __future__ import annotations

import pytest
from eval_support import IMAGE_CACHE, add_test_set, run_request, setup_workspace

from dynadesk.audit import tolerances
from dynadesk.orchestration.evaluate import default_limits, evaluate
from dynadesk.workspace import Workspace

pytestmark = [pytest.mark.docker, pytest.mark.timeout(1800)]  # may build the image
PAIRS = 3  # a pair measured while something else loaded the machine is taken again


@pytest.fixture(scope="module")
def evaluator_image(docker_client, require_debootstrap):
    from dynadesk.orchestration.image import build_image

    return build_image(IMAGE_CACHE, client=docker_client)


def _measured(record) -> dict[tuple[str, str], float]:
    return {(m.dataset, m.metric): m.value for m in record.metrics if not m.deterministic}


# Behind --long: on this 2-core machine the pair agrees in some runs and not in others (once memory 0.347 vs
# 0.477 GiB, 37% apart against the 25% tolerance; timing windows often noisy), so it cannot gate `make test`.
# Issue 15's must-show stays open until it passes reliably.
@pytest.mark.long
def test_docker_and_local_measure_every_field_within_its_declared_tolerance(home, store, tmp_path, evaluator_image,
                                                                             docker_client):
    setup_workspace(store, tmp_path, sizes=())
    add_test_set(store, "speed-test", 48, seed=5, perturbed=False)
    ws = Workspace(home)
    limits = default_limits(cpus=2.0, memory_bytes=2 << 30, timeout_s=600)
    memory_tol = tolerances.declare(["memory"])["memory"]["relative"]  # what `bundle create` signs
    noisy: list[str] = []
    for _ in range(PAIRS):
        docker = evaluate(store, ws, run_request("tiny", ["speed-test"], runner="docker",
                                                 image=evaluator_image.image_id, limits=limits), client=docker_client)
        local = evaluate(store, ws, run_request("tiny", ["speed-test"], runner="local", limits=limits))
        assert docker.status == local.status == "succeeded", (docker.error, local.error)
        a, b = _measured(docker), _measured(local)
        # memory does not depend on competing CPU load: every pair must agree on it
        assert tolerances.within(a[("", "memory")], b[("", "memory")], memory_tol), (a[("", "memory")],
                                                                                      b[("", "memory")])
        assert docker.profile["memory"]["peak_source"] == local.profile["memory"]["peak_source"]
        assert docker.profile["memory"]["cgroup_peak_bytes"] > 0
        assert local.profile["memory"]["cgroup_peak_bytes"] is None
        noisy = [f"{r.runner}: {r.environment['measurement']['noisy_measurements']}" for r in (docker, local)
                 if r.environment["measurement"]["noisy"]]
        if not noisy:
            break
    # timing on a loaded machine says nothing about the runners: it needs one clean pair
    assert not noisy, f"every pair was measured on a loaded machine: {noisy}"
    assert set(a) == set(b) and ("", "memory") in a and ("speed-test", "throughput") in a
    declared = tolerances.declare([metric for _, metric in a])
    outside = {f"{ds or '(run)'}.{metric}": (a[(ds, metric)], b[(ds, metric)], declared[metric]["relative"])
               for ds, metric in a
               if not tolerances.within(a[(ds, metric)], b[(ds, metric)], declared[metric]["relative"])}
    assert not outside, f"docker vs local outside the declared tolerance (docker, local, relative): {outside}"
