"""Handler models in the Docker sandbox: the good one goes register -> evaluate -> signed bundle -> audit re-run with
every deterministic field identical; each broken one fails the run naming its cause. The network case shows the
sandbox has none: the kernel refuses the handler's connection (not only the evaluator's hook)."""

from __future__ import annotations

import pytest
from support.eval import add_test_set, run_request
from support.handler_models import make_handler_model

from dynadesk.models import register_model
from dynadesk.orchestration.evaluate import default_limits, evaluate
from dynadesk.workspace import Workspace

pytestmark = [pytest.mark.docker, pytest.mark.timeout(1800)]  # the fixture may build the image, or wait for a build
LIMITS = dict(cpus=1.0, memory_bytes=2 << 30, timeout_s=300)


def test_a_handler_model_evaluates_in_the_sandbox_and_its_bundle_audits(home, store, tmp_path, evaluator_image,
                                                                        docker_client):
    from dynadesk.audit.audit import AuditOptions, audit_bundle
    from dynadesk.audit.report import DETERMINISTIC, IDENTICAL
    from dynadesk.sync.client.create import create_bundle
    from dynadesk.sync.format.keys import generate_key

    ws = Workspace(home)
    generate_key(ws.keys_dir)
    record = register_model(store, make_handler_model(tmp_path / "kw"), "sentiment", name="kw")
    add_test_set(store, "set0-test", 12, seed=0)
    run = evaluate(store, ws, run_request("kw", runner="docker", batch_size=4, latency_samples=4, warmup=1,
                                          limits=default_limits(**LIMITS)), client=docker_client)
    assert run.status == "succeeded", run.error + run.log[-2000:]
    bundle = create_bundle(ws, store, run.id)
    assert (bundle.payload.runner.kind, bundle.payload.runner.sandboxed) == ("docker", True)
    assert bundle.payload.model.digest == record.digest
    report = audit_bundle(store, ws, bundle.raw, AuditOptions(rerun=True), client=docker_client)
    assert not report.failures and not report.incomplete, [c for c in report.checks if c.verdict != IDENTICAL]
    det = [c for c in report.checks if c.kind == DETERMINISTIC]
    assert len(det) > 8 and all(c.verdict == IDENTICAL for c in det), [c for c in det if c.verdict != IDENTICAL]
    assert report.get("predictions.merkle_root").actual == bundle.payload.predictions.merkle_root


# crash (a failure inside the container reaches the run's error) and network (the kernel refuses: the sandbox has
# none) run always; the other causes are named by the same guard, tested fast without Docker
# (tests/models/test_models_handler.py), and run here too with --long
LONG = pytest.mark.long


@pytest.mark.parametrize("behaviour,evidence", [
    ("crash", ["predict raised ValueError: HANDLER crash on purpose at handler.py line"]),
    ("network", ["predict tried the network", "Network is unreachable"]),
    pytest.param("hang", ["predict did not return within 2 s (a hang)"], marks=LONG),
    pytest.param("wrong_shape", ["predict returned a list of", "(the wrong shape)"], marks=LONG),
    pytest.param("print", ["predict printed to standard output ('HANDLER says hello"], marks=LONG),
])
def test_a_broken_handler_fails_the_sandboxed_run_naming_the_cause(behaviour, evidence, home, store, tmp_path,
                                                                   evaluator_image, docker_client):
    register_model(store, make_handler_model(tmp_path / behaviour, behaviour, timeout_s=2), "sentiment",
                   name=behaviour)
    add_test_set(store, "set0-test", 6, seed=0, perturbed=False)
    run = evaluate(store, Workspace(home), run_request(behaviour, runner="docker", batch_size=4,
                                                       limits=default_limits(**LIMITS)), client=docker_client)
    assert run.status == "failed", run.log[-2000:]
    assert "/model/handler.py" in run.error and all(e in run.error for e in evidence), run.error
