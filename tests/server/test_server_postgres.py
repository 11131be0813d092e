"""The server database on PostgreSQL: many writers on one chain, cross-process caches, migrate-db,
old SQLite databases upgrading, and bad --db values answered in one line (a real PostgreSQL the
suite starts, see conftest's ``postgres``)."""

from __future__ import annotations

import hashlib
import inspect
import multiprocessing
import sqlite3
import subprocess
import threading
from pathlib import Path

import pytest
from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey
from support import ASSETS
from support.sync import server_bin

from dynadesk.errors import AlreadyExistsError, ConfigError, StoreError
from dynadesk.sync.format.keys import fingerprint, load_or_create_server_key, public_raw
from dynadesk.sync.format.translog import entry_hash, sign_head, verify_log
from dynadesk.sync.server.db import CheckedBundle, ServerDB
from dynadesk.sync.server.migrate_db import migrate, verify_chain

KEY, FP = b"\x01" * 32, "sha256:" + hashlib.sha256(b"\x01" * 32).hexdigest()


def _bundle(i: int, model: str | None = None) -> CheckedBundle:
    bid = hashlib.sha256(f"b{i}".encode()).hexdigest()
    created = f"2024-01-01T00:{i // 60 % 60:02d}:{i % 60:02d}.000Z"
    return CheckedBundle(bid, b'{"i": %d}' % i, hashlib.sha256(bid.encode()).hexdigest(), "sentiment",
                         model or f"m{i % 5}", "sha256:" + "0" * 64, FP, created,
                         1_704_067_200_000_000 + i * 1_000_000, {"d": "sha256:" + "1" * 64}, {"perf": i})


def _verified(db: ServerDB, tmp_path: Path) -> int:
    key = load_or_create_server_key(tmp_path / "k.key")
    size, head = db.log_head()
    verify_log(db.log_entries(1, 100_000), sign_head(key, size, head, "2026-01-01T00:00:00.000Z"))
    return size


def _writer(url: str, start: int, n: int) -> None:
    db = ServerDB(url)
    for i in range(start, start + n):
        db.accept(_bundle(i), entry_hash)
    db.close()


