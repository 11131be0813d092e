"""The audit checks a bundle's runner against this installation's runner registry (the bundle format, a leaf,
checks only the name's form): a sandbox claim the registered runner cannot make fails; an unknown runner is said.

Real SQLite workspace, a real tiny model folder, real signed bundles; no mocks.
"""

from __future__ import annotations

import pytest
from support.sync import LABELS, make_run, signed_payload, workspace_with_key
from support.tiny_models import make_tiny_classifier

from dynadesk.audit.audit import audit_bundle
from dynadesk.audit.report import DIFFERS, IDENTICAL, NOT_COMPARABLE
from dynadesk.sync.client.create import create_bundle


@pytest.fixture
def made(home, tmp_path):
    from dynadesk.models.registry import register_model

    ws, store = workspace_with_key(home)
    folder = make_tiny_classifier(tmp_path / "tiny", list(LABELS), task="sentiment")
    register_model(store, folder, "sentiment", name="tiny")
    bundle = create_bundle(ws, store, make_run(store, ws.runs_dir, model="tiny"))
    yield ws, store, bundle
    store.close()


def _with_runner(bundle, ws, kind: str, sandboxed: bool) -> bytes:
    payload = bundle.payload.to_json()
    payload["runner"] = {"kind": kind, "sandboxed": sandboxed}
    if payload.get("request"):
        payload["request"]["runner"] = kind
    return signed_payload(payload, ws).raw


def test_a_registered_runners_claim_checks_out(made):
    ws, store, bundle = made
    check = audit_bundle(store, ws, bundle.raw).get("runner")
    assert check.verdict == IDENTICAL and not check.fails, check


def test_a_local_run_claiming_a_sandbox_fails_the_audit(made):
    """Attack: sign a local (unsandboxed) run as sandboxed, so the public board lists it under sandboxed=yes."""
    ws, store, bundle = made
    report = audit_bundle(store, ws, _with_runner(bundle, ws, "local", True))
    check = report.get("runner")
    assert check.verdict == DIFFERS and check.fails and not report.ok
    assert "local" in check.note and "not sandboxed" in check.note


def test_an_unregistered_runner_verifies_and_is_named(made):
    ws, store, bundle = made
    report = audit_bundle(store, ws, _with_runner(bundle, ws, "k8s-gvisor", True))
    assert report.get("structure").verdict == IDENTICAL and report.get("signature").verdict == IDENTICAL
    check = report.get("runner")
    assert check.verdict == NOT_COMPARABLE and not check.fails and "not registered here" in check.note
