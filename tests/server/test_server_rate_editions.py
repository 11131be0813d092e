"""Exchange rates are a property of the task, not of the rows on the page (issue 44, item 2), on a real server
(SQLite and PostgreSQL).

Honest labs (each its own organisation) upload rows whose throughput and memory fall linearly with performance.
Lab B, a registered submitter, then attacks with one row per key: a row at perf 84.99 beside the honest 85 with
throughput 1e7. On the previous server code (rates from one row per key, Dynaboard's mean over neighbouring
pairs) that row multiplied the throughput rate by ~50,000 and moved every honest Dynascore; and a lab with one key
got a perf-only board with the false note "no two models differ in performance by more than 0.0001 x the best".
Both were seen failing first (the rates and honest scores moved; the false note was printed).
"""

from __future__ import annotations

import hashlib
from pathlib import Path
from typing import Any

import pytest
import requests
from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey
from support.sync import NO_LIMITS, admin, free_port, make_run, start_server, stop_server, workspace_with_key
from test_server_adversarial import TASK, Board

from dynadesk.sync.client.create import build_payload
from dynadesk.sync.format import keys as K
from dynadesk.sync.format.attestation import sign_attestation
from dynadesk.sync.server.db import ServerDB

FACTOR = 2.0  # the stated bound (dynadesk.scoring.rates.RATE_FACTOR)
LABS = ("Lab A", "Lab B", "Lab C", "Lab D", "Lab E")
# throughput and memory linear in perf: every honest pair gives the same rate (100 examples/s and 0.05 GiB per point)
HONEST = (("Lab A", "roberta", 85.0), ("Lab C", "distil", 75.0), ("Lab D", "bow", 65.0), ("Lab E", "cnn", 55.0))
FALSE_NOTE = "no two models differ in performance by more than"


def tput(perf: float) -> float:
    return 10000.0 - 100.0 * perf


def mem(perf: float) -> float:
    return 0.05 * perf


class RateBoard(Board):
    """A server with five labs of five organisations, an auditor, and per-row throughput and memory."""

    def __init__(self, root: Path, target: Path | str):
        self.ws, self.store = workspace_with_key(root / "ws")
        self.template = build_payload(self.store, make_run(self.store, self.ws.runs_dir, model="bert"), "x")
        self.keys = {lab: Ed25519PrivateKey.generate() for lab in LABS}
        self.auditor = Ed25519PrivateKey.generate()
        db = ServerDB(target)
        for lab, key in self.keys.items():
            db.add_organisation(lab)
            db.add_key(self.fp(lab), K.public_raw(key), lab, organisation=lab)
        db.add_key(K.fingerprint(K.public_raw(self.auditor)), K.public_raw(self.auditor), "Audit Lab", role="auditor")
        for d in self.template["datasets"]:
            db.add_dataset(TASK, d["name"], d["split"], d["digest"], d["size"])
        db.close()
        self.db_path = target  # type: ignore[assignment]
        self.port = free_port()
        self.url = f"http://127.0.0.1:{self.port}"
        self.proc = start_server(target, self.port, (*NO_LIMITS, "--key", str(root / "server.key")))
        self.key_path = root / "server.key"
        self.n = 0

    def payload(self, lab: str, model: str, perf: float = 70.0, created: str | None = None,
                throughput: float | None = None, memory: float | None = None) -> dict[str, Any]:
        p = super().payload(lab, model, perf=perf, created=created)
        p["model"]["digest"] = "sha256:" + hashlib.sha256(f"{lab}/{model}".encode()).hexdigest()
        for m in p["metrics"]:
            if m["metric"] == "throughput":
                m["value"] = tput(perf) if throughput is None else throughput
            elif m["metric"] == "memory":
                m["value"] = mem(perf) if memory is None else memory
        return p

    def upload(self, lab: str, model: str, perf: float, **kw: Any) -> str:
        bundle = self.bundle(lab, model, perf=perf, **kw)
        r = self.post(bundle.raw)
        assert r.status_code == 201, r.text
        return bundle.id

    def attest(self, bundle_id: str) -> None:
        payload = {"bundle_id": bundle_id, "created_at": "2026-01-02T00:00:00.000Z", "verdict": "reproduced",
                   "auditor": {"key_fingerprint": K.fingerprint(K.public_raw(self.auditor))},
                   "fields": {"signature": "identical"}, "hardware_class": "x", "evaluator_image": None,
                   "runner": "local"}
        r = self.post(sign_attestation(payload, self.auditor).raw, "/api/attestations")
        assert r.status_code == 201, r.text

    def operator(self, *args: str, ok: bool = True) -> str:
        res = admin(self.db_path, *args, ok=ok)  # type: ignore[arg-type]
        return res.stdout + res.stderr


def honest_scores(answer: dict[str, Any], attacker: str) -> list[tuple[str, float]]:
    return [(r["row_id"], r["dynascore"]) for r in answer["rows"] if r["key_fingerprint"] != attacker]


def within(before: dict[str, Any], after: dict[str, Any]) -> None:
    for metric, rate in before.items():
        moved = after.get(metric)
        if rate is None or moved is None:
            assert rate == moved, (metric, rate, moved)
            continue
        assert rate / FACTOR <= moved <= rate * FACTOR, f"{metric}: rate {rate} became {moved}"


