"""Filler rows cannot steer the public board's exchange rates (issue 32, item 1), on a real server.

Four honest rows (Lab A, Lab C) are reproduced by an auditor; Lab B, a registered submitter, then
uploads 20 low-performance rows with identical throughput and memory, every value in range. On
the previous server code the AMRS was a mean over every ranked row's neighbouring pairs, so those
rows shrank the rates and reversed the honest order (seen failing first: the order and the
Dynascores changed). Now the rates come from the reproduced rows, and the board says so.
"""

from __future__ import annotations

import hashlib
from pathlib import Path
from typing import Any

import pytest
from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey
from support.sync import NO_LIMITS, free_port, make_run, start_server, stop_server, workspace_with_key
from test_server_adversarial import LABS, TASK, Board

from dynadesk.sync.client.create import build_payload
from dynadesk.sync.format import keys as K
from dynadesk.sync.format.attestation import sign_attestation
from dynadesk.sync.server.db import ServerDB

HONEST = (("Lab A", "roberta", 75.0, 300.0, 2.0), ("Lab A", "bert", 71.0, 500.0, 1.5),
          ("Lab C", "distil", 65.0, 1500.0, 0.6), ("Lab C", "bow", 60.0, 2500.0, 0.3))


class RefBoard(Board):
    """The adversarial board on a given database (SQLite file or PostgreSQL URL), with an auditor key and
    per-row throughput and memory."""

    def __init__(self, root: Path, target: Path | str, auditor: Ed25519PrivateKey):
        self.ws, self.store = workspace_with_key(root / "ws")
        self.template = build_payload(self.store, make_run(self.store, self.ws.runs_dir, model="bert"), "x")
        self.keys = {lab: Ed25519PrivateKey.generate() for lab in LABS}
        db = ServerDB(target)
        for lab, key in self.keys.items():
            db.add_key(self.fp(lab), K.public_raw(key), lab)
        db.add_key(K.fingerprint(K.public_raw(auditor)), K.public_raw(auditor), "Audit Lab", role="auditor")
        for d in self.template["datasets"]:
            db.add_dataset(TASK, d["name"], d["split"], d["digest"], d["size"])
        db.close()
        self.db_path = target  # type: ignore[assignment]
        self.port = free_port()
        self.url = f"http://127.0.0.1:{self.port}"
        self.proc = start_server(target, self.port, (*NO_LIMITS, "--key", str(root / "server.key")))
        self.n = 0

    def payload(self, lab: str, model: str, perf: float = 70.0, created: str | None = None,
                throughput: float = 900.0, memory: float = 0.4) -> dict[str, Any]:
        p = super().payload(lab, model, perf=perf, created=created)
        # each model its own weights: attestations attach to results (model digest, data, predictions)
        p["model"]["digest"] = "sha256:" + hashlib.sha256(f"{lab}/{model}".encode()).hexdigest()
        for m in p["metrics"]:
            if m["metric"] == "throughput":
                m["value"] = throughput
            elif m["metric"] == "memory":
                m["value"] = memory
        return p


def _attest(b: RefBoard, key: Ed25519PrivateKey, bundle_id: str) -> None:
    payload = {"bundle_id": bundle_id, "created_at": "2026-01-02T00:00:00.000Z", "verdict": "reproduced",
               "auditor": {"key_fingerprint": K.fingerprint(K.public_raw(key))},
               "fields": {"signature": "identical"}, "hardware_class": "x", "evaluator_image": None, "runner": "local"}
    r = b.post(sign_attestation(payload, key).raw, "/api/attestations")
    assert r.status_code == 201, r.text


def _view(b: RefBoard) -> list[tuple[str, float]]:
    return [(r["row_id"], round(r["dynascore"], 9)) for r in b.board("?limit=1000")["rows"]
            if r["key_fingerprint"] != b.fp("Lab B")]


@pytest.fixture(params=["sqlite", "postgresql"])
def ref_board(request, tmp_path):
    auditor = Ed25519PrivateKey.generate()
    target = tmp_path / "board.db" if request.param == "sqlite" else request.getfixturevalue("pg_url")
    b = RefBoard(tmp_path, target, auditor)
    try:
        for lab, model, perf, tput, mem in HONEST:
            bundle = b.bundle(lab, model, perf=perf, throughput=tput, memory=mem)
            assert b.post(bundle.raw).status_code == 201
            _attest(b, auditor, bundle.id)
        yield b
    finally:
        stop_server(b.proc)


