"""The upload check pool (issues 32 and 39): an upload's costly checks (signature, JSON, canonical form,
schema) run in worker processes started with the server; admission is bounded (503 ``server_busy``,
never a growing queue); a killed pool process is replaced without a 500; the processes end with the
server. Also the per-key usage counter that replaced the quota's scan of every stored bundle
(migration ``m008_key_usage``) and the bulk import the benchmark loads its million bundles with.
All on real servers, real processes, real SQLite files and a real PostgreSQL.
"""

from __future__ import annotations

import contextlib
import importlib.util
import os
import random
import sys
import threading
import time
from pathlib import Path

import psutil
import pytest
import requests
from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey
from support import REPO
from support.sync import NO_LIMITS, free_port, server_bin

from dynadesk.errors import BundleFormatError, ServerBusyError, SignatureError
from dynadesk.sync.format.envelope import FORMAT
from dynadesk.sync.format.timestamps import epoch_us
from dynadesk.sync.format.translog import entry_hash
from dynadesk.sync.rules.board import board_metrics
from dynadesk.sync.server import truth
from dynadesk.sync.server.db import CheckedBundle, ServerDB
from dynadesk.sync.server.ingest import _RecentlySigned
from dynadesk.sync.server.pool import INLINE_MAX_BYTES, UploadPool, check_document

BENCH = REPO / "bench" / "bench_server.py"


@pytest.fixture(scope="module")
def bench():
    """bench/bench_server.py: its bundle factory (real signed bundles from one template) and bulk loader."""
    if "bench_server" in sys.modules:
        return sys.modules["bench_server"]
    spec = importlib.util.spec_from_file_location("bench_server", BENCH)
    mod = importlib.util.module_from_spec(spec)
    sys.modules["bench_server"] = mod
    spec.loader.exec_module(mod)
    return mod


@pytest.fixture
def board(bench, tmp_path):
    """A SQLite board holding 20 bundles of 5 models from one registered key; its factory makes more."""
    factory = bench.Factory(Ed25519PrivateKey.generate())
    db_path = tmp_path / "board.db"
    bench.populate(db_path, factory, 20, 5)
    return db_path, factory


def _serve(db_path: Path, *extra: str):
    port = free_port()
    proc = psutil.Popen([server_bin(), "serve", "--db", str(db_path), "--port", str(port), *NO_LIMITS, *extra],
                        stdout=open(os.devnull, "wb"), stderr=open(os.devnull, "wb"))
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline:
        try:
            requests.get(f"http://127.0.0.1:{port}/api/tasks", timeout=1)
            return proc, f"http://127.0.0.1:{port}"
        except requests.RequestException:
            time.sleep(0.1)
    proc.kill()
    raise RuntimeError("server did not start within 30 s")


def _stop(proc) -> None:
    proc.terminate()
    try:
        proc.wait(timeout=20)
    except psutil.TimeoutExpired:
        proc.kill()


def _fresh(factory, n: int, start: int = 1000) -> list[bytes]:
    rng = random.Random(start)
    return [factory.make(f"model-{i % 5:04d}", start + i, rng)[0] for i in range(n)]


def _pool_workers(server) -> list[psutil.Process]:
    """The pool's processes: children of the fork server the serving process started."""
    out = []
    for child in server.children(recursive=True):
        if "forkserver" in " ".join(child.cmdline()):
            out += [p for p in child.children() if p.is_running()]
    return out


def test_checks_run_in_another_process_and_decide_as_in_process(bench, board):
    _db, factory = board
    good = _fresh(factory, 1)[0]
    costly = bench.costly_bodies(factory, 1)[0]
    forged = good[:-160] + (b"0" if good[-160:-159] != b"0" else b"1") + good[-159:]
    pool = UploadPool(1)
    pool.start()
    try:
        worker_pid = pool.run(os.getpid)
        assert worker_pid != os.getpid()
        assert psutil.Process(worker_pid).nice() > psutil.Process().nice()  # board reads come first
        there, here = pool.run(check_document, good, FORMAT, "b"), check_document(good, FORMAT, "b")
        assert there == here and there.verified and there.error is None and there.facts["task"] == "sentiment"
        refused = pool.run(check_document, costly, FORMAT, "b")
        assert refused.verified and isinstance(refused.error, BundleFormatError)  # signed, then not canonical
        assert "canonical" in str(refused.error)
        bad = pool.run(check_document, forged, FORMAT, "b")
        assert not bad.verified and isinstance(bad.error, SignatureError)  # no rate-limit token is spent on it
    finally:
        pool.shutdown()
    deadline = time.monotonic() + 10
    while psutil.pid_exists(worker_pid) and psutil.Process(worker_pid).status() != psutil.STATUS_ZOMBIE:
        assert time.monotonic() < deadline, "the pool process outlived shutdown()"
        time.sleep(0.05)


