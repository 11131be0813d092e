"""A hardware-class text with NUL (issue 45, smaller ones): a bundle whose environment names a CPU model with a NUL
or another control character is refused with 422 naming the field, on SQLite and on PostgreSQL alike; before, both
backends stored it and the board showed a hardware class holding a NUL."""

from __future__ import annotations

import pytest
from fastapi.testclient import TestClient
from support.sync import make_run, workspace_with_key

from dynadesk.sync.client.create import build_payload
from dynadesk.sync.format import keys as K
from dynadesk.sync.format.canonical import canonical_bytes
from dynadesk.sync.format.envelope import envelope_bytes
from dynadesk.sync.format.keys import PRIVATE_NAME, key_info, load_private_key
from dynadesk.sync.server.admin import register_dataset
from dynadesk.sync.server.app import create_app
from dynadesk.sync.server.db import ServerDB
from dynadesk.sync.server.limits import Rate, UploadLimits


def _forge(payload: dict, ws) -> bytes:
    """Signed by the registered key whatever the payload says (the client's own check would refuse it)."""
    key = load_private_key(ws.keys_dir / PRIVATE_NAME)
    body = canonical_bytes(payload)
    return envelope_bytes(body, K.public_raw(key), key.sign(body))


@pytest.mark.parametrize(("where", "bad"), [
    (("hardware", "cpu_model"), "Xeon\x00 Gold"),
    (("cpu_model",), "Xeon\x1b[31m"),
    (("hardware", "gpus"), "A100\u202e x 1"),
])
def test_a_control_character_in_the_hardware_class_is_refused_on_both_backends(tmp_path, db_target, where, bad):
    ws, store = workspace_with_key(tmp_path / "ws")
    admin = ServerDB(db_target)
    info = key_info(ws.keys_dir)
    admin.add_key(info.fingerprint, bytes.fromhex(info.public_key_hex), "alice")
    app = create_app(db_target, tmp_path / "server.key", limits=UploadLimits(Rate(1e6, 10 ** 6), Rate(1e6, 10 ** 6)))
    client = TestClient(app, raise_server_exceptions=False)
    try:
        ev = make_run(store, ws.runs_dir)
        for d in store.evaluations.get(ev).datasets:
            ds = store.datasets.get(d)
            register_dataset(admin, "sentiment", d, digest=ds.digest, size=ds.size)
        payload = build_payload(store, ev, info.fingerprint)
        env = payload["environment"]
        if where[0] == "hardware":
            env["hardware"] = {"cpu_model": "Xeon", "cores": 2, "memory_limit_gib": 4, "gpus": "none",
                               "runtime": "cpu"}
        target = env
        for key in where[:-1]:
            target = target[key]
        target[where[-1]] = bad
        r = client.post("/api/bundles", content=_forge(payload, ws), headers={"Content-Type": "application/json"})
        assert r.status_code == 422, r.text
        assert f"payload.environment.{'.'.join(where)}" in r.json()["detail"], r.json()
        assert admin.count_bundles() == 0
        payload["environment"] = build_payload(store, ev, info.fingerprint)["environment"]  # the honest one: stored
        r = client.post("/api/bundles", content=_forge(payload, ws), headers={"Content-Type": "application/json"})
        assert r.status_code == 201, r.text
    finally:
        client.close()
        store.close()
        admin.close()
        app.state.db.close()
