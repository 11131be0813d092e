"""Attestations that cannot lie, attacked against a real ``dynadesk-server`` on SQLite and on PostgreSQL.

Lab A (organisation "Lab A") and Lab B upload honest bundles; auditors then try what issue 32 found
accepted: "reproduced" whose fields say "differs", "disputed" with no failing field, a time before the
bundle existed, a second key of Lab A registered as auditor attesting Lab A's bundle, and Lab B wiping a
dispute by re-signing its identical payload with a new time. Each was first run against the old server,
where every one of them was accepted (201) and the re-signed row showed "not audited".
"""

from __future__ import annotations

import copy
import json
import subprocess
from pathlib import Path
from typing import Any

import pytest
import requests
from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey
from support.sync import NO_LIMITS, free_port, make_run, server_bin, start_server, stop_server, workspace_with_key

from dynadesk.audit.attest import Verdict
from dynadesk.audit.report import DETERMINISTIC, ENVIRONMENT, IDENTICAL, MEASURED, AuditReport, Check
from dynadesk.sync.client.create import build_payload
from dynadesk.sync.format import keys as K
from dynadesk.sync.format.attestation import FORMAT as ATT_FORMAT
from dynadesk.sync.format.canonical import canonical_bytes
from dynadesk.sync.format.envelope import envelope_bytes, sign_payload

TASK = "sentiment"


class World:
    """A running server over ``target`` with submitter and auditor keys in registered organisations."""

    def __init__(self, root: Path, target: str, extra: tuple[str, ...] = ()):
        self.ws, self.store = workspace_with_key(root / "ws")
        self.template = build_payload(self.store, make_run(self.store, self.ws.runs_dir, model="bert"), "x")
        self.keys = {n: Ed25519PrivateKey.generate() for n in ("Lab A", "Lab B", "Lab A auditor", "Auditor C")}
        self.target = target
        for org in ("Lab A", "Lab B", "Audit Co"):
            self.admin("orgs", "add", org)
        for name, role, org in (("Lab A", "submitter", "Lab A"), ("Lab B", "submitter", "Lab B"),
                                ("Lab A auditor", "auditor", "Lab A"), ("Auditor C", "auditor", "Audit Co")):
            pem = root / f"{name}.pem"
            pem.write_bytes(K.public_pem(self.keys[name]))
            self.admin("keys", "add", str(pem), "--name", name, "--role", role, "--org", org)
        for d in self.template["datasets"]:
            self.admin("datasets", "add", "--task", TASK, "--name", d["name"], "--digest", d["digest"],
                       "--size", str(d["size"]), "--split", d["split"])
        self.port = free_port()
        self.url = f"http://127.0.0.1:{self.port}"
        self.proc = start_server(target, self.port, ("--key", str(root / "server.key"), *NO_LIMITS, *extra))  # type: ignore[arg-type]

    def admin(self, *args: str) -> str:
        out = subprocess.run([server_bin(), *args, "--db", str(self.target)], capture_output=True, text=True,
                             timeout=60)
        assert out.returncode == 0, out.stderr
        return out.stdout

    def fp(self, name: str) -> str:
        return K.fingerprint(K.public_raw(self.keys[name]))

    def bundle(self, lab: str, model: str, created: str, evaluation_id: int = 1) -> tuple[str, dict[str, Any]]:
        p = copy.deepcopy(self.template)
        p["submitter"]["key_fingerprint"] = self.fp(lab)
        p["model"]["name"] = model
        p["created_at"] = created
        p["evaluation_id"] = evaluation_id
        b = sign_payload(p, self.keys[lab])
        r = self.post(b.raw, "/api/bundles")
        assert r.status_code == 201, r.text
        return b.id, p

    def bundle_raw(self, lab: str, model: str) -> bytes:
        p = copy.deepcopy(self.template)
        p["submitter"]["key_fingerprint"] = self.fp(lab)
        p["model"]["name"] = model
        return sign_payload(p, self.keys[lab]).raw

    def attest(self, auditor: str, bundle_id: str, verdict: str, fields: dict[str, str],
               created: str = "2026-02-01T00:00:00.000Z") -> requests.Response:
        payload = {"bundle_id": bundle_id, "created_at": created, "auditor": {"key_fingerprint": self.fp(auditor)},
                   "verdict": verdict, "fields": fields, "hardware_class": "machine=x86_64", "evaluator_image": None,
                   "runner": "local"}
        body = canonical_bytes(payload)  # signed as is: sign_attestation would not check the server's rules
        key = self.keys[auditor]
        return self.post(envelope_bytes(body, K.public_raw(key), key.sign(body), ATT_FORMAT), "/api/attestations")

    def post(self, raw: bytes, path: str) -> requests.Response:
        return requests.post(self.url + path, data=raw, headers={"Content-Type": "application/json"}, timeout=30)

    def row(self, lab: str, model: str) -> dict[str, Any]:
        rows = requests.get(f"{self.url}/api/leaderboard/{TASK}?hardware_class=all", timeout=30).json()["rows"]
        (r,) = [r for r in rows if r["key_fingerprint"] == self.fp(lab) and r["model"] == model]
        return r

    def log_size(self) -> int:
        return int(requests.get(f"{self.url}/api/log/head", timeout=30).json()["size"])


