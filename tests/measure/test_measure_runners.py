"""One definition of every measured field on both runners: the same job in a real container
(real Docker daemon, the offline-built image) and in a local subprocess, on the same machine,
gives every measured metric within its declared tolerance of the other, memory included."""

from __future__ import annotations

import os
import subprocess
import sys
import warnings

import pytest
from support.eval import MEASURED_WINDOW_S, add_test_set, measured_metrics, run_request, setup_workspace

from dynadesk.audit import tolerances
from dynadesk.evaluator import profiling
from dynadesk.orchestration.evaluate import default_limits, evaluate
from dynadesk.workspace import Workspace

pytestmark = pytest.mark.timeout(1800)  # may build the image
LONG = os.environ.get("DYNADESK_LONG") == "1"
PAIRS = 4  # a pair measured noisy, or whose timing disagrees, is taken again (a systematic
# difference between the runners fails every pair; a neighbour on a shared VM, which no /proc figure shows,
# moved one clean-flagged pair's throughput 588 vs 411 examples/s while the pair before agreed; a clean clone at
# 01:30 took three pairs: two clean ones with Docker's p99 2.1x the local one's, 4.13 vs 1.97 and 3.96 vs 1.88 ms,
# and one flagged noisy)


# Memory is peak RSS less the shared libraries' pages (profiling.MEMORY_DEFINITION): whole peak RSS moved with
# the page cache (a freshly installed venv: local 0.437 GiB vs Docker 0.347 on the same job; after drop_caches
# 0.347 vs 0.346), so it held only on a settled machine and this test lived behind --long.
@pytest.mark.docker
def test_docker_and_local_measure_every_field_within_its_declared_tolerance(home, store, tmp_path, evaluator_image,
                                                                             docker_client, monkeypatch):
    setup_workspace(store, tmp_path, sizes=())
    add_test_set(store, "speed-test", 48, seed=5, perturbed=False)
    ws = Workspace(home)
    limits = default_limits(cpus=2.0, memory_bytes=2 << 30, timeout_s=600)
    memory_tol = tolerances.declare(["memory"])["memory"]["relative"]  # what `bundle create` signs
    noisy: list[str] = []
    disagreed: list[dict[str, tuple[float, float, float]]] = []  # clean pairs' fields outside tolerance
    monkeypatch.setenv("MALLOC_ARENA_MAX", "1")  # a user's shell setting: the local runner must not pass it on
    for _ in range(PAIRS):
        docker = evaluate(store, ws, run_request("tiny", ["speed-test"], runner="docker",
                                                 image=evaluator_image.image_id, limits=limits,
                                                 min_seconds=MEASURED_WINDOW_S), client=docker_client)
        local = evaluate(store, ws, run_request("tiny", ["speed-test"], runner="local", limits=limits,
                                                min_seconds=MEASURED_WINDOW_S))
        assert docker.status == local.status == "succeeded", (docker.error, local.error)
        a, b = measured_metrics(docker), measured_metrics(local)
        rss = [r.profile["memory"]["rss_peak_bytes"] / 2**30 for r in (docker, local)]
        print(f"pair: memory docker {a[('', 'memory')]:.3f} GiB, local {b[('', 'memory')]:.3f} GiB (peak RSS "
              f"{rss[0]:.3f} vs {rss[1]:.3f}); throughput "
              f"{a[('', 'throughput')]:.1f} vs {b[('', 'throughput')]:.1f}; noisy "
              f"{docker.environment['measurement']['noisy']}/{local.environment['measurement']['noisy']}; "
              f"load {os.getloadavg()[0]:.1f}; "
              f"{[r.environment['measurement']['noisy_measurements'] for r in (docker, local)]}")
        # memory does not depend on competing CPU load: every pair must agree on it
        assert tolerances.within(a[("", "memory")], b[("", "memory")], memory_tol), (a[("", "memory")],
                                                                                      b[("", "memory")])
        assert docker.profile["memory"]["peak_source"] == local.profile["memory"]["peak_source"]
        assert docker.profile["memory"]["definition"] == local.profile["memory"]["definition"] \
            == profiling.MEMORY_DEFINITION, [r.profile["memory"]["malloc"] for r in (docker, local)]
        assert docker.profile["memory"]["cgroup_peak_bytes"] > 0
        assert local.profile["memory"]["cgroup_peak_bytes"] is None
        flagged = [r for r in (docker, local) if r.environment["measurement"]["noisy"]]
        # a run flagged noisy says why (steal, other processes, throttling, spread) in what it signs
        assert all(r.environment["measurement"]["noisy_measurements"] for r in flagged), flagged
        noisy = [f"{r.runner}: {r.environment['measurement']['noisy_measurements']}" for r in flagged]
        if noisy:
            continue
        assert set(a) == set(b) and ("", "memory") in a and ("speed-test", "throughput") in a
        declared = tolerances.declare([metric for _, metric in a])
        outside = {f"{ds or '(run)'}.{metric}": (a[(ds, metric)], b[(ds, metric)], declared[metric]["relative"])
                   for ds, metric in a
                   if not tolerances.within(a[(ds, metric)], b[(ds, metric)], declared[metric]["relative"])}
        disagreed.append(outside)
        if not outside:
            return  # one clean pair with every measured field within its declared tolerance
    # timing on a loaded machine says nothing about the runners: it needs one clean pair. `--long` (run on a
    # quiet machine) must give one; in make test, which shares the machine with Docker builds and other suites,
    # the evaluator flagging its own windows as noisy is what it must do, and timing is then not compared.
    # (On the shared development VM the hypervisor steals 35-47% of a busy core's time, measured from
    # /proc/stat with nothing else running, so most windows there are flagged, rightly.)
    assert not disagreed, f"docker vs local outside the declared tolerance (docker, local, relative): {disagreed}"
    if not LONG:
        warnings.warn(f"timing not compared: every pair was measured on a loaded machine: {noisy}", stacklevel=1)
        return
    pytest.fail(f"every pair was measured on a loaded machine: {noisy}")


