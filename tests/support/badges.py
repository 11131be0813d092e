"""A served board of three labs whose honest rows an auditor reproduced, for the badge, dispute and value-check
attacks of issue 44 (tests/server/test_server_adversarial_badges.py, test_server_value_checks.py).

Built with :class:`~dynadesk.sync.server.db.ServerDB` directly (no admin subprocesses), so each test gets a fresh
real server on SQLite or PostgreSQL in about a second.
"""

from __future__ import annotations

import copy
import hashlib
from pathlib import Path
from typing import Any

import requests
from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey

from dynadesk.evaluator.environment import hardware_class_of
from dynadesk.sync.client.create import build_payload
from dynadesk.sync.format import keys as K
from dynadesk.sync.format.attestation import FORMAT as ATT_FORMAT
from dynadesk.sync.format.canonical import canonical_bytes
from dynadesk.sync.format.envelope import Bundle, envelope_bytes, sign_payload
from dynadesk.sync.server.db import ServerDB
from support.sync import NO_LIMITS, free_port, make_run, start_server, stop_server, workspace_with_key

TASK = "sentiment"
LAB_HW = {"cpu_model": "Lab CPU 2000", "cores": 2, "memory_limit_gib": 4, "gpus": "none", "runtime": "cpu"}
AUDIT_HW = {"cpu_model": "Audit CPU 9000", "cores": 16, "memory_limit_gib": 64, "gpus": "none", "runtime": "cpu"}
LAB_CLASS = hardware_class_of({"hardware": LAB_HW})
AUDIT_CLASS = hardware_class_of({"hardware": AUDIT_HW})
# (lab, model, perf, throughput, memory, reproduced by the auditor)
HONEST = (("Lab A", "roberta", 75.0, 300.0, 2.0, True), ("Lab B", "bert", 71.0, 500.0, 1.5, True),
          ("Lab C", "distil", 65.0, 1500.0, 0.6, True), ("Lab C", "bow", 60.0, 2500.0, 0.3, False))
GOOD = {"predictions.merkle_root": "identical", "metric.perf": "identical", "memory": "within tolerance"}