@pytest.fixture(scope="module", params=["sqlite", "postgresql"])
def world(request, tmp_path_factory):
    root = tmp_path_factory.mktemp(f"attest-{request.param}")
    target = str(root / "board.db") if request.param == "sqlite" else request.getfixturevalue("postgres").new_database()
    w = World(root, target)
    try:
        w.a_id, _ = w.bundle("Lab A", "bert", "2026-01-10T00:00:00.000Z")
        w.b_id, w.b_payload = w.bundle("Lab B", "roberta", "2026-01-10T00:00:00.000Z")
        yield w
    finally:
        stop_server(w.proc)
        w.store.close()


GOOD = {"predictions.merkle_root": "identical", "metric.perf": "identical", "memory": "within tolerance"}


def refused(w: World, r: requests.Response, status: int, code: str, detail: str) -> None:
    assert r.status_code == status, r.text
    assert r.json()["error"] == code and detail in r.json()["detail"], r.json()


def test_reproduced_whose_fields_differ_is_refused(world):
    before = world.log_size()
    r = world.attest("Auditor C", world.a_id, "reproduced", {**GOOD, "memory": "differs"})
    refused(world, r, 422, "verdict_contradicts_fields", "fields memory say \"differs\"")
    assert world.log_size() == before and world.row("Lab A", "bert")["audit"]["attestations"] == []


def test_disputed_with_no_failing_field_is_refused(world):
    r = world.attest("Auditor C", world.a_id, "disputed", GOOD)
    refused(world, r, 422, "verdict_contradicts_fields", "no field says \"differs\"")


def test_an_attestation_dated_before_the_bundle_is_refused(world):
    r = world.attest("Auditor C", world.a_id, "reproduced", GOOD, created="2026-01-09T23:59:59.000Z")
    refused(world, r, 422, "attestation_before_bundle", "not later than the attested bundle's created_at")


def test_an_auditor_key_of_the_same_organisation_cannot_attest_its_results(world):
    r = world.attest("Lab A auditor", world.a_id, "reproduced", GOOD)
    refused(world, r, 403, "own_organisation", "'Lab A'")


def test_a_re_signed_identical_payload_keeps_its_dispute(world):
    r = world.attest("Auditor C", world.b_id, "disputed", {**GOOD, "predictions.merkle_root": "differs"})
    assert r.status_code == 201, r.text
    assert world.row("Lab B", "roberta")["audit"]["state"] == "disputed"
    p = copy.deepcopy(world.b_payload)
    p["created_at"] = "2026-03-01T00:00:00.000Z"  # the same results signed again, later: a new bundle id
    b = sign_payload(p, world.keys["Lab B"])
    assert world.post(b.raw, "/api/bundles").status_code == 201
    row = world.row("Lab B", "roberta")
    assert row["bundle_id"] == b.id  # the re-signed bundle is the row now ...
    assert row["audit"]["state"] == "disputed"  # ... and the dispute stays with its results
    again = world.attest("Auditor C", b.id, "reproduced", GOOD, created="2026-03-02T00:00:00.000Z")
    refused(world, again, 409, "already_attested", "same results")


