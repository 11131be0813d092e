"""Locust users for bench/bench_hub.py: simulated annotators on one ``dynadesk hub serve``.

Each user signs in with its own one-time invite code (``DYNADESK_HUB_CODES``: a JSON list), then writes
sentiment examples (each with its own text and request id) with a short think time, and now and then reads
its statistics and the validation queue. Every example the hub acknowledges is appended to
``DYNADESK_HUB_ACKS`` as ``uid request_id queued_ms predict_ms batch_size``, so the bench can check the store
against it afterwards (nothing lost, nothing stored twice) and report the model's share of the latency.
"""

from __future__ import annotations

import json
import os
import random
import secrets

from locust import HttpUser, between, task

CODES = json.loads(open(os.environ["DYNADESK_HUB_CODES"], encoding="utf-8").read())
ACKS = open(os.environ["DYNADESK_HUB_ACKS"], "a", encoding="utf-8")
WORDS = ("film", "soup", "service", "plot", "music", "ending", "actor", "room", "price", "view", "staff", "book")
MOODS = ("loved", "hated", "did not mind", "could not stand", "enjoyed", "was bored by", "admired", "regretted")


class Annotator(HttpUser):
    wait_time = between(0.2, 0.8)

    def on_start(self) -> None:
        self.rng = random.Random(secrets.randbits(32))
        code = CODES.pop()
        with self.client.post("/api/signin", json={"code": code}, name="POST /api/signin",
                              catch_response=True) as resp:
            if resp.status_code != 200:
                resp.failure(f"sign-in got {resp.status_code}: {resp.text[:120]}")
                raise RuntimeError("sign-in failed")
            self.csrf = resp.json()["csrf"]
            self.name = resp.json()["name"]
        self.n = 0

    @task(10)
    def write(self) -> None:
        self.n += 1
        text = (f"{self.name} example {self.n}: i {self.rng.choice(MOODS)} the {self.rng.choice(WORDS)}"
                f" and the {self.rng.choice(WORDS)}")
        rid = secrets.token_hex(12)
        body = {"task": "sentiment", "inputs": {"statement": text}, "time_ms": 1000, "request_id": rid,
                "target": self.rng.choice(["negative", "neutral", "positive"])}
        with self.client.post("/api/examples", json=body, headers={"X-CSRF-Token": self.csrf},
                              name="POST /api/examples (live prediction)", catch_response=True) as resp:
            if resp.status_code != 200:
                resp.failure(f"{resp.status_code}: {resp.text[:160]}")
                return
            ex = resp.json()
            live = ex.get("live") or {}
            ACKS.write(f"{ex['uid']} {rid} {live.get('queued_ms', -1):.2f} {live.get('predict_ms', -1):.2f}"
                       f" {live.get('batch_size', 0)}\n")
            ACKS.flush()

    @task(1)
    def stats(self) -> None:
        self.client.get("/api/stats?task=sentiment", name="GET /api/stats")

    @task(1)
    def queue(self) -> None:
        self.client.get("/api/validate/next?task=sentiment", name="GET /api/validate/next")
