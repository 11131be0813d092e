"""Signed board snapshots: created by the operator, served forever with a citation, checked offline by a reader
against the log's bundles; a board that changes afterwards leaves them valid, a hand-edited copy (or one the
server re-signed with a wrong row, weight or head) fails. A real server process on a real SQLite file."""

from __future__ import annotations

import copy
import json

import pytest
import requests
from click.testing import CliRunner
from support.intervals import bundle_with, right, wrong
from support.sync import board_db, free_port, start_server, stop_server, workspace_with_key

from dynadesk.cli import cli
from dynadesk.errors import SignatureError, SnapshotError
from dynadesk.sync.client.upload import sync_queue, verify_snapshot
from dynadesk.sync.format.canonical import canonical_bytes
from dynadesk.sync.format.keys import load_or_create_server_key
from dynadesk.sync.format.snapshot import parse_snapshot, sign_snapshot
from dynadesk.sync.server.cli import cli as server_cli


def _better(golds):
    return wrong(golds[:4]) + golds[4:]


@pytest.fixture(scope="module")
def world(tmp_path_factory):
    """A served board of three bundles, a snapshot of it taken with the CLI, then a fourth bundle that changes the
    board; the evidence a reader fetched for the snapshot afterwards."""
    tmp = tmp_path_factory.mktemp("snap")
    ws, store = workspace_with_key(tmp / "ws")
    for model, predict in (("copy-a", right), ("copy-b", right), ("worst", wrong)):
        bundle_with(ws, store, model, predict)
    db_path = tmp / "board.db"
    board_db(db_path, ws)
    port = free_port()
    proc = start_server(db_path, port)
    url = f"http://127.0.0.1:{port}"
    try:
        assert sync_queue(store, url).ok
        made = CliRunner().invoke(server_cli, ["snapshot", "create", "sentiment", "--db", str(db_path),
                                               "--title", "Sentiment board, December 2026", "--hardware-class", "all",
                                               "--weight", "throughput=2", "--json"])
        assert made.exit_code == 0, made.output
        snap = json.loads(made.output)
        before = requests.get(f"{url}/api/leaderboard/sentiment?hardware_class=all&weight.throughput=2",
                              timeout=10).json()
        bundle_with(ws, store, "newcomer", _better, throughput=5000.0)  # the board changes afterwards
        assert sync_queue(store, url).ok
        after = requests.get(f"{url}/api/leaderboard/sentiment?hardware_class=all", timeout=10).json()
        yield {"url": url, "snap": snap, "db": db_path, "before": before, "after": after, "ws": ws, "tmp": tmp,
               "key": load_or_create_server_key(str(db_path) + ".server.key")}
    finally:
        stop_server(proc)
        store.close()


def _pub(world) -> bytes:
    """The server's public key, as a reader pins it (sync check-log) or gives it (--server-key)."""
    from dynadesk.sync.format.keys import public_raw

    return public_raw(world["key"])


def _evidence(world) -> dict:
    resp = requests.get(f"{world['url']}/api/snapshots/{world['snap']['id']}/evidence", timeout=10)
    assert resp.status_code == 200
    return resp.json()


def test_the_snapshot_stays_valid_after_the_board_changes(world, monkeypatch):
    assert world["after"]["total"] == world["before"]["total"] + 1
    snap_url = f"{world['url']}/snapshots/{world['snap']['id']}"
    monkeypatch.setenv("DYNADESK_HOME", str(world["ws"].home))
    saved = world["tmp"] / "evidence.json"
    out = CliRunner().invoke(cli, ["sync", "verify-snapshot", snap_url, "--save", str(saved), "--json",
                                   "--server-key", _pub(world).hex()])
    assert out.exit_code == 0, out.output
    result = json.loads(out.output)
    assert result["verified"] and result["rows"] == 3 and result["logged_at"] == 4 and result["log_size"] == 3
    assert result["currency"].startswith("NOT CURRENT: the board's log has moved from head 3 to 5")
    offline = CliRunner().invoke(cli, ["sync", "verify-snapshot", str(saved), "--server-key", _pub(world).hex()])
    assert offline.exit_code == 0 and "3 rows of 'sentiment' follow from the log's bundles at head 3" in offline.output
    doc = parse_snapshot(requests.get(f"{world['url']}/api/snapshots/{world['snap']['id']}", timeout=10).content)
    rows = doc.payload["rows"]
    assert [r["label"] for r in rows] == [r["label"] for r in world["before"]["rows"]]
    assert [r["dynascore"] for r in rows] == [r["dynascore"] for r in world["before"]["rows"]]
    assert rows[0]["tied_with"] == rows[1]["row_id"] and rows[0]["rank_interval"] == [1, 1]
    assert doc.payload["query"]["weights"] == {"throughput": 2.0}


