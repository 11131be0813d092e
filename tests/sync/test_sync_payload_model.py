"""The typed bundle payload: parsed on construction, the signed bytes given back exactly, one model for both versions,
and a signed field added through the model and its writer alone (issue 48, item 1)."""

from __future__ import annotations

import dataclasses
import json
from dataclasses import dataclass

import pytest
from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey
from fastapi.testclient import TestClient
from support import ASSETS
from support.sync import make_run, workspace_with_key

from dynadesk.errors import BundleFormatError
from dynadesk.sync.client import create as _create
from dynadesk.sync.client.create import create_bundle
from dynadesk.sync.format import payload as _payload
from dynadesk.sync.format.canonical import canonical_bytes
from dynadesk.sync.format.envelope import load_and_verify, parse_bundle, sign_payload
from dynadesk.sync.format.keys import key_info, load_private_key
from dynadesk.sync.format.parts import Metric, WorkerSettings
from dynadesk.sync.format.payload import Payload, parse_payload, signed
from dynadesk.sync.format.schema import text


@pytest.fixture
def made(tmp_path):
    ws, store = workspace_with_key(tmp_path / "ws")
    run = make_run(store, ws.runs_dir)
    yield ws, store, run
    store.close()


def _fixtures() -> list[bytes]:
    """Every stored well-formed bundle: the version-1 fixture and the version-2 ones the malformed set starts from."""
    out = [(ASSETS / "bundle_v1.json").read_bytes()]
    for path in sorted((ASSETS / "malformed").glob("*.json")):
        try:
            parse_bundle(path.read_bytes())
        except BundleFormatError:
            continue
        out.append(path.read_bytes())
    return out


def test_the_model_gives_back_the_signed_bytes_of_every_stored_bundle():
    raws = _fixtures()
    assert {parse_bundle(r).version for r in raws} == {1, 2} and len(raws) >= 3
    for raw in raws:
        bundle = parse_bundle(raw)
        assert canonical_bytes(bundle.payload.to_json()) == bundle.payload_bytes
    old = load_and_verify((ASSETS / "bundle_v1.json").read_bytes())  # still verifies, bit for bit
    assert isinstance(old.payload, Payload) and old.payload.version == 1
    assert old.payload.worker_settings is None and old.payload.settings is not None


def test_a_bundle_made_now_resigns_from_its_model_to_the_same_bytes(made):
    ws, store, run = made
    bundle = create_bundle(ws, store, run)
    assert canonical_bytes(bundle.payload.to_json()) == bundle.payload_bytes
    key = load_private_key(key_info(ws.keys_dir).private_path)
    again = sign_payload(bundle.payload, key)  # signed from the typed model: the same payload, the same id
    assert again.payload_bytes == bundle.payload_bytes and again.id == bundle.id and again.payload == bundle.payload
    p = bundle.payload
    assert isinstance(p.worker_settings, WorkerSettings) and p.worker_settings.batch_size == 32
    assert all(isinstance(m, Metric) for m in p.metrics) and p.dataset_names == [d.name for d in p.datasets]


def test_an_optional_setting_absent_and_one_present_as_null_keep_their_bytes(made):
    ws, store, run = made
    doc = create_bundle(ws, store, run).payload.to_json()
    for threads in ("absent", None, 3):
        settings = {k: v for k, v in doc["worker_settings"].items() if k != "threads"}
        if threads != "absent":
            settings["threads"] = threads
        p = parse_payload({**doc, "worker_settings": settings})
        assert canonical_bytes(p.to_json()) == canonical_bytes({**doc, "worker_settings": settings})
        assert p.worker_settings is not None and p.worker_settings.threads == (None if threads == "absent" else threads)