def test_the_local_worker_imports_only_what_the_image_holds(tmp_path):
    """The root of the memory gap: the host's extra packages. transformers imports scipy.optimize whenever scipy
    is importable (about 50 MB resident, two BLAS threads); the image has no scipy, so the local worker must not
    see it, nor anything else outside the image's closure of torch, transformers, psutil, pynvml, safetensors, numpy."""
    from dynadesk.orchestration import image, worker_site
    from dynadesk.orchestration.runners import LocalRunner, RunPaths

    view = worker_site.site_view(tmp_path / "views")
    assert worker_site.site_view(tmp_path / "views") == view  # cached
    cmd = LocalRunner().command(RunPaths(tmp_path, tmp_path, tmp_path, tmp_path))
    assert cmd[:3] == [sys.executable, "-I", "-S"] and cmd[-9:-7] == ["run", "--spec"]
    names = set(worker_site.closure())
    assert {n.replace("_", "-") for n in image.TOP_REQUIREMENTS} <= names and "scipy" not in names
    probe = ("import importlib.util as u, sys; import transformers.modeling_utils, dynadesk.evaluator.worker; "
             "print([m for m in ('scipy', 'sklearn', 'PySide6', 'pyarrow', 'docker', 'dynadesk.store') "
             "if m in sys.modules or u.find_spec(m) is not None])")
    out = subprocess.run([sys.executable, "-I", "-S", "-c", "import sys; sys.path[:0] = [sys.argv.pop(1)]; "
                          "exec(sys.argv.pop(1))", str(view), probe], capture_output=True, text=True, timeout=300)
    assert out.returncode == 0, out.stderr[-2000:]
    assert out.stdout.strip() == "[]", out.stdout
