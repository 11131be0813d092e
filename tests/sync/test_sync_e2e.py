"""End to end on loopback: a real ``dynadesk-server`` process, the real CLI, and a server that goes away."""

from __future__ import annotations

import json
import subprocess

import pytest
import requests
from click.testing import CliRunner
from support.sync import free_port, make_run, server_bin, start_server, stop_server

from dynadesk.cli import cli
from dynadesk.sync.client.upload import SyncClient, sync_queue
from dynadesk.workspace import Workspace


def admin(db, *args) -> str:
    res = subprocess.run([server_bin(), *args, "--db", str(db)], capture_output=True, text=True, timeout=60)
    assert res.returncode == 0, res.stderr
    return res.stdout


@pytest.fixture
def setup(home, tmp_path):
    """Workspace with a key and evaluations; server DB with that key and the test sets registered."""
    runner = CliRunner()
    assert runner.invoke(cli, ["keys", "init"]).exit_code == 0
    pub = tmp_path / "alice.pub"
    assert runner.invoke(cli, ["keys", "export", "-o", str(pub)]).exit_code == 0
    ws = Workspace(home)
    store = ws.open_store()
    runs = [make_run(store, ws.runs_dir, model=m, perf=p) for m, p in (("bow-a", 61.0), ("bow-b", 72.0),
                                                                        ("bow-c", 66.0))]
    store.close()
    db = tmp_path / "board.db"
    assert "registered" in admin(db, "keys", "add", str(pub), "--name", "alice")
    assert "accepted 2 dataset(s)" in admin(db, "datasets", "import-workspace", "--home", str(home))
    return runner, ws, runs, db


def test_end_to_end_create_sync_board_and_idempotent_resync(setup):
    runner, ws, runs, db = setup
    port = free_port()
    proc = start_server(db, port)
    url = f"http://127.0.0.1:{port}"
    try:
        res = runner.invoke(cli, ["bundle", "create", str(runs[0]), "--json"])
        assert res.exit_code == 0, res.output
        bid = json.loads(res.output)["id"]
        res = runner.invoke(cli, ["sync", "--server", url, "--json"])
        assert res.exit_code == 0, res.output
        assert json.loads(res.output)["sent"] == [bid]
        board = requests.get(f"{url}/api/leaderboard/sentiment", timeout=10).json()
        assert [r["model"] for r in board["rows"]] == ["bow-a"]
        assert requests.get(f"{url}{board['rows'][0]['bundle_url']}", timeout=10).content == \
            (ws.bundles_dir / f"{bid}.json").read_bytes()
        # second sync: nothing queued, nothing added
        res = runner.invoke(cli, ["sync", "--json"])  # the server URL is remembered
        assert res.exit_code == 0 and json.loads(res.output)["sent"] == []
        assert len(requests.get(f"{url}/api/bundles", timeout=10).json()) == 1
        # even re-queuing the same bundle (a lost answer) adds nothing: the server says it has it
        store = ws.open_store()
        store.bundles.requeue(bid)
        store.close()
        res = runner.invoke(cli, ["sync", "--json"])
        assert res.exit_code == 0 and json.loads(res.output)["already"] == [bid]
        assert len(requests.get(f"{url}/api/bundles", timeout=10).json()) == 1
        status = json.loads(runner.invoke(cli, ["sync", "status", "--json"]).output)
        assert status["counts"] == {"queued": 0, "sent": 1, "rejected": 0}
        checked = json.loads(runner.invoke(cli, ["sync", "check-log", "--json"]).output)
        assert checked["size"] == 1 and checked["previous_size"] is None
        assert runner.invoke(cli, ["bundle", "create", str(runs[2])]).exit_code == 0
        assert runner.invoke(cli, ["sync"]).exit_code == 0
        res = runner.invoke(cli, ["sync", "check-log"])
        assert res.exit_code == 0 and "2 entries" in res.output and "extends the 1" in res.output
        # a server that rewrites history is caught (the attacker edits its own database)
        from dynadesk.sync.server.db import ServerDB
        evil = ServerDB(db)
        with evil.tx() as c:
            c.execute("UPDATE log SET bundle_sha256 = ? WHERE seq = 1", ["0" * 64])
        evil.close()
        res = runner.invoke(cli, ["sync", "check-log"])
        assert res.exit_code != 0 and "log entry 1" in str(res.exception)
        listed = json.loads(admin(db, "keys", "list", "--json"))
        assert listed[0]["name"] == "alice" and listed[0]["revoked_at"] is None
    finally:
        stop_server(proc)


