"""Audit against a real ``dynadesk-server`` process, on SQLite and on PostgreSQL: is the bundle in its log?"""

from __future__ import annotations

import json
import subprocess

import pytest
from click.testing import CliRunner
from support.sync import NO_LIMITS, free_port, make_run, server_bin, start_server, stop_server, workspace_with_key

from dynadesk.audit.audit import AuditOptions, audit_bundle
from dynadesk.audit.report import DIFFERS, IDENTICAL
from dynadesk.cli import cli
from dynadesk.sync.client.create import create_bundle
from dynadesk.sync.client.upload import sync_queue


def _admin(db, *args) -> str:
    res = subprocess.run([server_bin(), *args, "--db", str(db)], capture_output=True, text=True, timeout=60)
    assert res.returncode == 0, res.stderr
    return res.stdout


@pytest.fixture
def served(home, tmp_path, db_target):
    ws, store = workspace_with_key(home)
    runs = [make_run(store, ws.runs_dir, model=m, perf=p) for m, p in (("bow-a", 61.0), ("bow-b", 70.0))]
    pub = tmp_path / "alice.pub"
    pub.write_bytes((ws.keys_dir / "submitter.pub").read_bytes())
    db = db_target
    _admin(db, "keys", "add", str(pub), "--name", "alice")
    _admin(db, "datasets", "import-workspace", "--home", str(home))
    port = free_port()
    proc = start_server(db, port, (*NO_LIMITS, "--key", str(tmp_path / "server.key")))
    try:
        yield ws, store, runs, f"http://127.0.0.1:{port}"
    finally:
        stop_server(proc)
        store.close()


def test_a_synced_bundle_is_found_in_the_log_and_an_unsynced_one_is_not(served, tmp_path):
    ws, store, runs, url = served
    sent = create_bundle(ws, store, runs[0])
    report = sync_queue(store, url)
    assert report.sent == [sent.id]
    unsent = create_bundle(ws, store, runs[1])

    audited = audit_bundle(store, ws, sent.raw, AuditOptions(server=url))
    for name in ("transparency.log", "transparency.entry", "transparency.server_copy"):
        assert audited.get(name).verdict == IDENTICAL, audited.get(name)
    assert "log entry #1" in audited.get("transparency.entry").note
    assert "pin it with --server-key" in audited.get("transparency.log").note

    missing = audit_bundle(store, ws, unsent.raw, AuditOptions(server=url))
    assert missing.get("transparency.log").verdict == IDENTICAL
    entry = missing.get("transparency.entry")
    assert entry.verdict == DIFFERS and "has no entry for this bundle" in entry.note
    assert "transparency.entry" in [c.field for c in missing.failures]

    path = tmp_path / "sent.json"
    path.write_bytes(sent.raw)
    res = CliRunner().invoke(cli, ["audit", str(path), "--server", url, "--server-key", "11" * 32, "--json"])
    assert res.exit_code == 1, res.output
    log = next(c for c in json.loads(res.output)["checks"] if c["field"] == "transparency.log")
    assert log["verdict"] == "differs" and "different server key" in log["note"]