def test_filler_rows_do_not_move_the_honest_rows(ref_board):
    b = ref_board
    before = _view(b)
    assert [rid.split("@")[0] for rid, _ in before] == ["roberta", "bert", "distil", "bow"]
    answer = b.board()
    for i in range(20):  # low performance, identical throughput and memory: each pair adds 0 to the mean
        assert b.post(b.bundle("Lab B", f"filler-{i:02d}", perf=10.0 + i * 0.5, throughput=900.0,
                               memory=0.4).raw).status_code == 201
    after = b.board("?limit=1000")
    assert _view(b) == before, "the filler rows changed the honest board"
    assert after["amrs"] == answer["amrs"]
    assert after["reference"] == answer["reference"]  # the reference rows: each organisation's latest reproduced row
    assert sorted(r["label"] for r in after["reference"]["rows"]) == ["bert", "bow"]
    assert after["reference"]["amrs"] == after["amrs"]
    assert not any(r["submitter"] == "Lab B" for r in after["reference"]["rows"])


LOOK_ALIKES = (("r\u043eberta", "mixes scripts"), ("ro\u200bberta", "U+200B ZERO WIDTH SPACE"),
               ("bert\u2011base", "U+2011 NON-BREAKING HYPHEN"), ("be\x00rt", "U+0000"), (" bert", "starts or ends"),
               ("cafe\u0301", "NFC"), ("roberta (Lab A, 6f4de524)", "submitter qualifier"),
               ("bert\u00a0x", "U+00A0 NO-BREAK SPACE"), ("\uff42\uff45\uff52\uff54", "full-width"))


def test_look_alike_model_names_are_refused_naming_the_character(ref_board):
    """Seen first on the old code: every one of these was stored (201), the NUL one answered 503 on PostgreSQL."""
    b = ref_board
    before = _view(b)
    for name, named in LOOK_ALIKES:
        r = b.post(b.bundle("Lab B", name, perf=80.0).raw)
        assert r.status_code == 422, (name, r.text)
        body = r.json()
        assert body["error"] == "invalid_model_name" and named in body["detail"], body
    assert _view(b) == before
    assert b.post(b.bundle("Lab B", "résumé-bert", perf=50.0).raw).status_code == 201  # one script, NFC: fine


def test_a_fabricated_claim_does_not_rank_first_by_default_once_rows_are_reproduced(ref_board):
    """Seen first on the old code: ``?audit=reproduced`` was an unknown query parameter (400); then (issue 44,
    item 5) the fabricated in-range claim ranked first in the default view, which ranked every row."""
    from dynadesk.sync.server.default_view import AUDIT_REPRODUCED

    b = ref_board
    before = _view(b)
    assert b.post(b.bundle("Lab B", "claimed", perf=99.0, throughput=900.0, memory=0.4).raw).status_code == 201
    default = b.board("?limit=1000")
    assert "claimed" not in [r["model"] for r in default["rows"]], "the unaudited claim is in the default view"
    assert default["filters"]["audit"] == "reproduced"
    assert default["audit_default"] == {"audit": "reproduced", "why": AUDIT_REPRODUCED}
    assert _view(b) == before  # the honest rows' order and scores are unchanged
    everything = b.board("?audit=all&limit=1000")  # the toggle shows every row
    assert everything["rows"][0]["model"] == "claimed" and everything["audit_default"]["audit"] == "reproduced"
    assert [(r["row_id"], round(r["dynascore"], 9)) for r in everything["rows"] if r["model"] != "claimed"] == before
    audited = b.board("?audit=reproduced&limit=1000")
    assert audited["filters"]["audit"] == "reproduced"
    assert [(r["row_id"], round(r["dynascore"], 9)) for r in audited["rows"]] == before
    assert all(r["audit"]["state"].startswith("reproduced") for r in audited["rows"])
    r = __import__("requests").get(f"{b.url}/api/leaderboard/sentiment?audit=maybe", timeout=30)
    assert r.status_code == 400 and "audit" in r.json()["detail"]
