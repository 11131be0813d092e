"""Server database internals behind the upload path: migrations, the key/dataset cache,
the log's entry hash, background checkpoints and the multi-worker listening socket."""

from __future__ import annotations

import hashlib
import socket
import sqlite3

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from support import ASSETS

from dynadesk.canonical import canonical_bytes
from dynadesk.sync.format.keys import load_or_create_server_key
from dynadesk.sync.format.translog import entry_hash, sign_head, verify_log
from dynadesk.sync.server import cli as server_cli
from dynadesk.sync.server.db import CheckedBundle, ServerDB

KEY, FP = b"\x01" * 32, "sha256:" + hashlib.sha256(b"\x01" * 32).hexdigest()


def _bundle(i: int) -> CheckedBundle:
    bid = hashlib.sha256(f"b{i}".encode()).hexdigest()
    return CheckedBundle(bid, b"{}", hashlib.sha256(bid.encode()).hexdigest(), "sentiment", f"m{i % 3}",
                         "sha256:" + "0" * 64, FP, f"2024-01-01T00:00:{i % 60:02d}.000Z",
                         1_704_067_200_000_000 + (i % 60) * 1_000_000, {}, {"perf": i})


def test_a_new_database_records_the_migration_set_and_reopening_applies_nothing_twice(db_target):
    path = db_target
    db = ServerDB(path)
    names = db.applied_migrations()
    assert names[:3] == ["m001_tables", "m002_config_version", "m003_roles_times_versions"]
    db.add_key(FP, KEY, "alice")
    version = lambda: db.conn.execute("SELECT value FROM meta WHERE key = 'config_version'").fetchone()[0]  # noqa: E731
    before = int(version())
    db.add_dataset("sentiment", "d", "test", "sha256:" + "1" * 64, 3)
    db.revoke_key(FP, "gone")
    assert int(version()) == before + 2  # the triggers count every change to keys and datasets
    db.close()
    again = ServerDB(path)
    assert again.applied_migrations() == names
    assert again.get_key(FP).revoke_reason == "gone"


def test_upload_config_is_cached_until_keys_or_datasets_change_in_any_process(db_target):
    db, other = ServerDB(db_target), ServerDB(db_target)
    other.add_key(FP, KEY, "alice")
    config = db.upload_config()
    assert config.keys[FP].revoked_at is None and config.datasets == {}
    assert db.upload_config() is config
    other.accept(_bundle(1), entry_hash)  # another connection stores an upload: no reload
    assert db.upload_config() is config
    other.add_dataset("sentiment", "d", "test", "sha256:" + "1" * 64, 3)
    config = db.upload_config()
    assert list(config.datasets["sentiment"]) == [("sentiment", "d")]
    other.revoke_key(FP, "leaked")
    assert db.upload_config().keys[FP].revoke_reason == "leaked"
    db.add_key("sha256:" + "2" * 64, b"\x02" * 32, "bob")  # this connection's own change
    assert "sha256:" + "2" * 64 in db.upload_config().keys


TEXT = st.text(st.characters(codec="utf-8", exclude_categories=["Cs"]), max_size=20)


@settings(max_examples=200, deadline=None)
@given(seq=st.integers(0, 2 ** 53 - 1), texts=st.lists(st.one_of(TEXT, st.text("0123456789abcdef", min_size=64,
                                                                               max_size=64)), min_size=4, max_size=4))
def test_entry_hash_is_the_sha256_of_the_rfc8785_entry(seq, texts):
    bid, sha, received, prev = texts
    entry = {"seq": seq, "bundle_id": bid, "bundle_sha256": sha, "received_at": received, "prev": prev}
    assert entry_hash(seq, bid, sha, received, prev) == hashlib.sha256(canonical_bytes(entry)).hexdigest()


def test_background_checkpoints_keep_every_commit_and_the_log_verifiable(tmp_path):
    path = tmp_path / "s.db"
    db = ServerDB(path, background_checkpoint=True)
    db.checkpointer.every = 10
    assert db.conn.execute("PRAGMA wal_autocheckpoint").fetchone()[0] == 0
    db.add_key(FP, KEY, "alice")
    for i in range(60):
        db.accept(_bundle(i), entry_hash)
    reader = ServerDB(path)  # another connection sees every commit at once
    assert reader.count_bundles() == 60
    db.close()  # stops the thread after a last checkpoint
    assert db.checkpointer.checkpoints >= 1
    assert reader.integrity_check() == "ok"
    key = load_or_create_server_key(tmp_path / "server.key")
    size, head = reader.log_head()
    verify_log(reader.log_entries(1, 100), sign_head(key, size, head, "2024-01-01T00:00:00.000Z"))
    assert sorted(r["metrics"]["perf"] for r in reader.board_rows("sentiment")) == [57, 58, 59]


def test_multi_worker_serve_sets_tcp_nodelay_on_the_listening_socket(monkeypatch):
    import uvicorn
    import uvicorn.supervisors

    seen = {}

    class FakeSupervisor:
        def __init__(self, config, sockets):
            seen["sock"] = sockets[0]

        def run(self):
            sock = seen["sock"]
            seen["nodelay"] = sock.getsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY)
            sock.close()

    monkeypatch.setattr(uvicorn.supervisors, "Multiprocess", FakeSupervisor)
    server_cli._serve_workers(uvicorn.Config("x:y", workers=2, host="127.0.0.1", port=0))
    assert seen["nodelay"] == 1


