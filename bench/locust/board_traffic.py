"""Locust users for bench/bench_locust.py: mixed traffic against one ``dynadesk-server``.

Weights (per user, think time 0): board reads with changing weights 40, model pages 15, log reads 15,
valid uploads from several keys 20 (pre-signed by the bench, popped from a shared list so each is sent
once), invalid bodies 10 (each must be refused with a 4xx; anything else counts as a failure).
The bench passes the bodies through ``DYNADESK_LOCUST_BODIES`` (a JSON file: {"valid": [...hex...],
"invalid": [...hex...], "models": [digest, ...]}).
"""

from __future__ import annotations

import json
import os
import random

from locust import HttpUser, task

_DATA = json.loads(open(os.environ["DYNADESK_LOCUST_BODIES"], encoding="utf-8").read())
VALID = [bytes.fromhex(h) for h in _DATA["valid"]]
INVALID = [bytes.fromhex(h) for h in _DATA["invalid"]]
MODELS = _DATA["models"]
ACKS = open(os.environ["DYNADESK_LOCUST_ACKS"], "a", encoding="utf-8")  # bundle ids answered 201, one a line
METRICS = ("perf", "throughput", "memory", "robustness", "fairness")


class BoardUser(HttpUser):
    def on_start(self) -> None:
        self.rng = random.Random(id(self))

    @task(40)
    def board(self) -> None:
        weights = "&".join(f"weight.{m}={self.rng.randint(0, 5)}" for m in METRICS)
        self.client.get(f"/api/leaderboard/sentiment?{weights}", name="GET /api/leaderboard/{task}?weights")

    @task(15)
    def model_page(self) -> None:
        self.client.get(f"/models/{self.rng.choice(MODELS)}", name="GET /models/{digest}")

    @task(15)
    def log(self) -> None:
        self.client.get(f"/api/log?start={self.rng.randint(1, 500)}&limit=50", name="GET /api/log")

    @task(20)
    def upload(self) -> None:
        if not VALID:
            return
        body = VALID.pop()
        with self.client.post("/api/bundles", data=body, name="POST /api/bundles (valid)",
                              catch_response=True) as resp:
            if resp.status_code != 201:
                resp.failure(f"a valid bundle got {resp.status_code}: {resp.text[:120]}")
            else:
                ACKS.write(resp.json()["bundle_id"] + "\n")
                ACKS.flush()

    @task(10)
    def invalid(self) -> None:
        with self.client.post("/api/bundles", data=self.rng.choice(INVALID), name="POST /api/bundles (invalid)",
                              catch_response=True) as resp:
            if 400 <= resp.status_code < 500:
                resp.success()
            else:
                resp.failure(f"an invalid body got {resp.status_code}")
