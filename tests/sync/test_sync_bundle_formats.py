"""Bundle format versions: version 2 signs the run's typed fields, each schema-checked; version 1 still reads.

``assets/bundle_v1.json`` is a version-1 bundle written by the code before the typed run record
(``make_run``'s run with the flat ``settings`` object a Docker run recorded, its request inside it), and
``assets/bundle_v1_predictions.jsonl`` the predictions it commits to. It must still parse, verify and
audit: against a stored run it compares field by field, and its request is replayed by an audit re-run.
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest
from support import ASSETS
from support.sync import ensure_datasets, make_run, stored_model, workspace_with_key

from dynadesk.audit.audit import AuditOptions, audit_bundle
from dynadesk.audit.report import DIFFERS, IDENTICAL
from dynadesk.audit.rerun import recorded_request
from dynadesk.errors import BundleFormatError, SignatureError, UnsupportedVersionError
from dynadesk.store.evaluations import MetricValue, RunChange, RunSetup, WorkerSettings
from dynadesk.sync.client.create import create_bundle
from dynadesk.sync.format.envelope import load_and_verify, parse_bundle, sign_payload, verify_bundle
from dynadesk.sync.format.payload import parse_payload as check_payload

FIXTURES = ASSETS
OLD = FIXTURES / "bundle_v1.json"


def test_a_version_1_bundle_still_parses_and_verifies():
    bundle = load_and_verify(OLD.read_bytes())
    p = bundle.payload.to_json()
    assert bundle.version == 1 and "settings" in p and "worker_settings" not in p
    assert p["settings"]["request"]["model"] == "bow-a" and p["settings"]["batch_size"] == 32
    doc = json.loads(OLD.read_bytes())
    doc["payload"]["settings"]["batch_size"] = 64  # still signed: an edit is caught
    with pytest.raises(SignatureError):
        verify_bundle(parse_bundle(json.dumps(doc, sort_keys=True, separators=(",", ":")).encode()))


def _stored_like_the_old_run(tmp_path: Path):
    """A workspace holding the run the fixture was made from: same data, predictions and figures."""
    ws, store = workspace_with_key(tmp_path / "ws")
    ensure_datasets(store, size=12)  # the size the old code made the fixture with
    model = stored_model(store, "bow-a")
    names = ["vader-movies-test", "vader-tweets-test"]
    run = store.evaluations.create(model.id, "sentiment",
                                   RunSetup(worker=WorkerSettings(batch_size=32, seed=13, threads=2)), runner="docker",
                                   sandboxed=True, datasets=names, status="running")
    run_dir = Path(ws.runs_dir) / str(run)
    run_dir.mkdir(parents=True)
    shutil.copyfile(FIXTURES / "bundle_v1_predictions.jsonl", run_dir / "predictions.jsonl")
    metrics = [MetricValue(name, metric, value + i if metric in ("perf", "macro_f1") else value, "score", True)
               for i, name in enumerate(names)
               for metric, value in (("perf", 70.0), ("macro_f1", 70.0), ("robustness", 60.0), ("fairness", 80.0))]
    metrics += [MetricValue("", "throughput", 900.0, "examples/s", False),
                MetricValue("", "latency_p99_ms", 3.25, "ms", False), MetricValue("", "memory", 0.4, "GiB", False)]
    store.evaluations.set_metrics(run, metrics,
                                  RunChange(run_dir=str(run_dir),
                                            environment={"cpu": "Test CPU", "cores": 2, "python": "3.11.2",
                                                         "torch": "2.13.0", "gpu": None}), status="succeeded")
    return ws, store, run


def test_a_version_1_bundle_audits_against_a_stored_run(tmp_path):
    ws, store, run = _stored_like_the_old_run(tmp_path)
    try:
        report = audit_bundle(store, ws, OLD.read_bytes(), AuditOptions(against=run))
        assert report.get("structure").verdict == IDENTICAL and "version 1" in report.get("structure").note
        assert report.get("signature").verdict == IDENTICAL
        for name in ("datasets[vader-movies-test].digest", "datasets[vader-tweets-test].digest",
                     "predictions.digest", "predictions.merkle_root", "metrics[vader-movies-test].perf",
                     "metrics[vader-tweets-test].robustness"):
            assert report.get(name).verdict == IDENTICAL, report.get(name)
        assert not report.failures
        store.evaluations.set_metrics(run, [MetricValue("vader-movies-test", "perf", 71.5, "score", True)])
        changed = audit_bundle(store, ws, OLD.read_bytes(), AuditOptions(against=run))
        assert changed.get("metrics[vader-movies-test].perf").verdict == DIFFERS  # it does compare
    finally:
        store.close()


def test_an_audit_rerun_replays_the_request_a_version_1_bundle_signed():
    payload = parse_bundle(OLD.read_bytes()).payload
    request = recorded_request(payload, "bow-a.audit-1", "local", None)
    assert (request.model, request.runner, request.purpose) == ("bow-a.audit-1", "local", "audit")
    assert request.settings.batch_size == 32 and request.settings.seed == 13
    assert request.limits.to_dict() == payload.settings["request"]["limits"]


@pytest.fixture
def made(tmp_path):
    ws, store = workspace_with_key(tmp_path / "ws")
    run = make_run(store, ws.runs_dir)
    yield ws, store, run
    store.close()


def _with_request(ws, store, run):
    from dynadesk.orchestration.request import RunRequest, RunSettings

    request = RunRequest(model="bow-a", datasets=("vader-movies-test", "vader-tweets-test"),
                         settings=RunSettings(batch_size=32, seed=13))
    store.db.execute("UPDATE evaluations SET request = ? WHERE id = ?", [json.dumps(request.to_dict()), run])
    return create_bundle(ws, store, run), request


def test_version_2_signs_the_request_once_and_the_worker_settings(made):
    ws, store, run = made
    bundle, request = _with_request(ws, store, run)
    p = bundle.payload.to_json()
    assert bundle.version == 2 and json.loads(bundle.raw)["version"] == 2
    assert p["request"] == request.to_dict() and "settings" not in p
    assert p["worker_settings"]["batch_size"] == 32 and p["worker_settings"]["threads"] == 2
    rerun = recorded_request(bundle.payload, "bow-a.audit-1", "local", None)
    assert rerun.settings == request.settings and rerun.limits == request.limits


BAD_FIELDS = [
    (("request", "limits", "cpus"), -1, "payload.request.limits.cpus: must be a number above 0"),
    (("request", "limits", "swap"), 1, "payload.request.limits: unknown field(s) swap"),
    (("request", "settings", "batch_size"), 0, "payload.request.settings.batch_size: must be an integer >= 1"),
    (("request", "runner"), "Cloud Run", "payload.request.runner: has the wrong form"),
    (("request", "purpose"), "board", "payload.request.purpose: must be one of"),
    (("request", "datasets"), "all", "payload.request.datasets: must be a list"),
    (("worker_settings", "device"), "tpu", "payload.worker_settings.device: must be 'cpu' or 'cuda'"),
    (("worker_settings", "allow_pickle"), "yes", "payload.worker_settings.allow_pickle: must be true or false"),
    (("worker_settings", "padding"), "x", "payload.worker_settings: unknown field(s) padding"),
    (("worker_settings", "min_seconds"), 600, "payload.worker_settings.min_seconds: must be a number of seconds"),
]


@pytest.mark.parametrize(("path", "value", "message"), BAD_FIELDS, ids=[".".join(b[0]) for b in BAD_FIELDS])
def test_version_2_checks_each_typed_field_and_names_it(made, path, value, message):
    ws, store, run = made
    bundle, _ = _with_request(ws, store, run)
    payload = bundle.payload.to_json()
    target = payload
    for key in path[:-1]:
        target = target[key]
    target[path[-1]] = value
    with pytest.raises(BundleFormatError, match=message.replace("(", r"\(").replace(")", r"\)")):
        check_payload(payload)


def test_the_versions_do_not_mix(made):
    ws, store, run = made
    p = create_bundle(ws, store, run).payload.to_json()
    mixed = {**p, "settings": {"batch_size": 32}}
    with pytest.raises(BundleFormatError, match="unknown field"):
        check_payload(mixed)  # version 2 has no free settings object
    with pytest.raises(BundleFormatError, match="missing field.s. settings"):
        check_payload(p, version=1)  # nor does version 1 know the typed fields
    with pytest.raises(BundleFormatError, match="unknown field.s. worker_settings"):
        check_payload({**p, "settings": {}}, version=1)
    doc = json.loads(OLD.read_bytes())
    doc["version"] = 3
    with pytest.raises(UnsupportedVersionError, match="version 3 is not supported .*reads version 1 and 2"):
        parse_bundle(json.dumps(doc, sort_keys=True, separators=(",", ":")).encode())


def test_attestations_stay_version_1(made):
    """The envelope is shared; only bundles moved to version 2."""
    from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey

    from dynadesk.sync.format.envelope import envelope_bytes, split_envelope

    key = Ed25519PrivateKey.generate()
    raw = envelope_bytes(b"{}", bytes(32), key.sign(b"{}"), "dynadesk-attestation")
    assert raw.endswith(b'"version":1}')
    with pytest.raises(UnsupportedVersionError):
        split_envelope(raw.replace(b'"version":1}', b'"version":2}'), "attestation", "dynadesk-attestation")
    assert sign_payload  # the bundle signer writes version 2 (test_version_2_signs_... above)


def test_the_servers_first_look_frames_both_versions_and_names_the_rest():
    """``split_envelope`` (the server's cheap first look) finds a version-1 bundle's signed bytes by position."""
    from dynadesk.sync.format.envelope import split_envelope

    raw = OLD.read_bytes()
    env = split_envelope(raw)
    assert env.payload_bytes == parse_bundle(raw).payload_bytes
    env.verify("old bundle")
    with pytest.raises(BundleFormatError, match="not valid JSON"):
        split_envelope(raw[:-1])
    with pytest.raises(UnsupportedVersionError, match="version 9"):
        split_envelope(raw[: -len(b'1}')] + b"9}")