def test_admission_is_bounded_and_released():
    pool = UploadPool(0, bound=2)
    with pool.admit(), pool.admit():
        with pytest.raises(ServerBusyError, match="retry in 1 s") as busy:
            with pool.admit():
                pass
        assert busy.value.retry_after == 1 and pool.in_flight == 2
    assert pool.in_flight == 0
    with pool.admit():
        assert pool.in_flight == 1


def test_a_small_body_is_checked_in_the_serving_process_and_a_large_one_in_the_pool(bench, board):
    """Issue 50 item 4: the pool's round trip costs more CPU than checking a few KiB, so small bodies stay in the
    serving process (no pool process is ever started for them); a 1 MiB body still goes to the pool."""
    db_path, factory = board
    proc, url = _serve(db_path, "--verify-processes", "1")
    try:
        for raw in _fresh(factory, 6, 70):
            assert len(raw) <= INLINE_MAX_BYTES
            assert requests.post(f"{url}/api/bundles", data=raw, timeout=60).status_code == 201
        assert _pool_workers(proc) == [], "a small upload started a pool process"
        costly = bench.costly_bodies(factory, 1)[0]
        r = requests.post(f"{url}/api/bundles", data=costly, timeout=60)
        assert r.status_code == 400 and r.json()["error"] == "malformed_bundle"
        assert len(_pool_workers(proc)) == 1, "the 1 MiB body was not checked in the pool"
    finally:
        _stop(proc)


