"""The leaderboard server in process (FastAPI TestClient), over a real SQLite file and a real PostgreSQL database."""

from __future__ import annotations

import copy
import json
import random
from datetime import UTC, datetime, timedelta

import pytest
from fastapi.testclient import TestClient
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from support.sync import make_run, signed_payload, workspace_with_key

from dynadesk.errors import LogIntegrityError
from dynadesk.sync.client.create import create_bundle
from dynadesk.sync.format.keys import key_info
from dynadesk.sync.format.translog import verify_log
from dynadesk.sync.server.admin import register_dataset
from dynadesk.sync.server.app import create_app
from dynadesk.sync.server.db import ServerDB
from dynadesk.sync.server.limits import Rate, UploadLimits

UNLIMITED = UploadLimits(Rate(1e6, 10 ** 6), Rate(1e6, 10 ** 6))


class Env:
    def __init__(self, tmp_path, target):
        self.ws, self.store = workspace_with_key(tmp_path / "ws")
        self.db_path = target  # a SQLite file or a postgresql:// URL (conftest's db_target)
        self.admin = ServerDB(self.db_path)
        info = key_info(self.ws.keys_dir)
        self.fingerprint = info.fingerprint
        self.admin.add_key(info.fingerprint, bytes.fromhex(info.public_key_hex), "alice")
        # tests/server/test_server_adversarial.py tests the limits
        self.app = create_app(self.db_path, tmp_path / "server.key", limits=UNLIMITED)
        self.client = TestClient(self.app, raise_server_exceptions=False)
        self.n = 0

    def bundle(self, model="bow-a", **metrics):
        ev = make_run(self.store, self.ws.runs_dir, model=model, **metrics)
        for d in self.store.evaluations.get(ev).datasets:
            if not any(x["name"] == d for x in self.admin.datasets("sentiment")):
                ds = self.store.datasets.get(d)
                register_dataset(self.admin, "sentiment", d, digest=ds.digest, size=ds.size)
        return create_bundle(self.ws, self.store, ev)

    def post(self, raw: bytes):
        return self.client.post("/api/bundles", content=raw, headers={"Content-Type": "application/json"})

    def count(self) -> int:
        return self.admin.count_bundles()


@pytest.fixture
def env(tmp_path, db_target):
    e = Env(tmp_path, db_target)
    yield e
    e.client.close()
    e.store.close()
    e.admin.close()
    e.app.state.db.close()


def test_upload_accepts_then_refuses_replay_and_serves_exact_bytes(env):
    b = env.bundle()
    r = env.post(b.raw)
    assert r.status_code == 201, r.text
    assert r.json()["bundle_id"] == b.id and r.json()["seq"] == 1
    again = env.post(b.raw)
    assert again.status_code == 409 and again.json()["error"] == "replay" and b.id in again.json()["detail"]
    assert env.count() == 1
    got = env.client.get(f"/api/bundles/{b.id}")
    assert got.status_code == 200 and got.content == b.raw
    assert env.client.get("/api/bundles/" + "0" * 64).status_code == 404
    assert env.client.get("/api/bundles/not-an-id").status_code == 400
    assert env.client.get("/docs").status_code == 200 and env.client.get("/openapi.json").status_code == 200


def test_future_dated_bundle_is_refused(env):
    ev = make_run(env.store, env.ws.runs_dir)
    b = env.bundle()
    from dynadesk.sync.client.create import build_payload

    payload = build_payload(env.store, ev, env.fingerprint, now=datetime.now(UTC) + timedelta(hours=2))
    r = env.post(signed_payload(payload, env.ws).raw)
    assert r.status_code == 422 and r.json()["error"] == "future_timestamp"
    assert env.post(b.raw).status_code == 201  # a present one is fine
    assert env.count() == 1


def test_unknown_and_revoked_keys_are_refused(env, tmp_path):
    other_ws, other_store = workspace_with_key(tmp_path / "other")
    ev = make_run(other_store, other_ws.runs_dir, model="bow-b")
    foreign = create_bundle(other_ws, other_store, ev)
    r = env.post(foreign.raw)
    assert r.status_code == 403 and r.json()["error"] == "unknown_key" and "not registered" in r.json()["detail"]
    b = env.bundle()
    assert env.post(b.raw).status_code == 201
    env.admin.revoke_key(env.fingerprint, "leaked")
    b2 = env.bundle(model="bow-c")
    r = env.post(b2.raw)
    assert r.status_code == 403 and r.json()["error"] == "revoked_key" and "leaked" in r.json()["detail"]
    assert env.count() == 1
    assert env.client.get("/api/leaderboard/sentiment").json()["rows"] == []  # revoked rows leave the board
    other_store.close()


