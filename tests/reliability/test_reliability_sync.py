"""kill -9 during sync (client side) and during server ingest (issue 10, crash safety).

Client: a real ``dynadesk sync`` process is killed while it uploads a queue of bundles to a real
server; afterwards the workspace database is intact, no bundle is lost or duplicated (a bundle marked
sent is on the server, the server holds only bundles from the queue, each once), and the next sync
completes. Server: a real ``dynadesk-server`` process is killed while a client streams uploads;
afterwards the server database is intact, every acknowledged bundle is stored exactly once, the
transparency log verifies and matches the stored bytes, and after a restart re-uploading everything
adds exactly the missing bundles.

``pytest --long`` (DYNADESK_LONG=1) runs more kill rounds and more bundles.
"""

from __future__ import annotations

import hashlib
import json
import os
import random
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest
import requests
from support import fuzz_examples
from support.sync import free_port, make_run, signed_payload, start_server, stop_server, workspace_with_key

from dynadesk.errors import ServerUnavailable, UploadRejected
from dynadesk.sync.client.create import create_bundle
from dynadesk.sync.client.upload import SyncClient
from dynadesk.sync.format.keys import key_info
from dynadesk.sync.format.translog import verify_log
from dynadesk.sync.server.admin import import_workspace_datasets
from dynadesk.sync.server.db import ServerDB

KILL_ROUNDS = fuzz_examples(3, 12)
CLIENT_BUNDLES = fuzz_examples(24, 80)
SERVER_BUNDLES = fuzz_examples(150, 1000)
SEED = int(os.environ.get("DYNADESK_FUZZ_SEED", "20261129"))


def dynadesk_bin() -> str:
    return str(Path(sys.executable).with_name("dynadesk"))


def register(ws, db: ServerDB) -> None:
    info = key_info(ws.keys_dir)
    db.add_key(info.fingerprint, bytes.fromhex(info.public_key_hex), "alice")
    import_workspace_datasets(db, ws.home)


def server_ids(db: ServerDB) -> list[str]:
    return [b["id"] for b in db.list_bundles(None, 1_000_000)]


def check_server(db: ServerDB, url: str | None = None) -> list[str]:
    """Integrity, one row per bundle, and a log chaining exactly the stored bytes; returns the ids."""
    assert db.integrity_check() == "ok"
    ids = server_ids(db)
    assert len(ids) == len(set(ids))
    entries = db.log_entries(1, 1_000_000)
    assert [e["bundle_id"] for e in entries] == ids  # the log and the bundle table agree, in order
    for e in entries:
        assert hashlib.sha256(db.bundle_raw(e["bundle_id"])).hexdigest() == e["bundle_sha256"]
    if url is not None:  # the running server signs a head over the same chain
        log = requests.get(f"{url}/api/log?limit=10000", timeout=30).json()
        key = bytes.fromhex(requests.get(f"{url}/api/server-key", timeout=10).json()["public_key"])
        verify_log(log["entries"], log["head"], key)
        assert log["head"]["size"] == len(ids)
    return ids


# ------------------------------------------------------------------------------------------ client


@pytest.fixture
def queued(tmp_path, monkeypatch):
    """A workspace with CLIENT_BUNDLES queued bundles, and a server database that accepts them."""
    home = tmp_path / "ws"
    monkeypatch.setenv("DYNADESK_HOME", str(home))
    ws, store = workspace_with_key(home)
    ids = [create_bundle(ws, store, make_run(store, ws.runs_dir, model=f"m{i:03d}", perf=50.0 + i)).id
           for i in range(CLIENT_BUNDLES)]
    store.close()
    db_path = tmp_path / "board.db"
    db = ServerDB(db_path)
    register(ws, db)
    yield ws, ids, db, db_path
    db.close()


