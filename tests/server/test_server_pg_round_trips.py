"""Fewer PostgreSQL round trips per upload (issue 50 item 4): a transaction's ``BEGIN`` and writer lock go as one
query, and a borrowed connection is not probed first. What must not change: a write that fails leaves nothing (no log
entry; the chain goes on from the last stored one), a failed transaction is rolled back and its connection serves the
next one, and a connection the database dropped is replaced for a write as for a read."""

from __future__ import annotations

import hashlib
from dataclasses import replace

import pytest

from dynadesk.errors import StoreError
from dynadesk.sync.format.translog import entry_hash
from dynadesk.sync.server.db import CheckedBundle, ServerDB

KEY, FP = b"\x03" * 32, "sha256:" + hashlib.sha256(b"\x03" * 32).hexdigest()


def _bundle(i: int) -> CheckedBundle:
    bid = hashlib.sha256(f"trip{i}".encode()).hexdigest()
    return CheckedBundle(bid, b'{"i": %d}' % i, hashlib.sha256(bid.encode()).hexdigest(), "sentiment", f"m{i}",
                         "sha256:" + "0" * 64, FP, f"2024-01-01T00:00:{i:02d}.000Z",
                         1_704_067_200_000_000 + i * 1_000_000, {"d": "sha256:" + "1" * 64}, {"perf": i})


def test_a_failing_write_leaves_nothing_and_the_chain_goes_on(pg_url):
    db = ServerDB(pg_url)
    db.add_key(FP, KEY, "alice")
    db.accept(_bundle(1), entry_hash)
    stranger = replace(_bundle(2), key_fingerprint="sha256:" + "9" * 64)  # no such key: the bundles row's foreign key
    with pytest.raises(StoreError, match="foreign key"):
        db.accept(stranger, entry_hash)
    assert db.log_head()[0] == 1 and db.key_stored_bytes(stranger.key_fingerprint) == 0
    db.accept(_bundle(3), entry_hash)
    entries = db.log_entries(1, 10)
    assert [e["bundle_id"] for e in entries] == [_bundle(1).bundle_id, _bundle(3).bundle_id]
    assert entries[1]["seq"] == 2 and entries[1]["prev_hash"] == entries[0]["entry_hash"]
    db.close()


def test_writes_are_seen_in_their_transaction_and_a_failed_one_is_rolled_back(pg_url):
    db = ServerDB(pg_url)
    insert = "INSERT INTO meta(key, value) VALUES (?, ?)"
    with db.tx() as c:
        c.write_all([(insert, ["trip-a", "1"]), (insert, ["trip-b", "2"])])
        assert c.execute("SELECT value FROM meta WHERE key = ?", ["trip-b"]).fetchone()[0] == "2"
    with pytest.raises(ValueError, match="stop"), db.tx() as c:
        c.write_all([(insert, ["trip-c", "3"])])
        c.execute("SELECT 1").fetchone()
        raise ValueError("stop")
    with db.lock:
        stored = db.conn.execute("SELECT key, value FROM meta WHERE key LIKE ? ORDER BY key", ["trip-%"]).fetchall()
    assert [tuple(r) for r in stored] == [("trip-a", "1"), ("trip-b", "2")]
    db.close()


def test_a_dropped_connection_is_replaced_when_a_write_comes_first(postgres):
    url = postgres.new_database()
    db = ServerDB(url)
    postgres.drop_connections(url)
    db.add_key(FP, KEY, "alice")  # its BEGIN finds the dead connection; the pool is checked and it runs again
    db.accept(_bundle(1), entry_hash)
    assert [k.fingerprint for k in db.list_keys()] == [FP] and db.log_head()[0] == 1
    db.close()