def test_unknown_task_or_dataset_digest_is_refused(env):
    b = env.bundle()
    env.admin.remove_dataset("sentiment", b.payload.to_json()["datasets"][0]["name"])
    r = env.post(b.raw)
    assert r.status_code == 422 and r.json()["error"] == "not_on_board" and "not accepted" in r.json()["detail"]
    d = b.payload.to_json()["datasets"][0]
    env.admin.add_dataset("sentiment", d["name"], "test", "sha256:" + "0" * 64, d["size"])
    r = env.post(b.raw)
    assert r.status_code == 422 and "different version" in r.json()["detail"]
    payload = b.payload.to_json()
    payload["task"] = "no_such_task"
    r = env.post(signed_payload(payload, env.ws).raw)
    assert r.status_code == 422 and "not on this board" in r.json()["detail"]
    assert env.count() == 0


def test_thousand_random_byte_modifications_are_all_refused_by_the_server(env):
    b = env.bundle()
    rng = random.Random(7)
    statuses: dict[int, int] = {}
    for _ in range(1000):
        data = bytearray(b.raw)
        pos = rng.randrange(len(data))
        data[pos] = (data[pos] + rng.randrange(1, 256)) % 256
        r = env.post(bytes(data))
        assert 400 <= r.status_code < 500, (pos, r.status_code, r.text)
        assert set(r.json()) == {"error", "detail"}
        statuses[r.status_code] = statuses.get(r.status_code, 0) + 1
    assert env.count() == 0
    assert env.post(b.raw).status_code == 201  # the untouched bundle still goes in
    assert 400 in statuses and (422 in statuses or 403 in statuses)


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(body=st.one_of(st.binary(max_size=300),
                      st.recursive(st.none() | st.booleans() | st.integers() | st.floats() | st.text(max_size=20),
                                   lambda c: st.lists(c, max_size=4) | st.dictionaries(st.text(max_size=8), c,
                                                                                        max_size=4),
                                   max_leaves=20).map(lambda v: json.dumps(v).encode())))
def test_no_500_on_malformed_uploads(env, body):
    r = env.post(body)
    assert 400 <= r.status_code < 500 and r.json()["error"]