def test_the_model_is_frozen_and_a_malformed_payload_never_becomes_one(made):
    ws, store, run = made
    bundle = create_bundle(ws, store, run)
    with pytest.raises(dataclasses.FrozenInstanceError):
        bundle.payload.task = "other"  # type: ignore[misc]
    with pytest.raises(dataclasses.FrozenInstanceError):
        bundle.payload.metrics[0].value = 99.0  # type: ignore[misc]
    doc = bundle.payload.to_json()
    doc["metrics"][1]["value"] = float("inf")
    with pytest.raises(BundleFormatError, match=r"^bundle payload\.metrics\[1\]\.value: must be a finite number"):
        parse_payload(doc)
    doc = bundle.payload.to_json()
    doc["worker_settings"]["batch_size"] = 0
    with pytest.raises(BundleFormatError,
                       match=r"^bundle payload\.worker_settings\.batch_size: must be an integer >= 1"):
        parse_payload(doc)


# --------------------------------------------------------------------------------------------- must show
@dataclass(frozen=True, slots=True, kw_only=True)
class WithNote(Payload):
    """The model with one more signed field, as a developer would add it to ``Payload`` (one declaration)."""

    note: str | None = signed(lambda v, w, _: text(v, w, max_len=64), type_="string", optional=True,
                              doc="a free note from the submitter")


def test_a_signed_field_added_through_the_model_and_its_writer_reaches_every_reader(made, tmp_path, monkeypatch):
    """The claim of issue 48: a new signed field touches the model and its writer only. The model change is
    :class:`WithNote` put where every reader parses (``payload.Payload``); the writer change is one key in
    ``build_payload``. Nothing else is edited, and the bundle signs, parses back with the field as an attribute,
    verifies, is accepted by the server and audits exactly as the same run without it."""
    from dynadesk.audit.audit import AuditOptions, audit_bundle
    from dynadesk.sync.server.admin import import_workspace_datasets
    from dynadesk.sync.server.app import ServerOptions, create_app
    from dynadesk.sync.server.db import ServerDB

    ws, store, run = made
    plain = create_bundle(ws, store, run)
    doc = plain.payload.to_json()
    with pytest.raises(BundleFormatError, match="unknown field.s. note"):  # before the model knows it: refused
        parse_payload({**doc, "note": "hello"})

    monkeypatch.setattr(_payload, "Payload", WithNote)  # the model change
    writer = _create.build_payload
    monkeypatch.setattr(_create, "build_payload", lambda *a, **k: {**writer(*a, **k), "note": "hello"})  # the writer's
    noted = create_bundle(ws, store, run)
    assert isinstance(noted.payload, WithNote) and noted.payload.note == "hello"
    assert json.loads(noted.payload_bytes)["note"] == "hello" and noted.id != plain.id
    assert canonical_bytes(noted.payload.to_json()) == noted.payload_bytes
    load_and_verify(noted.raw)
    with pytest.raises(BundleFormatError, match=r"payload\.note: must be a non-empty string"):
        parse_payload({**doc, "note": ""})  # the new field is checked like every other

    db_path = tmp_path / "server.db"
    db = ServerDB(db_path)
    info = key_info(ws.keys_dir)
    db.add_key(info.fingerprint, bytes.fromhex(info.public_key_hex), "alice")
    import_workspace_datasets(db, ws.home)
    db.close()
    app = create_app(db_path, tmp_path / "server.key", options=ServerOptions(verify_processes=0))
    with TestClient(app) as client:
        answer = client.post("/api/bundles", content=noted.raw)
        assert answer.status_code == 201, answer.text
        page = client.get(f"/models/{noted.id}")
        assert page.status_code == 200 and "bow-a" in page.text

    def verdicts(raw: bytes) -> list[tuple[str, str]]:
        report = audit_bundle(store, ws, raw, AuditOptions(against=run))
        return sorted((c.field, c.verdict) for c in report.checks)
    assert verdicts(noted.raw) == verdicts(plain.raw)


def test_a_version_1_payload_is_not_signed_as_version_2():
    doc = parse_bundle((ASSETS / "bundle_v1.json").read_bytes()).payload.to_json()
    with pytest.raises(BundleFormatError):  # a version-1 payload cannot be signed as version 2
        sign_payload(doc, Ed25519PrivateKey.generate())
