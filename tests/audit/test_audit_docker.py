"""One audit in Docker: a sandboxed run is bundled, then re-run in the recorded image (by its Id)."""

from __future__ import annotations

import pytest
from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey
from support.eval import run_request, setup_workspace

from dynadesk.audit.audit import AuditOptions, audit_bundle
from dynadesk.audit.report import DETERMINISTIC, DIFFERS, IDENTICAL, NOT_COMPARABLE
from dynadesk.sync.format import keys as K
from dynadesk.sync.format.envelope import sign_payload
from dynadesk.workspace import Workspace

pytestmark = [pytest.mark.docker, pytest.mark.timeout(1800)]  # the fixture may build the image, or wait for a build


def test_a_docker_bundle_reruns_in_the_recorded_image_identically(home, store, tmp_path, evaluator_image,
                                                                  docker_client):
    from dynadesk.orchestration.evaluate import default_limits, evaluate
    from dynadesk.sync.client.create import create_bundle
    from dynadesk.sync.format.keys import generate_key

    ws = Workspace(home)
    generate_key(ws.keys_dir)
    setup_workspace(store, tmp_path, sizes=(12, 6))
    limits = default_limits(cpus=2.0, memory_bytes=2 << 30, timeout_s=600)
    run = evaluate(store, ws, run_request("tiny", runner="docker", batch_size=4, latency_samples=4, warmup=1,
                                          limits=limits), client=docker_client)
    assert run.status == "succeeded", run.error
    bundle = create_bundle(ws, store, run.id)
    assert bundle.payload.to_json()["evaluator"]["image_digest"] == evaluator_image.image_id
    assert bundle.payload.to_json()["runner"] == {"kind": "docker", "sandboxed": True}

    report = audit_bundle(store, ws, bundle.raw, AuditOptions(rerun=True), client=docker_client)
    # deterministic fields must reproduce; measured ones may differ with noise (tests/audit/test_audit_measured.py)
    assert not report.failures and not report.incomplete, [c for c in report.checks if c.verdict != IDENTICAL]
    image = report.get("evaluator.image_digest")
    assert image.verdict == IDENTICAL and image.actual == evaluator_image.image_id
    rerun = store.evaluations.get(report.rerun_id)
    assert rerun.runner == "docker" and rerun.sandboxed and rerun.image_id == evaluator_image.image_id
    assert rerun.environment["in_container"] and rerun.environment["threads"] == run.environment["threads"]
    det = [c for c in report.checks if c.kind == DETERMINISTIC]
    assert len(det) > 12 and all(c.verdict == IDENTICAL for c in det), [c for c in det if c.verdict != IDENTICAL]

    # the same bundle claiming another image (re-signed by someone else): named, with how to rebuild
    payload = bundle.payload.to_json()
    payload["evaluator"]["image_digest"] = "sha256:" + "0" * 64
    key = Ed25519PrivateKey.generate()
    payload["submitter"]["key_fingerprint"] = K.fingerprint(K.public_raw(key))
    other = audit_bundle(store, ws, sign_payload(payload, key).raw, AuditOptions(rerun=True), client=docker_client)
    image = other.get("evaluator.image_digest")
    assert image.verdict == DIFFERS and image.actual == evaluator_image.image_id
    assert "dynadesk image build" in image.note and payload["evaluator"]["version"] in image.note
    assert other.incomplete and other.get("rerun").verdict == NOT_COMPARABLE
    assert "is not in Docker" in other.get("rerun").note and "--runner local" in other.get("rerun").note