def test_the_page_shows_rows_and_a_citation_and_the_log_names_it(world):
    sid = world["snap"]["id"]
    page = requests.get(f"{world['url']}/snapshots/{sid}", timeout=10)
    assert page.status_code == 200
    text = page.text
    assert "Sentiment board, December 2026" in text and f"@misc{{dynadesk-snapshot-{sid[:12]}" in text
    assert f"dynadesk sync verify-snapshot {world['url']}/snapshots/{sid}" in text and "newcomer" not in text
    assert "≈ copy-b" in text and 'class="ivbar"' in text
    log = requests.get(f"{world['url']}/api/log", timeout=10).json()["entries"]
    assert [e["kind"] for e in log] == ["bundle"] * 3 + ["snapshot", "bundle"]
    assert log[3]["bundle_id"] == sid
    listed = requests.get(f"{world['url']}/api/snapshots", timeout=10).json()
    assert [s["id"] for s in listed] == [sid]
    verified = CliRunner().invoke(server_cli, ["log", "verify", "--db", str(world["db"])])
    assert verified.exit_code == 0, verified.output  # a snapshot entry is a stored, checked document too
    assert requests.get(f"{world['url']}/snapshots/{'0' * 64}", timeout=10).status_code == 404


def _resigned(evidence: dict, key, change) -> dict:
    """The evidence with its snapshot's payload changed by ``change`` and signed again with ``key``."""
    payload = copy.deepcopy(parse_snapshot(evidence["snapshot"].encode()).payload)
    change(payload)
    out = dict(evidence)
    out["snapshot"] = sign_snapshot(payload, key).raw.decode()
    return out


def _set_score(p):
    p["rows"][2]["dynascore"] = p["rows"][2]["dynascore"] + 5


def _set_weight(p):
    p["query"]["weights"]["throughput"] = 3.0


def _set_head(p):
    p["log"]["hash"] = "f" * 64


def _drop_tie(p):
    p["rows"][0]["tied_with"] = None


@pytest.mark.parametrize("change, message", [
    (_set_score, r"row 'worst@.*: dynascore is .* in the snapshot, but the log's bundles with the stated weights give"),
    (_set_weight, r"row '.*: dynascore is .* but the log's bundles with the stated weights give"),
    (_set_head, r"end in hash .*, not the snapshot's log head ffffffffffffffff"),
    (_drop_tie, r"row 'copy-a@.*: tied_with is null in the snapshot"),
])
def test_a_snapshot_the_server_resigned_with_a_wrong_field_fails(world, change, message):
    evidence = _evidence(world)
    assert verify_snapshot(evidence, _pub(world))["rows"] == 3
    with pytest.raises(SnapshotError, match=message):
        verify_snapshot(_resigned(evidence, world["key"], change), _pub(world))


@pytest.mark.parametrize("field, value", [("dynascore", 99.0), ("rank_interval", [1, 3])])
def test_a_hand_edited_copy_fails(world, field, value, monkeypatch):
    evidence = _evidence(world)
    doc = json.loads(evidence["snapshot"])
    doc["payload"]["rows"][1][field] = value
    edited = dict(evidence, snapshot=canonical_bytes(doc).decode())
    with pytest.raises(SignatureError):
        verify_snapshot(edited, _pub(world))
    path = world["tmp"] / f"edited-{field}.json"
    path.write_text(json.dumps(edited))
    monkeypatch.setenv("DYNADESK_HOME", str(world["ws"].home))
    out = CliRunner().invoke(cli, ["sync", "verify-snapshot", str(path), "--server-key", _pub(world).hex()])
    assert out.exit_code != 0 and "signature does not verify" in str(out.exception)


def test_another_key_and_missing_evidence_are_named(world):
    evidence = _evidence(world)
    from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey

    from dynadesk.sync.format.keys import public_raw

    with pytest.raises(SnapshotError, match="not the server key"):
        verify_snapshot(evidence, public_raw(Ed25519PrivateKey.generate()))
    first = evidence["entries"][0]["bundle_id"]
    with pytest.raises(SnapshotError, match="the evidence lacks bundle"):
        verify_snapshot(dict(evidence, bundles={k: v for k, v in evidence["bundles"].items() if k != first}),
                        _pub(world))
    hidden = _resigned(evidence, world["key"], lambda p: p["rows"].pop())  # a row dropped from the snapshot
    with pytest.raises(SnapshotError, match="on the board at the snapshot's head but neither a row"):
        verify_snapshot(hidden, _pub(world))