def test_an_honest_attestation_is_accepted(world):
    r = world.attest("Auditor C", world.a_id, "reproduced", GOOD)
    assert r.status_code == 201, r.text
    assert world.row("Lab A", "bert")["audit"]["state"] == "reproduced by 1"


def test_keys_name_only_registered_organisations(world, tmp_path):
    pem = tmp_path / "x.pem"
    pem.write_bytes(K.public_pem(Ed25519PrivateKey.generate()))
    out = subprocess.run([server_bin(), "keys", "add", str(pem), "--name", "X", "--org", "Nobody", "--db",
                          str(world.target)], capture_output=True, text=True, timeout=60)
    assert out.returncode != 0 and "organisation 'Nobody' is not registered" in out.stderr


def test_the_audit_signs_a_measured_difference_as_disputed():
    """``audit --rerun --attest`` exited 4 (memory differs) yet signed "reproduced" on the old code."""
    report = AuditReport("ab" * 32, TASK, "bert", rerun_id=7)
    report.add(Check("predictions.merkle_root", DETERMINISTIC, IDENTICAL, "x", "x"),
               Check("memory", MEASURED, "differs", 0.4, 0.9, tolerance=0.25),
               Check("hardware", ENVIRONMENT, "differs", "a", "b"))
    assert report.measured_failures and not report.failures  # the CLI's exit 4
    v = Verdict.from_report(report, {}, None, "local")
    assert v.verdict == "disputed" and "hardware" not in v.fields and v.fields["memory"] == "differs"


# ------------------------------------------------------------------ the log is the truth (item 7)

def test_every_answer_carries_the_security_headers(world):
    for path in ("/", "/api/tasks", f"/api/leaderboard/{TASK}", "/api/bundles/zz", "/static/board.js"):
        h = requests.get(world.url + path, timeout=30).headers
        assert "frame-ancestors 'none'" in h["Content-Security-Policy"], path
        assert h["X-Content-Type-Options"] == "nosniff" and h["X-Frame-Options"] == "DENY", path


def test_an_edited_board_table_is_caught_by_log_verify_and_fixed_by_rebuild(world):
    from dynadesk.sync.server.db import ServerDB

    honest = world.row("Lab A", "bert")
    assert "log verified" in world.admin("log", "verify")
    db = ServerDB(world.target)
    with db.tx() as c:  # an operator (or intruder) edits the ranking straight in the database
        (text,) = c.execute("SELECT metrics FROM board WHERE key_fingerprint = ?", [world.fp("Lab A")]).fetchone()
        metrics = json.loads(text)
        metrics["perf"]["values"] = {k: 99.9 for k in metrics["perf"]["values"]}
        c.execute("UPDATE board SET metrics = ? WHERE key_fingerprint = ?", [json.dumps(metrics), world.fp("Lab A")])
    db.close()
    if not world.target.startswith("postgresql"):  # (PostgreSQL's board cache shows it after the next upload)
        assert world.row("Lab A", "bert")["values"] != honest["values"]  # the edit shows on the public board
    out = subprocess.run([server_bin(), "log", "verify", "--db", str(world.target)], capture_output=True, text=True,
                         timeout=60)
    assert out.returncode == 1 and "differs from its bundles" in out.stderr and "Traceback" not in out.stderr
    assert "rebuilt from the stored bundles" in world.admin("board", "rebuild")
    assert world.row("Lab A", "bert")["values"] == honest["values"]
    assert "log verified" in world.admin("log", "verify")