def test_writers_in_several_processes_and_threads_extend_one_chain(pg_url, tmp_path):
    db = ServerDB(pg_url)
    db.add_key(FP, KEY, "alice")
    ctx = multiprocessing.get_context("spawn")
    procs = [ctx.Process(target=_writer, args=(pg_url, p * 1000, 40)) for p in range(3)]
    for p in procs:
        p.start()
    threads = [threading.Thread(target=lambda t=t: [db.accept(_bundle(5000 + t * 100 + i), entry_hash)
                                                    for i in range(20)]) for t in range(3)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    for p in procs:
        p.join(60)
        assert p.exitcode == 0
    assert db.count_bundles() == 3 * 40 + 3 * 20
    assert _verified(db, tmp_path) == 180
    assert sorted(e["seq"] for e in db.log_entries(1, 1000)) == list(range(1, 181))
    db.close()


def test_a_replayed_bundle_from_two_processes_is_stored_once(pg_url):
    from dynadesk.errors import ReplayError

    a, b = ServerDB(pg_url), ServerDB(pg_url)
    a.add_key(FP, KEY, "alice")
    errors: list[Exception] = []

    def send(db: ServerDB) -> None:
        try:
            db.accept(_bundle(1), entry_hash)
        except ReplayError as exc:
            errors.append(exc)

    threads = [threading.Thread(target=send, args=(d,)) for d in (a, b, a, b)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert a.count_bundles() == 1 and len(errors) == 3
    a.close()
    b.close()


def test_the_board_cache_sees_another_processs_revocation_and_uploads(pg_url):
    reader, admin = ServerDB(pg_url), ServerDB(pg_url)
    admin.add_key(FP, KEY, "alice")
    admin.accept(_bundle(1), entry_hash)
    rows = reader.board_rows("sentiment")
    assert [r["model"] for r in rows] == ["m1"] and reader.board_rows("sentiment") is rows  # cached
    admin.accept(_bundle(2), entry_hash)
    assert [r["model"] for r in reader.board_rows("sentiment")] == ["m1", "m2"]
    admin.revoke_key(FP, "leaked")
    assert reader.board_rows("sentiment") == []
    reader.close()
    admin.close()


def test_text_sorts_bytewise_on_both_backends(db_target):
    """PostgreSQL's text columns use the C collation: boards list rows in SQLite's order."""
    db = ServerDB(db_target)
    db.add_key(FP, KEY, "alice")
    for i, name in enumerate(["b", "B", "a", "Z", "é", "_x"]):
        db.accept(_bundle(i, model=name), entry_hash)
    assert [r["model"] for r in db.board_rows("sentiment")] == sorted(["b", "B", "a", "Z", "é", "_x"])
    db.close()


def _sqlite_board(tmp_path: Path, n: int) -> Path:
    path = tmp_path / "board.db"
    db = ServerDB(path)
    db.add_key(FP, KEY, "alice")
    db.add_dataset("sentiment", "d", "test", "sha256:" + "1" * 64, 3)
    db.accept_many([_bundle(i) for i in range(n)], entry_hash)
    db.close()
    return path


def test_migrate_db_copies_every_table_and_verifies_the_chain(tmp_path, pg_url):
    path = _sqlite_board(tmp_path, 30)
    src = ServerDB(path)
    out = migrate(path, pg_url)
    assert out["rows"]["bundles"] == 30 and out["rows"]["log"] == 30 and out["log_size"] == 30
    dst = ServerDB(pg_url)
    assert dst.log_head() == src.log_head() and dst.board_rows("sentiment") == src.board_rows("sentiment")
    assert dst.bundle_raw(_bundle(7).bundle_id) == _bundle(7).raw and dst.list_keys() == src.list_keys()
    assert dst.dataset_versions() == src.dataset_versions()
    dst.accept(_bundle(99), entry_hash)  # the migrated board keeps taking uploads on the same chain
    assert verify_chain(dst) == 31
    with pytest.raises(AlreadyExistsError, match="not empty"):
        migrate(path, pg_url)
    src.close()
    dst.close()


def test_migrate_db_cli_reports_and_refuses_a_non_empty_target(tmp_path, postgres):
    path = _sqlite_board(tmp_path, 5)
    url = postgres.new_database()
    ok = subprocess.run([server_bin(), "migrate-db", str(path), url], capture_output=True, text=True, timeout=60)
    assert ok.returncode == 0, ok.stderr
    assert "log verified on the target: 5 entries" in ok.stdout and postgres.password not in ok.stdout
    again = subprocess.run([server_bin(), "migrate-db", str(path), url], capture_output=True, text=True, timeout=60)
    assert again.returncode == 1 and "is not empty" in again.stderr and "Traceback" not in again.stderr
    assert len(again.stderr.strip().splitlines()) == 1


def test_a_database_recorded_by_sqlite_utils_migrations_upgrades_in_place(tmp_path):
    """tests/assets/server_db_m003.sql: a database the sqlite-utils Migrations code made (one key, dataset, bundle)."""
    path = tmp_path / "m003.db"
    conn = sqlite3.connect(path)
    conn.executescript((ASSETS / "server_db_m003.sql").read_text(encoding="utf-8"))
    conn.close()
    db = ServerDB(path)
    assert db.applied_migrations()[:3] == ["m001_tables", "m002_config_version", "m003_roles_times_versions"]
    assert db.applied_migrations()[3:5] == ["m004_tasks", "m005_results_organisations"]
    assert [r["submitter"] for r in db.board_rows("sentiment")] == ["Lab M3"]
    before = int(db.conn.execute("SELECT value FROM meta WHERE key = 'config_version'").fetchone()[0])
    db.add_key("sha256:" + "2" * 64, b"\x02" * 32, "bob")  # the old triggers still count
    assert int(db.conn.execute("SELECT value FROM meta WHERE key = 'config_version'").fetchone()[0]) == before + 1
    db.accept(_bundle(3), entry_hash)  # and it extends the old chain
    assert _verified(db, tmp_path) == 2
    db.close()


def _cli(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([server_bin(), *args], capture_output=True, text=True, timeout=60)


@pytest.mark.parametrize("make_url, named", [
    (lambda pg: pg.url(password="wrong"), "password authentication failed"),
    (lambda pg: pg.url("no_such_db"), 'database "no_such_db" does not exist'),
    (lambda pg: "postgresql://postgres:secret@127.0.0.1:1/x", "Connection refused"),
    (lambda pg: "postgresql://postgres:secret@127.0.0.1:notaport/x", "not a valid PostgreSQL URL"),
    (lambda pg: "postgresql://postgres:secret@127.0.0.1:5432/x?nonsense=1", "not a valid PostgreSQL URL"),
    (lambda pg: "mysql://root@localhost/board", "not a database this server knows"),
])
def test_bad_database_urls_get_one_line_naming_the_problem(postgres, make_url, named):
    url = make_url(postgres)
    out = _cli("keys", "list", "--db", url)
    assert out.returncode == 1 and "Traceback" not in out.stderr, out.stderr
    assert len(out.stderr.strip().splitlines()) == 1 and named in out.stderr, out.stderr
    assert "secret" not in out.stderr and postgres.password not in out.stderr


def test_serve_on_postgresql_needs_a_key_file(pg_url):
    out = _cli("serve", "--db", pg_url, "--port", "0")
    assert out.returncode == 1 and "--key" in out.stderr and "Traceback" not in out.stderr


def test_every_admin_command_takes_a_postgresql_url(pg_url, tmp_path):
    from dynadesk.sync.format.keys import PUBLIC_NAME, generate_key, key_info

    generate_key(tmp_path / "keys")
    pem = tmp_path / "keys" / PUBLIC_NAME
    assert _cli("keys", "add", "--db", pg_url, str(pem), "--name", "Lab A").returncode == 0
    assert _cli("datasets", "add", "--db", pg_url, "--task", "sentiment", "--name", "d", "--digest",
                "sha256:" + "1" * 64, "--size", "3").returncode == 0
    listed = _cli("keys", "list", "--db", pg_url, "--json")
    assert key_info(tmp_path / "keys").fingerprint in listed.stdout
    assert '"name": "d"' in _cli("datasets", "list", "--db", pg_url, "--json").stdout
    revoked = _cli("keys", "revoke", "--db", pg_url, key_info(tmp_path / "keys").fingerprint)
    assert revoked.returncode == 0 and "revoked" in revoked.stdout


def test_no_database_round_trip_runs_on_the_event_loop():
    """FastAPI runs plain ``def`` routes in its thread pool; the only ``async`` ones (uploads) hand the
    database work to ``run_sync``, and the ``async`` dependencies only read the app's state. A new async route
    touching ``db`` would block every other request."""
    import ast
    import sys

    from dynadesk.sync.server import app as app_module
    from dynadesk.sync.server import deps, routes_uploads

    modules = {app_module, deps, *(sys.modules[r.routes[0].endpoint.__module__] for r in app_module.ROUTERS)}
    async_defs = {n.name for m in modules for n in ast.walk(ast.parse(inspect.getsource(m)))
                  if isinstance(n, ast.AsyncFunctionDef)}
    assert async_defs <= {"lifespan", "_http", "_invalid", "_domain", "receive", "upload", "upload_attestation",
                          "read_body", "__call__", "send_with_headers", "_state", "_db", "_view", "_tasks",
                          "handler"}
    assert "await run_sync(checked_upload, state, accept," in inspect.getsource(routes_uploads.receive)
    assert "accept(state.db," in inspect.getsource(routes_uploads.checked_upload)  # in the worker thread


def test_dropped_connections_are_replaced_and_an_unreachable_server_is_a_store_error(postgres):
    url = postgres.new_database()
    db = ServerDB(url)
    postgres.drop_connections(url)
    assert db.list_keys() == []  # the pool's check on borrowing replaced the dead connections
    db.add_key(FP, KEY, "alice")
    db.close()
    with pytest.raises(StoreError, match="cannot connect to PostgreSQL database"):
        ServerDB(url.replace(f":{postgres.port}/", ":1/"))
    with pytest.raises(ConfigError):
        ServerDB("postgresql://u:p@127.0.0.1:notaport/x")


def test_a_database_outage_is_a_503_with_retry_after_and_the_board_answers_again_after_it(postgres, tmp_path):
    """An outage is the server's fault, not the client's: a 400 ("rejected") told the sync client not to retry
    and a submitter that their bundle was bad. The database refuses connections mid-run (its pooled ones are
    terminated): each read gets a 503 naming the database, with Retry-After, within the pool's wait; once
    it is back the same app answers 200 and nothing stored was lost."""
    import time

    import psycopg
    from fastapi.testclient import TestClient

    from dynadesk.sync.server.app import create_app
    from dynadesk.sync.server.errors import STORE_RETRY_AFTER_S
    from dynadesk.sync.server.pg import POOL_TIMEOUT_S

    url = postgres.new_database()
    name = url.rsplit("/", 1)[1]
    seeded = ServerDB(url)
    seeded.add_key(FP, KEY, "alice")
    seeded.accept(_bundle(1), entry_hash)
    seeded.close()
    with TestClient(create_app(url, tmp_path / "server.key"), raise_server_exceptions=False) as client:
        assert client.get("/api/log/head").json()["size"] == 1
        with psycopg.connect(postgres.url(), autocommit=True) as admin:
            admin.execute(f'ALTER DATABASE "{name}" ALLOW_CONNECTIONS false')
            admin.execute("SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE datname = %s", [name])
        try:
            for path in ("/api/log/head", "/api/bundles", "/api/log"):
                t0 = time.monotonic()
                r = client.get(path)
                assert r.status_code == 503, (path, r.status_code, r.text)
                assert r.json()["error"] == "store_unavailable" and name in r.json()["detail"], r.json()
                assert r.headers["Retry-After"] == str(STORE_RETRY_AFTER_S)
                assert time.monotonic() - t0 < POOL_TIMEOUT_S + 10
        finally:
            with psycopg.connect(postgres.url(), autocommit=True) as admin:
                admin.execute(f'ALTER DATABASE "{name}" ALLOW_CONNECTIONS true')
        deadline = time.monotonic() + POOL_TIMEOUT_S + 30  # the pool reconnects with backoff: answers again soon
        while (r := client.get("/api/log/head")).status_code == 503 and time.monotonic() < deadline:
            time.sleep(0.5)
        assert r.status_code == 200 and r.json()["size"] == 1, r.text


def _signed_bundles(tmp_path: Path, n: int) -> tuple[Ed25519PrivateKey, list[CheckedBundle]]:
    """``n`` real signed bundles (log verify re-reads every entry's stored bytes), as an upload stores them."""
    from support.sync import make_run, workspace_with_key

    from dynadesk.sync.client.create import build_payload
    from dynadesk.sync.format.envelope import sign_payload
    from dynadesk.sync.format.timestamps import epoch_us
    from dynadesk.sync.rules.board import board_metrics
    from dynadesk.sync.server.migrations import results_key

    ws, store = workspace_with_key(tmp_path / "ws")
    template = build_payload(store, make_run(store, ws.runs_dir, model="bert"), "x")
    store.close()
    key = Ed25519PrivateKey.generate()
    out = []
    for i in range(n):
        p = {**template, "created_at": f"2026-01-01T00:00:{i:02d}.000Z", "evaluation_id": i,
             "model": {**template["model"], "name": f"m{i % 3}"},
             "submitter": {**template["submitter"], "key_fingerprint": fingerprint(public_raw(key))}}
        b = sign_payload(p, key)
        out.append(CheckedBundle(b.id, b.raw, hashlib.sha256(b.raw).hexdigest(), b.task, b.model_name,
                                 p["model"]["digest"], b.key_fingerprint, p["created_at"],
                                 epoch_us(p["created_at"], "created_at"),
                                 {d["name"]: d["digest"] for d in p["datasets"]}, board_metrics(p["metrics"]),
                                 results_key(p)))
    return key, out


def test_log_verify_recomputes_the_chain_and_catches_a_rewrite(db_target, tmp_path):
    db = ServerDB(db_target)
    key, bundles = _signed_bundles(tmp_path, 5)
    db.add_key(fingerprint(public_raw(key)), public_raw(key), "alice")
    db.accept_many(bundles, entry_hash)
    ok = _cli("log", "verify", "--db", str(db_target))
    assert ok.returncode == 0 and "log verified: 5 entries" in ok.stdout, ok.stderr
    with db.tx() as c:
        c.execute("UPDATE log SET bundle_sha256 = ? WHERE seq = 3", ["0" * 64])
    db.close()
    bad = _cli("log", "verify", "--db", str(db_target))
    assert bad.returncode == 1 and "log entry 3" in bad.stderr and "Traceback" not in bad.stderr
