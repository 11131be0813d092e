"""Chaos on the real services (issue 38): PostgreSQL restarted like a crash during a stream of uploads.

The board's PostgreSQL runs with the durability settings docs/operators.md recommends (``fsync``,
``synchronous_commit`` and ``full_page_writes`` on; the suite's other clusters turn them off for speed).
Two clients stream signed bundles at a real ``dynadesk-server``; mid-stream the database is stopped with
``pg_ctl -m immediate`` (no checkpoint, as a power cut leaves it) and started again. Afterwards: every
upload a client saw acknowledged is stored exactly once, the log chains exactly the stored bytes and
verifies against the server's key, the server answered the outage with 503s (retryable, never a 400 that
would tell the sync queue to give up), and re-sending everything adds exactly the missing bundles.
(kill -9 of the server process itself mid-upload: tests/reliability/test_reliability_sync.py.)
"""

from __future__ import annotations

import shutil
import tempfile
import threading
import time
from collections import Counter

import pytest
from support import missing
from support.pg import Cluster, pg_bin
from support.sync import NO_LIMITS, free_port, start_server, stop_server
from test_reliability_sync import SERVER_BUNDLES, check_server, register, resend_everything, signed_stream

from dynadesk.errors import ServerUnavailable, UploadRejected
from dynadesk.sync.client.upload import SyncClient
from dynadesk.sync.server.db import ServerDB

pytestmark = [pytest.mark.integration, pytest.mark.timeout(900)]  # its own PostgreSQL cluster


@pytest.fixture
def durable_cluster():
    """A private cluster with the recommended durability settings (not under tmp_path: private to root)."""
    if pg_bin() is None:
        missing("PostgreSQL (initdb, pg_ctl)", "run packaging/system_deps.sh (Debian package postgresql)")
    root = tempfile.mkdtemp(prefix="dynadesk-pg-durable-")
    cluster = Cluster(root, fast=False)
    yield cluster
    cluster.stop()
    shutil.rmtree(root, ignore_errors=True)


def test_postgresql_crash_restart_mid_upload_loses_no_acknowledged_bundle(durable_cluster, tmp_path):
    bundles, ws = signed_stream(tmp_path, SERVER_BUNDLES)
    url_db = durable_cluster.new_database()
    db = ServerDB(url_db)
    register(ws, db)
    all_ids = {b.id for b in bundles}
    port = free_port()
    url = f"http://127.0.0.1:{port}"
    proc = start_server(url_db, port, (*NO_LIMITS, "--key", str(tmp_path / "server.key")))
    try:
        acked: list[str] = []
        errors: list[str] = []
        crashed: list[str] = []

        outcomes_seen: list[str] = []

        def upload(half: list) -> None:
            client = SyncClient(url, retries=0, timeout=10)
            for b in half:
                try:
                    answer = client.upload(b.id, b.raw)
                except ServerUnavailable as exc:
                    errors.append(str(exc))
                    return
                except UploadRejected as exc:
                    crashed.append(f"{b.id}: {exc.code}: {exc}")
                    return
                except BaseException as exc:  # noqa: BLE001 - a thread's failure is reported by the test below
                    crashed.append(repr(exc))
                    return
                outcomes_seen.append(answer.get("status"))
                if answer.get("status") == "accepted":
                    acked.append(b.id)

        threads = [threading.Thread(target=upload, args=(h,)) for h in (bundles[0::2], bundles[1::2])]
        for t in threads:
            t.start()
        target = len(bundles) // 3
        deadline = time.monotonic() + 120
        while len(acked) < target and time.monotonic() < deadline:
            time.sleep(0.005)
        assert len(acked) >= target, f"the stream did not get going ({len(acked)} acknowledged)"
        at_restart = len(acked)
        durable_cluster.restart("immediate")
        for t in threads:
            t.join(timeout=120)
        assert not any(t.is_alive() for t in threads)
        assert crashed == [], crashed
        assert at_restart < len(bundles), "the restart did not land mid-stream"
        print(f"restart after {at_restart} of {len(bundles)} acknowledged; {len(errors)} client(s) met a 503; "
              f"outcomes {dict(Counter(outcomes_seen))}")
        # an upload in flight either waits for the pool's new connection and succeeds, or gets a 503 to retry
        assert all("503" in e or "store_unavailable" in e or "unavailable" in e.lower() for e in errors), errors
        db.close()
        db = ServerDB(url_db)  # a fresh connection after the crash
        stored = check_server(db, url)
        assert set(acked) <= set(stored), "an acknowledged bundle was lost in the crash"
        assert set(stored) <= all_ids
        resend_everything(db, url, bundles, retries=3)
    finally:
        stop_server(proc)
        db.close()
