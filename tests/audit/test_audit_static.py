"""Audits without a re-run: signature, model folder, datasets, tolerances, comparison with a stored run.

Real SQLite workspaces, a real tiny model folder, real signed bundles; no mocks.
"""

from __future__ import annotations

import copy
import json
import math
import shutil

import pytest
from click.testing import CliRunner
from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey
from support.payloads import metric, typed
from support.sync import LABELS, make_run, workspace_with_key
from support.tiny_models import make_tiny_classifier

from dynadesk.audit.audit import AuditOptions, audit_bundle
from dynadesk.audit.compare import compare_metric
from dynadesk.audit.report import DIFFERS, IDENTICAL, NOT_COMPARABLE, WITHIN
from dynadesk.audit.tolerances import DEFAULTS, check_tolerances
from dynadesk.canonical import canonical_bytes
from dynadesk.cli import cli
from dynadesk.errors import BundleFormatError, SignatureError
from dynadesk.sync.client.create import create_bundle
from dynadesk.sync.format import keys as K
from dynadesk.sync.format.envelope import parse_bundle, sign_payload, verify_bundle


@pytest.fixture(scope="module")
def model_folder(tmp_path_factory):
    return make_tiny_classifier(tmp_path_factory.mktemp("m") / "tiny", list(LABELS), task="sentiment")


@pytest.fixture
def made(home, tmp_path, model_folder):
    from dynadesk.models.registry import register_model

    ws, store = workspace_with_key(home)
    folder = shutil.copytree(model_folder, tmp_path / "tiny")
    register_model(store, folder, "sentiment", name="tiny")
    run = make_run(store, ws.runs_dir, model="tiny")
    bundle = create_bundle(ws, store, run)
    yield ws, store, run, bundle, folder
    store.close()


def _resign(payload: dict) -> bytes:
    """Sign an edited payload with a fresh key, as a forger holding no one's key must."""
    key = Ed25519PrivateKey.generate()
    payload = copy.deepcopy(payload)
    payload["submitter"]["key_fingerprint"] = K.fingerprint(K.public_raw(key))
    return sign_payload(payload, key).raw


def test_an_untouched_bundle_checks_out(made):
    ws, store, run, bundle, folder = made
    report = audit_bundle(store, ws, bundle.raw)
    assert report.ok and not report.incomplete
    for name in ("structure", "signature", "model.digest", "datasets[vader-movies-test].digest",
                 "datasets[vader-tweets-test].digest"):
        assert report.get(name).verdict == IDENTICAL, report.get(name)
    code = report.get("evaluator.version")  # the helper's run records a made-up evaluator version
    assert code.verdict == DIFFERS and not code.fails and "local re-run runs other code" in code.note
    assert report.get("model.digest").actual == bundle.payload.to_json()["model"]["digest"]
    assert "declared by the bundle" in report.notes[0]
    assert "--rerun" in report.notes[-1]


def test_a_model_folder_altered_by_one_byte_is_named(made, tmp_path):
    ws, store, run, bundle, folder = made
    altered = shutil.copytree(folder, tmp_path / "altered")
    weights = altered / "model.safetensors"
    data = bytearray(weights.read_bytes())
    data[-1] ^= 0x01
    weights.write_bytes(bytes(data))
    report = audit_bundle(store, ws, bundle.raw, AuditOptions(model_path=altered))
    check = report.get("model.digest")
    assert check.verdict == DIFFERS and check.expected == bundle.payload.to_json()["model"]["digest"]
    assert check.actual != check.expected and str(altered) in check.note
    assert [c.field for c in report.failures] == ["model.digest"]

    path = tmp_path / "b.json"
    path.write_bytes(bundle.raw)
    res = CliRunner().invoke(cli, ["audit", str(path), "--model", str(altered), "--json"])
    assert res.exit_code == 1, res.output
    out = json.loads(res.output)
    assert out["failures"] == ["model.digest"] and out["ok"] is False
    res = CliRunner().invoke(cli, ["audit", str(path), "--model", str(folder)])
    assert res.exit_code == 0 and "OK" in res.output.splitlines()[-1]