def test_kill_9_during_dynadesk_sync_neither_loses_nor_duplicates_a_bundle(queued):
    ws, ids, db, db_path = queued
    port = free_port()
    url = f"http://127.0.0.1:{port}"
    proc = start_server(db_path, port)
    rng = random.Random(SEED)
    env = dict(os.environ, DYNADESK_HOME=str(ws.home))
    mid_sync = 0
    on_server, in_doubt = set(), set()
    try:
        for _ in range(KILL_ROUNDS):
            before = db.count_bundles()
            if before >= len(ids) - 1:
                break
            target = rng.randint(before + 1, len(ids) - 1)  # kill once the server has taken this many
            sync = subprocess.Popen([dynadesk_bin(), "sync", "--server", url], env=env,
                                    stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
            deadline = time.monotonic() + 120
            while db.count_bundles() < target and sync.poll() is None and time.monotonic() < deadline:
                time.sleep(0.001)
            if sync.poll() is None:
                sync.send_signal(signal.SIGKILL)
            sync.wait()
            assert sync.returncode == -signal.SIGKILL, "the sync finished before it could be killed"
            on_server = set(check_server(db))
            mid_sync += 0 < len(on_server) < len(ids)
            store = ws.open_store()
            try:
                assert store.integrity_check() == "ok"
                rows = store.bundles.list(limit=10_000)
                assert sorted(r.id for r in rows) == sorted(ids)  # nothing lost, nothing added
                assert {r.status for r in rows} <= {"queued", "sent"}
                sent = {r.id for r in rows if r.status == "sent"}
                assert sent <= on_server  # "sent" is only ever recorded after the server acknowledged
                assert on_server <= set(ids)
                in_doubt = on_server - sent  # accepted, but killed before the answer was recorded
                for r in rows:  # each queued bundle's exact bytes survive the kill
                    assert hashlib.sha256(store.bundles.raw(r.id)).hexdigest() == \
                        hashlib.sha256((ws.bundles_dir / f"{r.id}.json").read_bytes()).hexdigest()
            finally:
                store.close()
        assert mid_sync >= 1, "no kill landed in the middle of a sync"
        # the next sync completes: the rest is sent, bundles whose answer was lost are recognised, none twice
        done = subprocess.run([dynadesk_bin(), "sync", "--server", url, "--json"], env=env, capture_output=True,
                              text=True, timeout=300)
        assert done.returncode == 0, done.stderr
        report = json.loads(done.stdout)
        assert report["ok"] and not report["rejected"] and not report["still_queued"]
        assert set(report["already"]) == in_doubt  # the server recognises them: no second copy
        assert set(report["sent"]) == set(ids) - on_server
        assert sorted(check_server(db, url)) == sorted(ids)
        store = ws.open_store()
        try:
            assert store.bundles.counts() == {"queued": 0, "sent": len(ids), "rejected": 0}
            assert store.integrity_check() == "ok"
        finally:
            store.close()
        again = subprocess.run([dynadesk_bin(), "sync", "--json"], env=env, capture_output=True, text=True,
                               timeout=120)
        assert again.returncode == 0 and json.loads(again.stdout)["sent"] == []
        assert db.count_bundles() == len(ids)
    finally:
        stop_server(proc)


# ------------------------------------------------------------------------------------------ server


def signed_stream(tmp_path: Path, count: int = SERVER_BUNDLES) -> tuple[list, object]:
    """``count`` distinct signed bundles (one real bundle, re-signed with varied model and metrics) and their
    workspace (to register its key on a board)."""
    ws, store = workspace_with_key(tmp_path / "ws")
    base = create_bundle(ws, store, make_run(store, ws.runs_dir))
    store.close()
    rng = random.Random(SEED)
    bundles = []
    for i in range(count):
        p = base.payload.to_json()
        p["model"]["name"] = f"model-{i % 40:02d}"
        p["evaluation_id"] = i + 1
        for m in p["metrics"]:
            if m["unit"] not in ("flag", "examples"):  # coverage rows (a 0/1 flag, a source count) stay as signed
                m["value"] = round(rng.uniform(1, 99), 3)
        bundles.append(signed_payload(p, ws))
    return bundles, ws


@pytest.fixture
def stream(tmp_path):
    """SERVER_BUNDLES signed bundles and a SQLite board database that accepts them."""
    bundles, ws = signed_stream(tmp_path)
    db_path = tmp_path / "board.db"
    db = ServerDB(db_path)
    register(ws, db)
    yield bundles, db, db_path
    db.close()


def _upload_stream(url: str, bundles, acked: list[str], errors: list[str]) -> None:
    client = SyncClient(url, retries=0, timeout=10)
    for b in bundles:
        try:
            answer = client.upload(b.id, b.raw)
        except ServerUnavailable as exc:
            errors.append(str(exc))
            return
        except UploadRejected as exc:  # only a replay of an already stored bundle is expected here
            assert exc.code == "replay", str(exc)
            continue
        if answer.get("status") == "accepted":
            assert answer["bundle_id"] == b.id
            acked.append(b.id)


def test_kill_9_of_the_server_during_ingest_keeps_every_acknowledged_bundle_once(stream):
    bundles, db, db_path = stream
    rng = random.Random(SEED + 1)
    all_ids = {b.id for b in bundles}
    acked: list[str] = []
    killed_mid_stream = 0
    for _ in range(KILL_ROUNDS):
        port = free_port()
        url = f"http://127.0.0.1:{port}"
        proc = start_server(db_path, port)
        stored_before = db.count_bundles()
        if stored_before >= len(bundles) - 2:
            stop_server(proc)
            break
        target = rng.randint(stored_before + 1, len(bundles) - 1)
        errors: list[str] = []
        remaining = [b for b in bundles if b.id not in set(server_ids(db))]
        # two clients stream at once, so the kill can land while one upload is being committed
        halves = [remaining[0::2], remaining[1::2]]
        threads = [threading.Thread(target=_upload_stream, args=(url, h, acked, errors)) for h in halves]
        for t in threads:
            t.start()
        deadline = time.monotonic() + 120
        while db.count_bundles() < target and any(t.is_alive() for t in threads) and time.monotonic() < deadline:
            time.sleep(0.0005)
        proc.send_signal(signal.SIGKILL)
        proc.wait()
        for t in threads:
            t.join(timeout=60)
        assert not any(t.is_alive() for t in threads)
        stored = check_server(db)
        killed_mid_stream += bool(errors) and len(stored) < len(bundles)
        assert set(acked) <= set(stored), "an acknowledged bundle was lost"
        assert set(stored) <= all_ids
    assert killed_mid_stream >= 1, "no kill landed in the middle of the upload stream"
    # restart and re-upload everything: exactly the missing bundles are added, acknowledged ones are replays
    port = free_port()
    url = f"http://127.0.0.1:{port}"
    proc = start_server(db_path, port)
    try:
        resend_everything(db, url, bundles)
    finally:
        stop_server(proc)


def resend_everything(db: ServerDB, url: str, bundles: list, retries: int = 0) -> None:
    """Re-send every bundle: exactly the missing ones are added, the stored ones are answered as replays, and the
    log then chains all of them once."""
    before = set(server_ids(db))
    client = SyncClient(url, retries=retries, timeout=10)
    outcomes = {"accepted": 0, "already_accepted": 0}
    for b in bundles:
        outcomes[client.upload(b.id, b.raw)["status"]] += 1
    all_ids = {b.id for b in bundles}
    assert outcomes == {"accepted": len(all_ids - before), "already_accepted": len(before)}
    assert sorted(check_server(db, url)) == sorted(all_ids)
