"""The leaderboard server under concurrent load on loopback (issue 10): a real ``dynadesk-server``
process takes valid, duplicate and invalid bundles from several clients for a bounded time; afterwards
every valid bundle sent is stored exactly once, nothing invalid is stored, duplicates are replays, there
was no 5xx, and the transparency log verifies. The driver and the checks live in bench/bench_load.py
(which also reports latency and throughput); here they run at a small size, and the check is shown to
catch a broken store (tests/bench/test_bench_smoke.py runs the benchmark itself). ``pytest --long``: 8 clients
for 30 s.
"""

from __future__ import annotations

import importlib.util
import sys

import pytest
import requests
from support import REPO, fuzz_examples
from support.sync import free_port, start_server, stop_server

from dynadesk.errors import LogIntegrityError
from dynadesk.sync.server.db import ServerDB

CLIENTS = fuzz_examples(4, 8)
SECONDS = fuzz_examples(5, 30)
BENCH = REPO / "bench" / "bench_load.py"


@pytest.fixture(scope="module")
def bench_load():
    if "bench_load" in sys.modules:
        return sys.modules["bench_load"]
    spec = importlib.util.spec_from_file_location("bench_load", BENCH)
    mod = importlib.util.module_from_spec(spec)
    sys.modules["bench_load"] = mod
    spec.loader.exec_module(mod)
    return mod


def test_concurrent_valid_duplicate_and_invalid_uploads_store_each_valid_bundle_once(bench_load, tmp_path):
    db_path = tmp_path / "board.db"
    work = bench_load.make_workload(db_path, n_valid=6000 if SECONDS > 5 else 2500, n_invalid=150)
    port = free_port()
    url = f"http://127.0.0.1:{port}"
    proc = start_server(db_path, port)
    try:
        result = bench_load.drive(url, work, CLIENTS, SECONDS)
        assert SECONDS <= result.seconds < SECONDS + 60  # bounded: clients stop at the deadline
        # the mix really was mixed and concurrent
        assert result.count("valid", 201) > 20 and result.count("duplicate", 409) > 5
        assert result.count("invalid") > 5 and result.count("invalid", 201) == 0
        assert {r[3] for r in result.requests if r[0] == "invalid"} >= {"unknown_key", "malformed_bundle"}
        facts = bench_load.check(db_path, url, work, result)
        assert facts["stored"] == facts["valid_sent"] == facts["log_size"] > 20
        # the HTTP view agrees with the database: each sent valid bundle's exact bytes, once
        listed, after = [], 0
        while page := requests.get(f"{url}/api/bundles", params={"after": after, "limit": 1000}, timeout=30).json():
            listed += [b["id"] for b in page]
            after = page[-1]["seq"]
        assert len(listed) == len(set(listed)) == facts["stored"]
        raw_by_id = dict(work.valid)
        sample = listed[:: max(1, len(listed) // 25)]
        for bid in sample:
            assert requests.get(f"{url}/api/bundles/{bid}", timeout=30).content == raw_by_id[bid]
        lat = result.latencies()
        assert len(lat) == len(result.requests) and result.percentile(0.5) <= result.percentile(0.99) <= lat[-1]
        # the check is not vacuous: a rewritten log entry and a lost bundle are both caught
        evil = ServerDB(db_path)
        with evil.tx() as c:
            c.execute("UPDATE log SET received_at = 'x' WHERE seq = 2")
        with pytest.raises(LogIntegrityError):
            bench_load.check(db_path, url, work, result)
        with evil.tx() as c:
            c.execute("DELETE FROM log WHERE seq = (SELECT MAX(seq) FROM log)")
            c.execute("DELETE FROM bundles WHERE seq = (SELECT MAX(seq) FROM bundles)")
        evil.close()
        with pytest.raises(AssertionError, match="differ"):
            bench_load.check(db_path, url, work, result)
    finally:
        stop_server(proc)