def test_checkpointer_thread_ends_when_idle_and_restarts_on_the_next_commit(tmp_path):
    db = ServerDB(tmp_path / "s.db", background_checkpoint=True)
    cp = db.checkpointer
    cp.max_delay, cp.idle_exit = 0.05, 0.1
    db.add_key(FP, KEY, "alice")
    db.accept(_bundle(1), entry_hash)
    first = cp._thread
    assert first is not None
    first.join(timeout=10)
    assert cp._thread is None and cp.checkpoints >= 1
    db.accept(_bundle(2), entry_hash)
    assert cp._thread is not None and cp._thread is not first
    db.close()
    assert db.conn is not None and cp._thread is None


@pytest.mark.parametrize("n", [1, 5])
def test_replay_is_refused_after_background_commits(tmp_path, n):
    from dynadesk.errors import ReplayError

    db = ServerDB(tmp_path / "s.db", background_checkpoint=True)
    db.add_key(FP, KEY, "alice")
    for i in range(n):
        db.accept(_bundle(i), entry_hash)
    with pytest.raises(ReplayError, match="already accepted at"):
        db.accept(_bundle(0), entry_hash)
    db.close()



def test_a_commit_landing_during_a_checkpoint_does_not_stop_the_wal_from_starting_over(tmp_path):
    """The second checkpoint pass (under the writers' lock) copies what was committed during the first,
    so the next writer can restart the WAL; otherwise a steady upload stream grows it without bound."""
    import os

    from dynadesk.sync.server.checkpoint import Checkpointer

    path = tmp_path / "s.db"
    db = ServerDB(path)
    db.conn.execute("PRAGMA wal_autocheckpoint=0")
    db.add_key(FP, KEY, "alice")
    for i in range(30):
        db.accept(_bundle(i), entry_hash)
    cp = Checkpointer(path)  # its thread starts only on committed(); _checkpoint is driven by hand here
    cp._lock_fd = os.open(str(path) + ".lock", os.O_RDWR)
    real = sqlite3.connect(path, isolation_level=None)
    real.execute("PRAGMA wal_autocheckpoint=0")
    reader = sqlite3.connect(path, isolation_level=None)
    reader.execute("BEGIN")
    reader.execute("SELECT COUNT(*) FROM bundles").fetchone()  # a snapshot: the first pass stops at it
    db.accept(_bundle(100), entry_hash)  # committed "while the first pass runs"
    calls = []

    class Conn:  # the reader finishes once the first (unlocked) pass is done, as a board query would
        def execute(self, sql):
            out = real.execute(sql)
            calls.append(sql)
            if len(calls) == 1:
                reader.execute("COMMIT")
            return out

    cp._checkpoint(Conn())
    assert cp.checkpoints == 1
    db.accept(_bundle(101), entry_hash)  # starts the WAL over if all of it was copied
    _busy, frames, _done = real.execute("PRAGMA wal_checkpoint(PASSIVE)").fetchone()
    assert 0 < frames < 20, frames  # only the last commit's pages, not all 32 commits'
    real.close()
    reader.close()
    os.close(cp._lock_fd)
    db.close()


def test_wal_stays_bounded_under_a_steady_stream_of_commits(tmp_path):
    """Background checkpoints must let SQLite restart the WAL even though commits never pause."""
    path = tmp_path / "s.db"
    db = ServerDB(path, background_checkpoint=True)
    db.checkpointer.every = 50
    db.add_key(FP, KEY, "alice")
    sizes = []
    for i in range(1500):
        db.accept(_bundle(i), entry_hash)
        if i % 100 == 99:
            sizes.append((tmp_path / "s.db-wal").stat().st_size)
    assert db.checkpointer.checkpoints >= 3
    assert max(sizes[5:]) < 4 * max(sizes[:5]) + (1 << 20), sizes  # no steady growth with the commit count
    assert db.count_bundles() == 1500 and db.integrity_check() == "ok"
    db.close()


def test_a_database_made_by_the_old_server_code_upgrades_and_keeps_serving(tmp_path):
    """tests/assets/server_db_v2.sql is the dump of a database the previous server code (own migration
    counter, meta.schema_version = 2) made: one key, two datasets, one accepted bundle."""

    from dynadesk.sync.format.envelope import parse_bundle

    path = tmp_path / "old.db"
    conn = sqlite3.connect(path)
    conn.executescript((ASSETS / "server_db_v2.sql").read_text(encoding="utf-8"))
    conn.close()
    db = ServerDB(path)
    assert "m003_roles_times_versions" in db.applied_migrations()
    assert db.conn.execute("SELECT value FROM meta WHERE key = 'schema_version'").fetchone() is None
    (row,) = db.board_rows("sentiment")
    assert row["model"] == "bow-old" and row["submitter"] == "Old Lab" and row["attestations"] == []
    bundle = parse_bundle(db.bundle_raw(row["bundle_id"]))
    assert row["datasets"] == {d["name"]: d["digest"] for d in bundle.payload.to_json()["datasets"]}  # backfilled
    assert db.conn.execute("SELECT created_us FROM board").fetchone()[0] > 0
    assert db.get_key(row["key_fingerprint"]).role == "submitter"
    assert {d["version"] for d in db.datasets("sentiment")} == {1}
    assert [e["kind"] for e in db.log_entries(1, 10)] == ["bundle"]
    key = load_or_create_server_key(tmp_path / "server.key")
    size, head = db.log_head()
    verify_log(db.log_entries(1, 10), sign_head(key, size, head, "2026-01-01T00:00:00.000Z"))
    db.add_key(FP, KEY, "New Lab")
    db.accept(_bundle(7), entry_hash)  # and it takes new uploads, extending the old chain
    db.close()
    again = ServerDB(path)
    assert again.count_bundles() == 2
    assert again.log_head()[0] == 2