def test_under_a_flood_every_body_goes_to_the_pool_and_a_signature_is_trusted_only_for_its_own_object():
    pool = UploadPool(1)
    assert pool.inline(INLINE_MAX_BYTES + 1)  # not started (an app without its lifespan): always here
    pool.start()
    try:
        assert pool.inline(1000) and not pool.inline(INLINE_MAX_BYTES + 1)
        with contextlib.ExitStack() as places:
            for _ in range(pool.bound // 2):
                places.enter_context(pool.admit())
            assert pool.inline(1000)  # a few concurrent uploads are no flood
            places.enter_context(pool.admit())  # more than half the admission places taken: a flood
            assert not pool.inline(1000)
        assert pool.inline(1000)
    finally:
        pool.shutdown()
    held = _RecentlySigned(size=2)
    body = b"x" * 100
    held.add(body)
    assert not held.take(bytes(bytearray(body)))  # equal bytes, another object: verified again
    assert held.take(body) and not held.take(body)  # taken once, then forgotten
    bodies = [bytes([i]) * 10 for i in range(3)]
    for b in bodies:
        held.add(b)
    assert not held.take(bodies[0]) and held.take(bodies[2])  # bounded: the oldest dropped
    large = b"y" * (INLINE_MAX_BYTES + 1)
    held.add(large)
    assert not held.take(large)  # a large body is checked in the pool, never held here


def test_a_flood_of_costly_bodies_is_answered_503_and_the_board_keeps_answering(bench, board):
    db_path, factory = board
    flood = bench.costly_bodies(factory, 4)
    proc, url = _serve(db_path, "--verify-processes", "1")  # 8 uploads admitted at once
    try:
        requests.post(f"{url}/api/bundles", data=_fresh(factory, 1, 50)[0], timeout=60).raise_for_status()
        answers: list[requests.Response] = []
        start = threading.Barrier(48)

        def post(i: int) -> None:
            start.wait()
            answers.append(requests.post(f"{url}/api/bundles", data=flood[i % 4], timeout=120))

        clients = [threading.Thread(target=post, args=(i,)) for i in range(48)]
        for t in clients:
            t.start()
        boards = [requests.get(f"{url}/api/leaderboard/sentiment", timeout=60).status_code for _ in range(5)]
        for t in clients:
            t.join()
        codes = sorted(r.status_code for r in answers)
        assert set(codes) <= {400, 503} and 400 in codes, codes  # never a 5xx other than busy, never accepted
        busy = [r for r in answers if r.status_code == 503]
        assert busy, f"48 concurrent costly uploads against 8 places: none was refused as busy ({codes})"
        assert all(r.json()["error"] == "server_busy" and r.headers["Retry-After"] == "1" for r in busy)
        assert all(r.json()["error"] == "malformed_bundle" for r in answers if r.status_code == 400)
        assert boards == [200] * 5
        # afterwards an honest upload is accepted at once
        assert requests.post(f"{url}/api/bundles", data=_fresh(factory, 1, 60)[0], timeout=60).status_code == 201
    finally:
        _stop(proc)


def test_a_killed_pool_process_is_replaced_without_a_500_and_processes_end_with_the_server(bench, board):
    db_path, factory = board
    costly = bench.costly_bodies(factory, 1)[0]  # 1 MiB: checked in the pool (a small body stays in the server)
    proc, url = _serve(db_path, "--verify-processes", "1")
    try:
        assert requests.post(f"{url}/api/bundles", data=costly, timeout=60).status_code == 400
        workers = _pool_workers(proc)
        assert len(workers) == 1
        workers[0].kill()
        workers[0].wait(10)
        codes = []
        for _ in range(10):
            r = requests.post(f"{url}/api/bundles", data=costly, timeout=60)
            codes.append(r.status_code)
            if r.status_code == 400:
                break
            assert r.status_code == 503 and r.json()["error"] == "server_busy", r.text
        assert codes[-1] == 400 and len(codes) <= 2, codes  # at most the upload caught in the dead process
        replaced = _pool_workers(proc)
        assert len(replaced) == 1 and replaced[0].pid != workers[0].pid
        for raw in _fresh(factory, 2, 2000):
            assert requests.post(f"{url}/api/bundles", data=raw, timeout=60).status_code == 201
        descendants = proc.children(recursive=True)
    finally:
        _stop(proc)
    gone, alive = psutil.wait_procs(descendants, timeout=20)
    assert not alive, f"left running after the server stopped: {[p.cmdline() for p in alive]}"
    db = ServerDB(db_path)
    try:
        assert truth.check_documents(db) == 22  # 20 loaded + 2 accepted; the killed one was never stored
        truth.check_board(db)
    finally:
        db.close()


@pytest.mark.parametrize("backend", ["sqlite", "postgresql"])
def test_bulk_import_leaves_what_uploads_leave_and_key_usage_is_kept(bench, tmp_path, backend, request):
    target = tmp_path / "board.db" if backend == "sqlite" else request.getfixturevalue("pg_url")
    factory = bench.Factory(Ed25519PrivateKey.generate())
    bench.populate(target, factory, 120, 7)  # import_bundles: COPY on PostgreSQL
    db = ServerDB(target)
    try:
        assert truth.check_documents(db) == 120  # every log entry names its stored bytes, one hash chain
        assert truth.check_board(db) == 7  # the board rows are what the bundles give
        fp = db.list_keys()[0].fingerprint
        raws = [db.bundle_raw(b["id"]) for b in db.list_bundles(None, 1000)]
        assert db.key_stored_bytes(fp) == sum(len(r) for r in raws)
        # the next batch continues the same chain, and an upload-path accept adds to the same counter
        more = [factory.make(f"model-{i % 7:04d}", 500 + i, random.Random(i))[0] for i in range(5)]
        checked = []
        for raw in more:
            f = check_document(raw, FORMAT, "b").facts
            checked.append(CheckedBundle(f["id"], raw, f["sha256"], "sentiment", f["model"]["name"],
                                         f["model"]["digest"], fp, f["created_at"], epoch_us(f["created_at"]),
                                         {d["name"]: d["digest"] for d in f["datasets"]}, board_metrics(f["metrics"]),
                                         f["results_key"]))
        db.import_bundles(checked[:3], entry_hash)
        db.accept_many(checked[3:], entry_hash)
        assert truth.check_documents(db) == 125
        assert truth.check_board(db) == 7
        assert db.key_stored_bytes(fp) == sum(len(r) for r in raws) + sum(len(r) for r in more)
    finally:
        db.close()


def test_m008_counts_what_older_boards_stored(board):
    db_path, _factory = board
    db = ServerDB(db_path)
    fp = db.list_keys()[0].fingerprint
    expected = sum(len(db.bundle_raw(b["id"])) for b in db.list_bundles(None, 1000))
    with db.tx() as c:  # the board as the code before m008 left it
        c.execute("DROP TABLE key_usage")
        c.execute("DELETE FROM server_migrations WHERE name = 'm008_key_usage'")
    db.close()
    db = ServerDB(db_path)
    try:
        assert "m008_key_usage" in db.applied_migrations()
        assert db.key_stored_bytes(fp) == expected > 0
        assert db.key_stored_bytes("sha256:" + "0" * 64) == 0
    finally:
        db.close()


def test_a_small_upload_to_an_sqlite_board_is_checked_on_the_event_loop_and_others_in_a_thread(db_target, tmp_path):
    """Issue 50 item 4: the hop to a worker thread and back cost ~10 % of a small upload's CPU, so a small body to
    an SQLite board is checked and stored on the event loop; a large body, a flood, or a PostgreSQL board (whose
    writes are network round trips the loop must not wait on) keep the thread. Real app states on both backends."""
    from fastapi.testclient import TestClient

    from dynadesk.sync.server.app import create_app
    from dynadesk.sync.server.routes_uploads import on_the_loop

    app = create_app(db_target, tmp_path / "server.key")
    with TestClient(app):  # the lifespan starts the upload pool, as a served app has it
        state = app.state.server
        sqlite = not state.db.postgres
        assert on_the_loop(state, 4_000) is sqlite
        assert not on_the_loop(state, INLINE_MAX_BYTES + 1)
        with contextlib.ExitStack() as places:
            for _ in range(state.upload_pool.bound // 2 + 1):  # more than half the admission places: a flood
                places.enter_context(state.upload_pool.admit())
            assert not on_the_loop(state, 4_000)
        assert on_the_loop(state, 4_000) is sqlite