def test_an_edited_metric_resigned_with_another_key_gets_the_precise_verdict(made):
    ws, store, run, bundle, folder = made
    payload = bundle.payload.to_json()
    target = next(m for m in payload["metrics"] if m["metric"] == "perf" and m["dataset"] == "vader-tweets-test")
    target["value"] = math.nextafter(target["value"], math.inf)  # one ulp: only bit-for-bit catches it
    forged = _resign(payload)
    report = audit_bundle(store, ws, forged, AuditOptions(against=run))
    sig = report.get("signature")
    assert sig.verdict == IDENTICAL and sig.expected != bundle.key_fingerprint  # valid, but someone else's key
    check = report.get("metrics[vader-tweets-test].perf")
    assert check.verdict == DIFFERS and check.expected == target["value"] and check.actual == target["value"] - \
        (target["value"] - math.nextafter(target["value"], -math.inf))
    assert [c.field for c in report.failures] == ["metrics[vader-tweets-test].perf"]
    assert report.get("predictions.merkle_root").verdict == IDENTICAL
    assert report.get("metrics[vader-movies-test].perf").verdict == IDENTICAL


def test_a_bundle_edited_without_re_signing_fails_its_signature(made):
    ws, store, run, bundle, folder = made
    doc = json.loads(bundle.raw)
    doc["payload"]["metrics"][0]["value"] += 1
    report = audit_bundle(store, ws, canonical_bytes(doc))
    assert report.get("signature").verdict == DIFFERS and "SignatureError" in report.get("signature").note
    assert "signature" in [c.field for c in report.failures]


def test_datasets_missing_or_of_another_version_are_named_with_how_to_get_them(made):
    ws, store, run, bundle, folder = made
    examples = store.datasets.examples("vader-tweets-test")
    store.datasets.remove("vader-tweets-test")
    from dynadesk.datasets import dataset_digest

    changed = [dict(e, statement=e["statement"] + "!") if i == 0 else e for i, e in enumerate(examples)]
    store.datasets.add("tweets-copy", "sentiment", "test", examples, dataset_digest(examples), {})
    store.datasets.remove("vader-movies-test")
    store.datasets.add("vader-movies-test", "sentiment", "test", changed, dataset_digest(changed), {})
    report = audit_bundle(store, ws, bundle.raw)
    missing = report.get("datasets[vader-tweets-test].digest")
    assert missing.verdict == NOT_COMPARABLE and "'tweets-copy' has the same digest" in missing.note
    other = report.get("datasets[vader-movies-test].digest")
    assert other.verdict == DIFFERS and "dynadesk data fetch-default" in other.note
    store.datasets.remove("tweets-copy")
    assert "dynadesk data fetch-default" in audit_bundle(store, ws, bundle.raw).get(
        "datasets[vader-tweets-test].digest").note


def test_a_rerun_without_the_model_folder_is_incomplete_not_ok(made, tmp_path):
    ws, store, run, bundle, folder = made
    shutil.rmtree(folder)
    report = audit_bundle(store, ws, bundle.raw, AuditOptions(rerun=True, runner="local"))
    assert report.get("model.digest").verdict == NOT_COMPARABLE
    assert report.get("rerun").verdict == NOT_COMPARABLE and "pass --model" in report.get("rerun").note
    assert report.incomplete and report.ok
    path = tmp_path / "b.json"
    path.write_bytes(bundle.raw)
    assert CliRunner().invoke(cli, ["audit", str(path), "--rerun", "--runner", "local"]).exit_code == 3


def test_tolerances_are_signed_validated_and_optional(made):
    ws, store, run, bundle, folder = made
    declared = bundle.payload.to_json()["tolerances"]
    assert declared == {m: {"relative": DEFAULTS[m]} for m in ("latency_p99_ms", "memory", "throughput")}
    doc = json.loads(bundle.raw)
    doc["payload"]["tolerances"]["throughput"]["relative"] = 5
    with pytest.raises(SignatureError):
        verify_bundle(parse_bundle(canonical_bytes(doc)))
    for bad in ({"throughput": 0.5}, {"throughput": {"relative": -1}}, {"throughput": {"relative": True}},
                {"throughput": {"relative": 0.5, "absolute": 1}}, [], {"": {"relative": 1}}):
        with pytest.raises(BundleFormatError, match="payload.tolerances"):
            check_tolerances(bad)
        doc = json.loads(bundle.raw)
        doc["payload"]["tolerances"] = bad
        with pytest.raises(BundleFormatError):
            parse_bundle(canonical_bytes(doc))
    old = bundle.payload.to_json()
    del old["tolerances"]  # a bundle made before the field existed
    report = audit_bundle(store, ws, _resign(old), AuditOptions(against=run))
    assert "declares none" in report.notes[0]
    assert report.get("metrics[(run)].memory").tolerance == DEFAULTS["memory"]
    assert "(default)" in report.get("metrics[(run)].memory").note