@pytest.fixture(params=["sqlite", "postgresql"])
def rate_board(request, tmp_path):
    target = tmp_path / "board.db" if request.param == "sqlite" else request.getfixturevalue("pg_url")
    b = RateBoard(tmp_path, target)
    try:
        b.honest_ids = [b.upload(lab, model, perf) for lab, model, perf in HONEST]
        yield b
    finally:
        stop_server(b.proc)


def test_one_row_per_key_cannot_move_the_rates(rate_board):
    """No operator action: whatever the board's rates are, one attacking row cannot move them beyond the factor,
    nor any honest row's order or Dynascore."""
    b = rate_board
    before = b.board("?limit=1000&audit=all")
    b.upload("Lab B", "fast", 84.99, throughput=1e7, memory=0.01)  # beside roberta's 85
    after = b.board("?limit=1000&audit=all")
    within(before["amrs"], after["amrs"])
    assert honest_scores(after, b.fp("Lab B")) == honest_scores(before, b.fp("Lab B"))
    assert FALSE_NOTE not in " ".join(after["notes"])


def test_a_reference_row_moves_no_rate_beyond_the_stated_factor(rate_board):
    """The attacking row is itself reproduced (an auditor re-ran it: its figures are real) and so is a reference
    row: the robust estimator bounds what it can do to the stated factor."""
    b = rate_board
    for bid in b.honest_ids:
        b.attest(bid)
    before = b.board("?limit=1000&audit=all")
    assert before["amrs"]["throughput"] == pytest.approx(100.0) and before["amrs"]["memory"] == pytest.approx(0.05)
    b.attest(b.upload("Lab B", "fast", 84.99, throughput=1e7, memory=0.01))
    after = b.board("?limit=1000&audit=all")
    within(before["amrs"], after["amrs"])
    assert honest_scores(after, b.fp("Lab B")) == honest_scores(before, b.fp("Lab B"))


def test_a_frozen_edition_is_what_every_row_is_scored_with(rate_board):
    b = rate_board
    for bid in b.honest_ids:
        b.operator("reference", "pin", bid, "--note", "operator's own run")
    out = b.operator("rates", "freeze", "--task", TASK, "--key", str(b.key_path))
    assert "edition 1" in out, out
    before = b.board("?limit=1000&audit=all")
    assert before["rates"]["edition"] == 1 and before["rates"]["status"] == "edition"
    assert before["amrs"]["throughput"] == pytest.approx(100.0)
    b.upload("Lab B", "fast", 84.99, throughput=1e7, memory=0.01)
    b.attest(b.upload("Lab B", "fast2", 84.98, throughput=9e6, memory=0.01))
    after = b.board("?limit=1000&audit=all")
    assert after["amrs"] == before["amrs"] and after["rates"] == before["rates"]
    notes = " ".join(after["notes"])
    assert "rate edition 1 of 'sentiment'" in notes and "provisional" not in notes and "no exchange rates" not in notes
    assert honest_scores(after, b.fp("Lab B")) == honest_scores(before, b.fp("Lab B"))
    signed = requests.get(f"{b.url}/api/rates/{TASK}", timeout=30)
    assert signed.status_code == 200 and signed.json()["payload"]["edition"] == 1
    listed = b.operator("rates", "list", "--task", TASK)
    assert "1" in listed and TASK in listed
    # the Dynaboard rule stays a view: the rates from the rows in view, which the attack does move
    dyn = b.board("?limit=1000&rates=dynaboard&audit=all")
    assert dyn["rates"]["status"] == "dynaboard" and dyn["amrs"]["throughput"] > 1000 * before["amrs"]["throughput"]


def test_a_lab_with_one_key_gets_the_truth_then_real_rates(tmp_path, request):
    """Four rows of one key, perfs 67.5 / 55.4 / 44.1 / 19.1: no false note; the note says why there are no rates
    and what the operator can do; pinned, one organisation's rows count once; frozen by the operator's word
    (``--single-organisation``) they set real rates."""
    b = RateBoard(tmp_path, tmp_path / "board.db")
    try:
        ids = [b.upload("Lab A", f"m{i}", perf) for i, perf in enumerate((67.5, 55.4, 44.1, 19.1))]
        answer = b.board("?limit=1000&audit=all")
        notes = " ".join(answer["notes"])
        assert FALSE_NOTE not in notes, notes
        assert "reference pin" in notes and "rates freeze" in notes, notes
        assert answer["rates"]["status"] == "none" and "provisional exchange rates" not in notes
        for bid in ids:
            b.operator("reference", "pin", bid)
        pinned = b.board("?limit=1000&audit=all")  # one organisation's pins count once (test_server_rate_pinning)
        assert pinned["rates"]["status"] == "none" and "distinct organisations" in " ".join(pinned["notes"])
        b.operator("rates", "freeze", "--task", TASK, "--key", str(b.key_path), "--single-organisation", "one lab")
        frozen = b.board("?limit=1000&audit=all")
        assert frozen["rates"]["status"] == "edition"
        assert frozen["amrs"]["throughput"] == pytest.approx(100.0)
        assert "provisional exchange rates" not in " ".join(frozen["notes"])
        assert "no exchange rates for" not in " ".join(frozen["notes"])
    finally:
        stop_server(b.proc)