@settings(max_examples=80, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(params=st.dictionaries(st.sampled_from(["weight.perf", "weight.memory", "dataset.vader-movies-test", "limit",
                                               "offset",
                                               "dataset.nope", "weight.nope", "x", "weight."]),
                              st.text(max_size=8), max_size=4),
       task=st.sampled_from(["sentiment", "nli", "nope", "%00"]),
       start=st.text(max_size=5))
def test_no_500_on_malformed_queries(env, params, task, start):
    assert env.client.get(f"/api/leaderboard/{task}", params=params).status_code < 500
    assert env.client.get("/api/log", params={"start": start, "limit": start}).status_code < 500
    assert env.client.get("/api/bundles", params={"after": start, "task": task}).status_code < 500


def test_leaderboard_uses_dynascore_and_weights_rerank(env):
    fast = env.bundle(model="fast-small", perf=60.0, throughput=3000.0, memory=0.2)
    accurate = env.bundle(model="slow-accurate", perf=75.0, throughput=50.0, memory=6.0)
    middle = env.bundle(model="middle", perf=68.0, throughput=800.0, memory=1.0)
    for b in (fast, accurate, middle):
        assert env.post(b.raw).status_code == 201
    board = env.client.get("/api/leaderboard/sentiment").json()
    assert {r["model"] for r in board["rows"]} == {"fast-small", "slow-accurate", "middle"}
    assert board["metrics"]["memory"]["unit"] == "GiB" and board["metrics"]["throughput"]["unit"] == "examples/s"
    assert [r["rank"] for r in board["rows"]] == sorted(r["rank"] for r in board["rows"])
    by_perf = env.client.get("/api/leaderboard/sentiment", params={"weight.perf": 5, "weight.throughput": 0,
                                                                   "weight.memory": 0}).json()
    by_speed = env.client.get("/api/leaderboard/sentiment", params={"weight.perf": 0, "weight.throughput": 5,
                                                                    "weight.robustness": 0,
                                                                    "weight.fairness": 0}).json()
    # these bundles carry no per-example outcomes: no rank interval to work out, so a new setting is never pending
    assert by_perf["rank_intervals_pending"] is False and by_perf["rows"][0]["rank_interval"] is None
    assert by_perf["rows"][0]["model"] == "slow-accurate"
    assert by_speed["rows"][0]["model"] == "fast-small"
    row = by_perf["rows"][0]
    assert row["bundle_url"] == f"/api/bundles/{accurate.id}"
    assert row["values"]["perf"] == pytest.approx(75.5)  # mean over the two test sets (75, 76)
    only_tweets = env.client.get("/api/leaderboard/sentiment", params={"dataset.vader-movies-test": 0}).json()
    assert only_tweets["rows"][0]["values"]["perf"] != row["values"]["perf"]
    page = env.client.get("/api/leaderboard/sentiment", params={"weight.perf": 5, "weight.throughput": 0,
                                                                "weight.memory": 0, "limit": 1, "offset": 1}).json()
    assert page["total"] == 3 and [r["model"] for r in page["rows"]] == [by_perf["rows"][1]["model"]]
    assert env.client.get("/api/leaderboard/sentiment", params={"limit": 0}).status_code == 400
    bad = env.client.get("/api/leaderboard/sentiment", params={"weight.perf": "lots"})
    assert bad.status_code == 400 and "weight.perf" in bad.json()["detail"]
    assert env.client.get("/api/leaderboard/nope").status_code == 404


def test_newer_bundle_of_a_model_replaces_its_row(env):
    first = env.bundle(model="m1", perf=60.0)
    second = env.bundle(model="m1", perf=70.0)
    assert env.post(second.raw).status_code == 201
    assert env.post(first.raw).status_code == 201  # older, arrives late: logged, but the board keeps the newer
    rows = env.client.get("/api/leaderboard/sentiment").json()["rows"]
    assert [(r["model"], r["bundle_id"]) for r in rows] == [("m1", second.id)]


def test_transparency_log_chain_and_signed_head(env):
    for name in ("a", "b", "c"):
        assert env.post(env.bundle(model=name).raw).status_code == 201
    key = bytes.fromhex(env.client.get("/api/server-key").json()["public_key"])
    log = env.client.get("/api/log").json()
    assert [e["seq"] for e in log["entries"]] == [1, 2, 3] and log["head"]["size"] == 3
    verify_log(log["entries"], log["head"], key)
    seen = (2, log["entries"][1]["entry_hash"])
    rewritten = copy.deepcopy(log["entries"])
    rewritten[1]["bundle_sha256"] = "0" * 64
    with pytest.raises(LogIntegrityError, match="entry 2"):
        verify_log(rewritten, log["head"], key)
    with pytest.raises(LogIntegrityError):
        verify_log(log["entries"][:2], log["head"], key)  # an entry removed
    forged_head = dict(log["head"], size=2, hash=log["entries"][1]["entry_hash"])
    with pytest.raises(Exception, match="does not verify"):
        verify_log(log["entries"][:2], forged_head, key)
    assert env.post(env.bundle(model="d").raw).status_code == 201
    later = env.client.get("/api/log").json()
    verify_log(later["entries"], later["head"], key, known_head=seen)
    # a bundle's raw bytes hash to what the log says
    import hashlib
    first = later["entries"][0]
    assert hashlib.sha256(env.client.get(f"/api/bundles/{first['bundle_id']}").content).hexdigest() == \
        first["bundle_sha256"]


def test_page_and_static_files_are_served(env):
    page = env.client.get("/")
    assert page.status_code == 200 and "/static/board.js" in page.text and "http" not in page.text.split("<body>")[0]
    assert env.client.get("/static/board.js").headers["content-type"].startswith("application/javascript")
    assert env.client.get("/static/../server_db.py").status_code == 404


def test_oversized_upload_is_413(env):
    r = env.post(b"{" + b" " * (1 << 20) + b"}")
    assert r.status_code == 413 and r.json()["error"] == "too_large"


def test_register_dataset_from_a_file_matches_the_workspace_digest(env, tmp_path):
    from support.sync import SET_SIZE, ensure_datasets

    from dynadesk.datasets import write_jsonl

    ensure_datasets(env.store)
    path = tmp_path / "movies.jsonl"
    with open(path, "w", encoding="utf-8") as fh:
        write_jsonl(env.store.datasets.examples("vader-movies-test"), fh)
    d = register_dataset(env.admin, "sentiment", "vader-movies-test", file=path)
    assert d["digest"] == env.store.datasets.get("vader-movies-test").digest and d["size"] == SET_SIZE
    with pytest.raises(Exception, match="already accepts"):
        register_dataset(env.admin, "sentiment", "vader-movies-test", file=path)
    with pytest.raises(Exception, match="sha256"):
        register_dataset(env.admin, "sentiment", "x", digest="md5:abc", size=1)
    with pytest.raises(Exception, match="unknown task"):
        register_dataset(env.admin, "nope", "x", digest="sha256:" + "0" * 64, size=1)


def test_a_changed_dataset_digest_is_a_new_version_and_old_rows_stay_attached(env):
    old = env.bundle(model="m-old", perf=60.0)
    assert env.post(old.raw).status_code == 201
    d = old.payload.to_json()["datasets"][0]
    change = env.admin.add_dataset("sentiment", d["name"], "test", "sha256:" + "9" * 64, d["size"], replace=True)
    assert change == {"version": 2, "previous_digest": d["digest"]}
    versions = [(v["name"], v["version"], v["digest"]) for v in env.admin.dataset_versions("sentiment")
                if v["name"] == d["name"]]
    assert versions == [(d["name"], 1, d["digest"]), (d["name"], 2, "sha256:" + "9" * 64)]
    board = env.client.get("/api/leaderboard/sentiment").json()
    (row,) = [r for r in board["rows"] if r["model"] == "m-old"]
    assert row["stale_datasets"] == [d["name"]]
    assert row["dataset_versions"][d["name"]] == {"digest": d["digest"], "version": 1, "current": False}
    other = old.payload.to_json()["datasets"][1]["name"]
    assert row["dataset_versions"][other]["current"] is True
    r = env.post(env.bundle(model="m-new", perf=70.0).raw)  # still on version 1 of the data
    assert r.status_code == 422 and r.json()["error"] == "not_on_board"
    assert "version 1 of it, superseded by version 2" in r.json()["detail"]
    # re-accepting the same digest is not a new version
    assert env.admin.add_dataset("sentiment", d["name"], "test", "sha256:" + "9" * 64, d["size"],
                                 replace=True)["previous_digest"] is None


def test_import_workspace_versions_changed_digests(env, tmp_path):
    import subprocess

    from support.sync import ensure_datasets, server_bin

    ensure_datasets(env.store)
    cmd = [server_bin(), "datasets", "import-workspace", "--db", str(env.db_path)]
    first = subprocess.run([*cmd, "--home", str(env.ws.home)], capture_output=True, text=True, timeout=60)
    assert first.returncode == 0 and "accepted 2 dataset(s)" in first.stdout and "changed" not in first.stdout
    other_ws, other_store = workspace_with_key(tmp_path / "other")
    ensure_datasets(other_store, size=10)  # same names, other examples: other digests
    other_store.close()
    second = subprocess.run([*cmd, "--home", str(other_ws.home)], capture_output=True, text=True, timeout=60)
    assert second.returncode == 0, second.stderr
    assert second.stdout.count("digest changed, now version 2") == 2 and "marked stale" in second.stdout
    assert {d["version"] for d in ServerDB(env.db_path).datasets("sentiment")} == {2}


def test_row_ids_never_leak_into_labels_notes_or_left_off():
    from dynadesk.sync.server import rows as R

    fp_a, fp_b = "sha256:" + "a" * 64, "sha256:" + "b" * 64
    keyed = R.identified([{"model": "bert", "key_fingerprint": fp_a, "submitter": "Lab A"},
                          {"model": "bert", "key_fingerprint": fp_b, "submitter": "Lab B"},
                          {"model": "solo", "key_fingerprint": fp_a, "submitter": "Lab A"}])
    shown = R.labels(keyed)
    assert shown == {f"bert@{fp_a}": "bert (Lab A, aaaaaaaa)", f"bert@{fp_b}": "bert (Lab B, bbbbbbbb)",
                     f"solo@{fp_a}": "solo"}
    answer = {"rows": [], "metrics": {}, "left_off": {f"solo@{fp_a}": "no memory"},
              "notes": [f"bert@{fp_b} has no robustness"]}
    out = R.present(answer, {r["model"]: r for r in keyed}, shown, {}, [])
    assert out["left_off"] == {"solo": "no memory"} and out["notes"] == ["bert (Lab B, bbbbbbbb) has no robustness"]
    assert R.audit_state([]) == "not audited"
    two = [{"verdict": "reproduced", "auditor_fingerprint": "x"}, {"verdict": "reproduced", "auditor_fingerprint": "y"}]
    assert R.audit_state(two) == "reproduced by 2"
    assert R.audit_state([*two, {"verdict": "disputed", "auditor_fingerprint": "z"}]) == "disputed"


def test_rate_limiter_refills_over_time_and_says_how_long_to_wait():
    from dynadesk.errors import ConfigError, RateLimitedError
    from dynadesk.sync.server.limits import Limiter, parse_limits

    now = [0.0]
    lim = Limiter(Rate(0.5, 2), "uploads from key {who}", clock=lambda: now[0])
    lim.take("a")
    lim.take("a")
    with pytest.raises(RateLimitedError, match="retry in 2 s") as err:
        lim.take("a")
    assert err.value.retry_after == 2
    lim.take("b")  # every key has its own bucket
    now[0] = 2.0  # one token back
    lim.take("a")
    with pytest.raises(RateLimitedError):
        lim.take("a")
    assert parse_limits("5/60", "2/30").text() == "5/60,2/30"
    for bad in ("5", "x/3", "0/3", "1/0", "inf/3"):
        with pytest.raises(ConfigError, match="--address-rate"):
            parse_limits(bad, "2/30")