def test_rejection_is_recorded_with_the_servers_reason(setup):
    runner, ws, runs, db = setup
    fp = json.loads(runner.invoke(cli, ["keys", "show", "--json"]).output)["fingerprint"]
    admin(db, "keys", "revoke", fp, "--reason", "key leaked")
    port = free_port()
    proc = start_server(db, port)
    try:
        assert runner.invoke(cli, ["bundle", "create", str(runs[1])]).exit_code == 0
        res = runner.invoke(cli, ["sync", "--server", f"http://127.0.0.1:{port}"])
        assert res.exit_code == 1 and "1 rejected" in res.output  # a rejection is not a success
        assert "1 upload(s) rejected" in res.output and "sync requeue --all-rejected" in res.output
        status = json.loads(runner.invoke(cli, ["sync", "status", "--json"]).output)
        row = status["bundles"][0]
        assert row["status"] == "rejected" and "revoked_key" in row["last_error"] and "key leaked" in row["last_error"]
    finally:
        stop_server(proc)


def test_server_stopped_mid_sync_keeps_the_rest_queued_until_it_is_back(setup):
    runner, ws, runs, db = setup
    for ev in runs:
        assert runner.invoke(cli, ["bundle", "create", str(ev)]).exit_code == 0
    port = free_port()
    url = f"http://127.0.0.1:{port}"
    proc = start_server(db, port)
    store = ws.open_store()
    try:
        def stop_after_first(bundle_id, outcome):
            if outcome == "sent":
                stop_server(proc)

        report = sync_queue(store, url, SyncClient(url, retries=2, backoff=0.05), progress=stop_after_first)
        assert not report.ok and "cannot reach" in report.error
        assert len(report.sent) == 1 and len(report.still_queued) == 2
        assert store.bundles.counts() == {"queued": 2, "sent": 1, "rejected": 0}
        queued = store.bundles.pending()
        assert all(r.attempts == 1 and "cannot reach" in r.last_error for r in queued[:1])
        # the CLI reports the failure too, and loses nothing
        res = runner.invoke(cli, ["sync", "--server", url])
        assert res.exit_code != 0 and "stay queued" in res.output
        assert store.bundles.counts()["queued"] == 2
        proc = start_server(db, port)
        res = runner.invoke(cli, ["sync", "--json"])
        assert res.exit_code == 0, res.output
        assert len(json.loads(res.output)["sent"]) == 2
        assert store.bundles.counts() == {"queued": 0, "sent": 3, "rejected": 0}
        board = requests.get(f"{url}/api/leaderboard/sentiment", timeout=10).json()
        assert sorted(r["model"] for r in board["rows"]) == ["bow-a", "bow-b", "bow-c"]
        log = requests.get(f"{url}/api/log", timeout=10).json()
        assert log["head"]["size"] == 3
    finally:
        store.close()
        stop_server(proc)


def test_a_rejected_bundle_is_requeued_from_the_cli_and_goes_in_once_fixed(setup, tmp_path):
    runner, ws, runs, db = setup
    store = ws.open_store()
    name = store.evaluations.get(runs[0]).datasets[0]
    digest = store.datasets.get(name).digest
    store.close()
    admin(db, "datasets", "add", "--task", "sentiment", "--name", name, "--digest", "sha256:" + "0" * 64,
          "--size", "1", "--replace")  # the board moved to other data: this bundle no longer fits
    port = free_port()
    url = f"http://127.0.0.1:{port}"
    proc = start_server(db, port)
    try:
        assert runner.invoke(cli, ["bundle", "create", str(runs[0])]).exit_code == 0
        res = runner.invoke(cli, ["sync", "--server", url])
        assert res.exit_code == 1 and "1 rejected" in res.output
        res = runner.invoke(cli, ["sync", "status"])
        assert res.exit_code == 0 and "rejected" in res.output and "not_on_board" in res.output
        assert "a different version of the data" in res.output  # the whole reason, not cut at 80 characters
        res = runner.invoke(cli, ["sync", "requeue"])
        assert res.exit_code == 2 and "--all-rejected" in res.output
        admin(db, "datasets", "add", "--task", "sentiment", "--name", name, "--digest", digest, "--size", "12",
              "--replace")  # the administrator restores the data the bundle was scored on (version 3)
        res = runner.invoke(cli, ["sync", "requeue", "--all-rejected", "--json"])
        assert res.exit_code == 0 and [r["status"] for r in json.loads(res.output)] == ["queued"]
        res = runner.invoke(cli, ["sync", "--json"])
        assert res.exit_code == 0 and len(json.loads(res.output)["sent"]) == 1, res.output
        status = json.loads(runner.invoke(cli, ["sync", "status", "--json"]).output)
        assert status["counts"] == {"queued": 0, "sent": 1, "rejected": 0}
        res = runner.invoke(cli, ["sync", "requeue", "0123456789abcdef"])
        assert res.exit_code != 0
    finally:
        stop_server(proc)
