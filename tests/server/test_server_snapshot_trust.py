"""What a snapshot proves (issue 44, item 6), attacked on a real ``dynadesk-server`` over SQLite and PostgreSQL.

The board of tests/support/badges.py (three reproduced rows, one not audited) is frozen by ``dynadesk-server
snapshot create``; then snapshots are forged: signed by another key, by the real key dropping an honest row as
"key revoked" or "audit…", or stating their own reference rows. On the old code every forgery verified "OK"
(a file with no key at all, always), and an old snapshot verified with no word that newer ones exist: each test
here was seen failing there.
"""

from __future__ import annotations

import copy
import json

import pytest
import requests
from click.testing import CliRunner
from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey
from support.badges import TASK, BadgeBoard

from dynadesk.cli import cli
from dynadesk.errors import SnapshotError
from dynadesk.sync.client.upload import verify_snapshot
from dynadesk.sync.format.keys import load_or_create_server_key, public_raw
from dynadesk.sync.format.snapshot import parse_snapshot, sign_snapshot
from dynadesk.sync.server.cli import cli as server_cli


class SnapBoard(BadgeBoard):
    def snapshot(self, *extra: str) -> str:
        # every row (the board's default view would be reproduced-only: these tests forge exclusions of any row)
        extra = extra if "--audit" in extra else ("--audit", "all", *extra)
        out = CliRunner().invoke(server_cli, ["snapshot", "create", TASK, "--db", str(self.target), "--title",
                                              "Sentiment, December 2026", "--key", str(self.key_path), "--json",
                                              *extra])
        assert out.exit_code == 0, out.output
        return str(json.loads(out.output)["id"])

    def evidence(self, snapshot_id: str) -> dict:
        r = requests.get(f"{self.url}/api/snapshots/{snapshot_id}/evidence", timeout=30)
        assert r.status_code == 200, r.text
        return r.json()


@pytest.fixture(params=["sqlite", "postgresql"])
def snap_board(request, tmp_path):
    target = tmp_path / "board.db" if request.param == "sqlite" else request.getfixturevalue("pg_url")
    b = SnapBoard(tmp_path, target)
    b.key_path = tmp_path / "server.key"
    b.server_key = load_or_create_server_key(str(b.key_path))
    b.pub = public_raw(b.server_key)
    try:
        yield b
    finally:
        b.close()


def _resigned(evidence: dict, key: Ed25519PrivateKey, change) -> dict:
    payload = copy.deepcopy(parse_snapshot(evidence["snapshot"].encode()).payload)
    change(payload)
    return dict(evidence, snapshot=sign_snapshot(payload, key).raw.decode())


def test_a_snapshot_signed_by_another_key_or_checked_with_no_key_fails(snap_board):
    b = snap_board
    before = b.honest_view()
    evidence = b.evidence(b.snapshot())
    assert verify_snapshot(evidence, b.pub)["rows"] == 4
    other = Ed25519PrivateKey.generate()
    forged = _resigned(evidence, other, lambda p: p["server"].update(
        key_fingerprint=__import__("dynadesk.sync.format.keys", fromlist=["x"]).fingerprint(public_raw(other))))
    with pytest.raises(SnapshotError, match="no server key to check the signature against"):
        verify_snapshot(forged, None)
    with pytest.raises(SnapshotError, match="not the server key"):
        verify_snapshot(forged, b.pub)
    assert b.honest_view() == before


def test_a_file_with_no_pinned_or_given_key_is_refused_and_a_pinned_one_is_used(snap_board, tmp_path, monkeypatch):
    b = snap_board
    sid = b.snapshot()
    monkeypatch.setenv("DYNADESK_HOME", str(b.ws.home))
    saved = tmp_path / "evidence.json"
    url = f"{b.url}/snapshots/{sid}"
    fetched = CliRunner().invoke(cli, ["sync", "verify-snapshot", url, "--save", str(saved)])
    assert fetched.exit_code != 0 and "dynadesk sync check-log --server URL" in str(fetched.exception)
    assert saved.is_file()
    offline = CliRunner().invoke(cli, ["sync", "verify-snapshot", str(saved)])
    assert offline.exit_code != 0 and "no server key" in str(offline.exception)
    pin = CliRunner().invoke(cli, ["sync", "check-log", "--server", b.url])
    assert pin.exit_code == 0, pin.output
    ok = CliRunner().invoke(cli, ["sync", "verify-snapshot", str(saved)])
    assert ok.exit_code == 0, ok.output
    assert "4 rows of 'sentiment' follow" in ok.output and "current: no newer snapshot" in ok.output
    newer = b.snapshot()  # an old snapshot never verifies with no word that it is not current
    again = CliRunner().invoke(cli, ["sync", "verify-snapshot", str(saved)])
    assert again.exit_code == 0 and f"NOT CURRENT: 1 newer snapshot(s) of 'sentiment' exist, the latest {newer[:16]}" \
        in again.output


def _drop_last(why: str):
    def change(p: dict) -> None:
        gone = p["rows"].pop()
        p["rows"][-1]["tied_with"] = None
        p["rows"][-1]["paired_next"] = {}
        p["excluded"].append({"bundle_id": gone["bundle_id"], "row_id": gone["row_id"], "why": why})
    return change


@pytest.mark.parametrize("why", ["key revoked at 2026-01-01T00:00:00.000Z",
                                 "audit: not reproduced by an auditor (audit=reproduced)"])
def test_a_row_dropped_with_a_stated_reason_fails(snap_board, why):
    b = snap_board
    before = b.honest_view()
    evidence = b.evidence(b.snapshot())
    assert parse_snapshot(evidence["snapshot"].encode()).payload["rows"][-1]["bundle_id"] == b.honest["Lab C/bow"]
    forged = _resigned(evidence, b.server_key, _drop_last(why))
    with pytest.raises(SnapshotError, match="contradicts"):
        verify_snapshot(forged, b.pub)
    assert b.honest_view() == before


def test_a_snapshot_stating_its_own_reference_rows_fails(snap_board):
    b = snap_board
    before = b.honest_view()
    out = CliRunner().invoke(server_cli, ["reference", "pin", b.honest["Lab C/bow"], "--db", str(b.target)])
    assert out.exit_code == 0, out.output
    evidence = b.evidence(b.snapshot())
    honest = verify_snapshot(evidence, b.pub)  # pinned rows are not in the log: reported as the server's word
    assert honest["pinned_reference_rows"] == [f"bow@{b.fp('Lab C')}"]
    stated = _resigned(evidence, b.server_key, lambda p: p["reference"].update(rule="reproduced"))
    with pytest.raises(SnapshotError, match="the log's attestations reproduce"):
        verify_snapshot(stated, b.pub)
    assert b.honest_view()["class"] == before["class"]