class BadgeBoard:
    """A running server over ``target``: labs A, B, C (each its organisation), auditor C in "Audit Co", a second
    Lab A key with no organisation ("Lab A spare"), the honest rows uploaded and (where marked) reproduced."""

    def __init__(self, root: Path, target: Path | str):
        self.ws, self.store = workspace_with_key(root / "ws")
        self.template = build_payload(self.store, make_run(self.store, self.ws.runs_dir, model="bert"), "x")
        names = ("Lab A", "Lab B", "Lab C", "Auditor C", "Lab A spare")
        self.keys = {n: Ed25519PrivateKey.generate() for n in names}
        self.target = target
        db = ServerDB(target)
        for org in ("Lab A", "Lab B", "Lab C", "Audit Co"):
            db.add_organisation(org)
        for name, role, org in (("Lab A", "submitter", "Lab A"), ("Lab B", "submitter", "Lab B"),
                                ("Lab C", "submitter", "Lab C"), ("Auditor C", "auditor", "Audit Co"),
                                ("Lab A spare", "auditor", None)):
            db.add_key(self.fp(name), K.public_raw(self.keys[name]), name, role=role, organisation=org)
        for d in self.template["datasets"]:
            db.add_dataset(TASK, d["name"], d["split"], d["digest"], d["size"])
        db.close()
        self.port = free_port()
        self.url = f"http://127.0.0.1:{self.port}"
        self.proc = start_server(target, self.port, (*NO_LIMITS, "--key", str(root / "server.key")))  # type: ignore[arg-type]
        self.n = 0
        self.honest: dict[str, str] = {}  # "<lab>/<model>" -> bundle id
        self.payloads: dict[str, dict[str, Any]] = {}
        for lab, model, perf, tput, mem, audited in HONEST:
            p = self.payload(lab, model, perf=perf, throughput=tput, memory=mem)
            b = self.upload(p, lab)
            self.honest[f"{lab}/{model}"], self.payloads[f"{lab}/{model}"] = b.id, p
            if audited:
                r = self.attest("Auditor C", b.id, "reproduced", GOOD)
                assert r.status_code == 201, r.text

    def close(self) -> None:
        stop_server(self.proc)
        self.store.close()

    def fp(self, name: str) -> str:
        return K.fingerprint(K.public_raw(self.keys[name]))

    def payload(self, lab: str, model: str, perf: float = 70.0, throughput: float = 900.0, memory: float = 0.4,
                hardware: dict[str, Any] | None = None) -> dict[str, Any]:
        """A payload of the template's run under ``lab``'s key: its own weights, values and machine."""
        p = copy.deepcopy(self.template)
        self.n += 1
        p["submitter"]["key_fingerprint"] = self.fp(lab)
        p["model"]["name"] = model
        p["model"]["digest"] = "sha256:" + hashlib.sha256(f"{lab}/{model}".encode()).hexdigest()
        p["created_at"] = f"2026-01-01T00:{self.n // 60:02d}:{self.n % 60:02d}.000Z"
        p["evaluation_id"] = self.n
        p["environment"]["hardware"] = dict(hardware or LAB_HW)
        set_values(p, perf=perf, throughput=throughput, memory=memory)
        return p

    def re_signed(self, original: dict[str, Any], lab: str, **changes: Any) -> dict[str, Any]:
        """``original`` signed again later (a new bundle id) with ``changes``: name, values, machine, predictions."""
        p = copy.deepcopy(original)
        self.n += 1
        p["created_at"] = f"2026-02-01T00:{self.n // 60:02d}:{self.n % 60:02d}.000Z"
        if "name" in changes:
            p["model"]["name"] = changes.pop("name")
        if "hardware" in changes:
            p["environment"]["hardware"] = dict(changes.pop("hardware"))
        if "predictions" in changes:
            p["predictions"]["digest"] = changes.pop("predictions")
        set_values(p, **changes)
        return p

    def upload(self, p: dict[str, Any], lab: str) -> Bundle:
        b = sign_payload(p, self.keys[lab])
        r = self.post(b.raw, "/api/bundles")
        assert r.status_code == 201, r.text
        return b

    def attest(self, auditor: str, bundle_id: str, verdict: str, fields: dict[str, str],
               created: str = "2026-06-01T00:00:00.000Z", hardware_class: str = AUDIT_CLASS) -> requests.Response:
        payload = {"bundle_id": bundle_id, "created_at": created, "auditor": {"key_fingerprint": self.fp(auditor)},
                   "verdict": verdict, "fields": fields, "hardware_class": hardware_class, "evaluator_image": None,
                   "runner": "docker"}
        body = canonical_bytes(payload)
        key = self.keys[auditor]
        return self.post(envelope_bytes(body, K.public_raw(key), key.sign(body), ATT_FORMAT), "/api/attestations")

    def post(self, raw: bytes, path: str) -> requests.Response:
        return requests.post(self.url + path, data=raw, headers={"Content-Type": "application/json"}, timeout=30)

    def board(self, query: str = "") -> dict[str, Any]:
        r = requests.get(f"{self.url}/api/leaderboard/{TASK}{query}", timeout=30)
        assert r.status_code == 200, r.text
        return r.json()

    def row(self, bundle_id: str, query: str = "?hardware_class=all&limit=1000&audit=all") -> dict[str, Any]:
        (r,) = [r for r in self.board(query)["rows"] if r["bundle_id"] == bundle_id]
        return r

    def honest_view(self) -> dict[str, Any]:
        """The default view's class and the honest rows in it: order, rounded Dynascores and badges."""
        answer = self.board("?limit=1000&audit=all")  # every honest row; the default filter is reproduced-only
        ids = set(self.honest.values())
        return {"class": answer["hardware_class"],
                "rows": [(r["row_id"], round(r["dynascore"], 9), r["audit"]["state"]) for r in answer["rows"]
                         if r["bundle_id"] in ids]}


def set_values(p: dict[str, Any], perf: float | None = None, throughput: float | None = None,
               memory: float | None = None) -> None:
    """Set every perf/macro-F1 value (overall and per dataset), throughput and memory of a payload."""
    for m in p["metrics"]:
        if m["metric"] in ("perf", "macro_f1") and perf is not None:
            m["value"] = perf
        elif m["metric"] == "throughput" and throughput is not None:
            m["value"] = throughput
        elif m["metric"] == "memory" and memory is not None:
            m["value"] = memory