def test_measured_fields_use_the_declared_tolerance_and_scores_cannot_buy_one():
    payload = {"tolerances": {"throughput": {"relative": 0.1}}, "metrics": []}
    m = {"dataset": "", "metric": "throughput", "value": 100.0, "unit": "examples/s", "deterministic": False}
    assert compare_metric(typed(payload), metric(m), 109.0, "", "run 9").verdict == WITHIN
    c = compare_metric(typed(payload), metric(m), 89.0, "", "run 9")  # the claim is 12.4% above the re-measurement
    assert c.verdict == DIFFERS and c.unreproduced and not c.fails and c.tolerance == 0.1
    assert "+12.4%" in c.note
    c = compare_metric(typed(payload), metric(m), 89.0, "another hardware class (bundle: A; here: B)", "run 9")
    assert c.verdict == NOT_COMPARABLE and not c.unreproduced and "another hardware class" in c.note
    perf = {"dataset": "d", "metric": "perf", "value": 70.0, "unit": "score", "deterministic": False}
    c = compare_metric(typed(payload), metric(perf), 70.0000001, "", "run 9")
    assert c.verdict == DIFFERS and c.fails and "schema says deterministic" in c.note


def test_the_image_hint_names_the_recorded_build_epoch(made):
    """The bundle signs the image build's SOURCE_DATE_EPOCH and input digest; the audit's hint gives the command."""
    from support.sync import IMAGE_EPOCH

    from dynadesk.audit.inputs import rebuild_command, rebuild_hint

    ws, store, run, bundle, folder = made
    ev = bundle.payload.to_json()["evaluator"]
    assert ev["source_date_epoch"] == IMAGE_EPOCH and ev["input_digest"] == "sha256:" + "ef" * 32
    image = audit_bundle(store, ws, bundle.raw).get("evaluator.image_digest")
    assert image.verdict == NOT_COMPARABLE and image.expected == ev["image_digest"]  # the helper's Id is made up
    assert f"'dynadesk image build --epoch {IMAGE_EPOCH}'" in image.note
    assert ev["input_digest"] in image.note and ev["version"] in image.note
    assert rebuild_command(ev) == f"dynadesk image build --epoch {IMAGE_EPOCH}"
    old = {"image_digest": ev["image_digest"], "version": ev["version"]}  # a bundle from before the field
    assert rebuild_command(old) == "dynadesk image build"
    assert "does not record the build's SOURCE_DATE_EPOCH" in rebuild_hint(ev["version"], old)


def test_a_docker_run_records_the_build_of_its_image(tmp_path):
    """What evaluate() stores for a Docker run: the record of the image with the run's Id in the images cache."""
    from dynadesk.orchestration.evaluate import image_build
    from dynadesk.orchestration.image import ImageRecord, build_inputs

    def record(image_id: str, epoch: int, inputs: str, created: str) -> None:
        r = ImageRecord(tag="dynadesk-evaluator:x", image_id=image_id, layer_digest="sha256:" + "1" * 64,
                        input_digest=inputs, evaluator_version="sha256:" + "2" * 64, schema_version=1,
                        source_date_epoch=epoch, created=created, archive="a.tar", archive_sha256="3" * 64,
                        size_bytes=1, debootstrap_tarball="d.tgz", debootstrap_sha256="4" * 64, mirror="m",
                        suite="bookworm")
        folder = tmp_path / "images"
        folder.mkdir(exist_ok=True)
        (folder / f"{inputs[7:23]}.json").write_text(json.dumps(r.to_dict()), encoding="utf-8")

    record("sha256:" + "a" * 64, 1_600_000_000, "sha256:" + "b" * 64, "2024-01-01T00:00:00Z")
    record("sha256:" + "c" * 64, 1_700_000_000, "sha256:" + "d" * 64, "2024-02-01T00:00:00Z")
    assert build_inputs(tmp_path, "sha256:" + "a" * 64) == {"source_date_epoch": 1_600_000_000,
                                                            "input_digest": "sha256:" + "b" * 64}
    assert image_build(tmp_path, "sha256:" + "c" * 64)["source_date_epoch"] == 1_700_000_000
    assert build_inputs(tmp_path, "sha256:" + "e" * 64) is None  # built elsewhere: nothing is claimed
    assert image_build(tmp_path, None) is None and image_build(None, "sha256:" + "a" * 64) is None