def test_log_verify_fails_when_an_entry_names_no_stored_document(world):
    from dynadesk.sync.server.db import ServerDB

    db = ServerDB(world.target)
    with db.tx() as c:
        raw = c.execute("SELECT raw FROM bundles WHERE id = ?", [world.a_id]).fetchone()[0]
        c.execute("UPDATE bundles SET raw = ? WHERE id = ?", [bytes(raw) + b" ", world.a_id])
    out = subprocess.run([server_bin(), "log", "verify", "--db", str(world.target)], capture_output=True, text=True,
                         timeout=60)
    with db.tx() as c:
        c.execute("UPDATE bundles SET raw = ? WHERE id = ?", [bytes(raw), world.a_id])
    db.close()
    assert out.returncode == 1 and "do not hash to the entry's" in out.stderr, out.stderr


# ------------------------------------------------------------------ bounded cost (item 6)

@pytest.mark.parametrize("trusted", [False, True])
def test_x_forwarded_for_counts_only_from_a_trusted_proxy(tmp_path, trusted):
    """On the old server a client on loopback naming a new X-Forwarded-For each time was never limited."""
    db = tmp_path / "board.db"
    port = free_port()
    extra = ("--trusted-proxy", "127.0.0.1") if trusted else ()
    proc = start_server(db, port, ("--address-rate", "0.01/3", "--key-rate", "1000/1000", *extra))  # type: ignore[arg-type]
    try:
        codes = [requests.post(f"http://127.0.0.1:{port}/api/bundles", data=b"{}", timeout=30,
                               headers={"X-Forwarded-For": f"10.0.0.{i}"}).status_code for i in range(6)]
        behind = [requests.post(f"http://127.0.0.1:{port}/api/bundles", data=b"{}", timeout=30,
                                headers={"X-Forwarded-For": "10.9.9.9"}).status_code for _ in range(4)]
    finally:
        stop_server(proc)
    if trusted:  # six clients behind the proxy, each with its own allowance; one of them runs out alone
        assert 429 not in codes and behind.count(429) == 1, (codes, behind)
    else:  # the header is the client's own claim: one loopback peer, one allowance
        assert codes[:3].count(429) == 0 and codes[3:] == [429] * 3 and behind == [429] * 4, codes


def test_a_keys_stored_bytes_are_bounded_and_settings_and_environment_are_bounded(tmp_path):
    """The old server stored whatever a key sent, at its rate limit (about 7 GB/h of valid 1 MiB bundles)."""
    w = World(tmp_path, str(tmp_path / "board.db"), ("--key-quota", "40000"))
    try:
        p = copy.deepcopy(w.template)
        p["submitter"]["key_fingerprint"] = w.fp("Lab B")
        p["request"] = {"model": "m", "datasets": [f"d{i}-" + "x" * 500 for i in range(40)], "runner": "docker",
                        "image": None, "limits": {"cpus": 2, "memory_bytes": 1 << 30, "timeout_s": 60},
                        "settings": {"batch_size": 8, "seed": 0, "latency_samples": 4, "warmup": 0},
                        "purpose": "evaluation"}  # well-formed, 20 kB: the signed request is bounded as well
        r = w.post(sign_payload(p, w.keys["Lab B"]).raw, "/api/bundles")
        refused(w, r, 400, "malformed_bundle", "payload.request:")
        del p["request"]
        p["environment"] = {**p["environment"], "padding": "x" * 20_000}
        refused(w, w.post(sign_payload(p, w.keys["Lab B"]).raw, "/api/bundles"), 400, "malformed_bundle",
                "payload.environment:")
        codes = []
        for i in range(40):
            codes.append(w.post(w.bundle_raw("Lab B", f"m{i}"), "/api/bundles"))
            if codes[-1].status_code != 201:
                break
        last = codes[-1]
        refused(w, last, 429, "quota_exceeded", "quota of 40000 bytes")
        assert len(codes) > 1 and last.headers["Retry-After"]
        assert w.post(w.bundle_raw("Lab A", "m0"), "/api/bundles").status_code == 201  # another key's own quota
    finally:
        stop_server(w.proc)
        w.store.close()
