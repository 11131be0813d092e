"""An upload's writes go to PostgreSQL as one statement (``Tx.write_all``: data-modifying ``WITH`` parts) and to
SQLite one by one (issue 39 item 3: fewer round trips per upload). What is stored must not change: the same
uploads (a newer and an older bundle of one model, intervals on one, a replay) leave the same rows in every
table on both backends as the bulk import does, apart from the times of receipt the log hashes in."""

from __future__ import annotations

import hashlib

import pytest

from dynadesk.errors import ReplayError
from dynadesk.sync.format.translog import entry_hash
from dynadesk.sync.server.db import CheckedBundle, ServerDB

KEY = b"\x02" * 32
FP = "sha256:" + hashlib.sha256(KEY).hexdigest()

TABLES = {"log": "seq, bundle_id, bundle_sha256, kind", "bundles": "seq, id, task, model_name, model_digest,"
          " key_fingerprint, created_at, raw, created_us, results_key",
          "board": "task, model_name, key_fingerprint, bundle_id, created_at, model_digest, metrics, created_us,"
          " datasets", "key_usage": "fingerprint, bundles, stored_bytes",
          "bundle_intervals": "bundle_id, intervals, outcomes, resampled"}
STATS = {"intervals": {"d": {"low": 1.5, "high": 2.5}}, "outcomes": {"d": {"n": 3}}, "resampled": {"d": {"x": "%?"}}}


def _bundle(i: int, model: str | None = None) -> CheckedBundle:
    bid = hashlib.sha256(f"b{i}".encode()).hexdigest()
    return CheckedBundle(bid, b'{"i": %d, "x": "%%?"}' % i, hashlib.sha256(bid.encode()).hexdigest(), "sentiment",
                         model or f"m{i}", "sha256:" + "0" * 64, FP, f"2024-01-01T00:00:{i:02d}.000Z",
                         1_704_067_200_000_000 + i * 1_000_000, {"d": "sha256:" + "1" * 64}, {"perf": {"values": i}})


def _uploads():
    from dataclasses import replace

    newer, older = _bundle(7, "twice"), _bundle(3, "twice")  # the older one arrives second: the board keeps newer
    return [_bundle(1), replace(_bundle(2), stats=STATS), newer, older, _bundle(4)]


def _stored(db: ServerDB) -> dict[str, list[tuple]]:
    out = {}
    with db.lock:
        for table, cols in TABLES.items():
            rows = db.conn.execute(f"SELECT {cols} FROM {table} ORDER BY 1, 2").fetchall()
            out[table] = [tuple(bytes(v) if isinstance(v, memoryview) else v for v in r) for r in rows]
    return out


def _fill(target, how: str) -> ServerDB:
    db = ServerDB(target)
    db.add_key(FP, KEY, "alice")
    if how == "accept":
        for b in _uploads():
            db.accept(b, entry_hash)
        with pytest.raises(ReplayError, match="already accepted"):
            db.accept(_uploads()[0], entry_hash)
    else:
        db.import_bundles(_uploads(), entry_hash)
    return db


def test_uploads_store_the_same_rows_on_both_backends_as_the_bulk_import(tmp_path, pg_url, postgres):
    found = {}
    for name, target, how in (("sqlite", tmp_path / "a.db", "accept"), ("postgresql", pg_url, "accept"),
                              ("import", tmp_path / "b.db", "import")):
        db = _fill(target, how)
        found[name] = _stored(db)
        entries = db.log_entries(1, 100)
        for prev, entry in zip(entries, entries[1:]):  # one chain, each entry hashing its predecessor
            assert entry["prev_hash"] == prev["entry_hash"]
        db.close()
    assert found["sqlite"] == found["postgresql"]
    board = {r[1]: r for r in found["sqlite"]["board"]}
    assert board["twice"][3] == _bundle(7).bundle_id  # the newer bundle holds the row
    assert found["sqlite"]["key_usage"] == [(FP, 5, sum(len(b.raw) for b in _uploads()))]
    assert [r[0] for r in found["sqlite"]["bundle_intervals"]] == [_bundle(2).bundle_id]
    # the bulk import stores no intervals; everything else is what the uploads stored
    assert {k: v for k, v in found["import"].items() if k != "bundle_intervals"} == \
        {k: v for k, v in found["sqlite"].items() if k != "bundle_intervals"}
