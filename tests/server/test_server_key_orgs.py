"""Organisations and attesting (issue 45, item 4, second half), against a real ``dynadesk-server`` on SQLite and
PostgreSQL: a lab's second key, registered as an auditor without an organisation, tries to attest the lab's own
row. On the old server it was accepted (201: "reproduced by 2") and no command could move the key into the lab's
organisation; both seen failing first.
"""

from __future__ import annotations

import json
import subprocess

import pytest
from support.badges import GOOD, BadgeBoard
from support.sync import server_bin

from dynadesk.sync.server.key_changes import names_match


@pytest.fixture(params=["sqlite", "postgresql"])
def org_board(request, tmp_path):
    target = tmp_path / "board.db" if request.param == "sqlite" else request.getfixturevalue("pg_url")
    b = BadgeBoard(tmp_path, target)
    try:
        yield b
    finally:
        b.close()


def _admin(b: BadgeBoard, *args: str) -> subprocess.CompletedProcess:
    return subprocess.run([server_bin(), *args, "--db", str(b.target)], capture_output=True, text=True, timeout=60)


def test_a_key_without_an_organisation_cannot_attest_rows_its_name_matches(org_board):
    b = org_board
    before = b.honest_view()
    roberta = b.honest["Lab A/roberta"]
    r = b.attest("Lab A spare", roberta, "reproduced", GOOD)
    assert r.status_code == 403, r.text
    detail = r.json()["detail"]
    assert r.json()["error"] == "own_organisation" and "has no organisation" in detail
    assert "keys set-org" in detail and "keys allow-attest" in detail and "\n" not in detail
    assert b.honest_view() == before
    out = _admin(b, "keys", "set-org", b.fp("Lab A spare"), "Lab A")
    assert out.returncode == 0 and "now belongs to organisation Lab A" in out.stdout, out.stderr
    again = b.attest("Lab A spare", roberta, "reproduced", GOOD, created="2026-06-02T00:00:00.000Z")
    assert again.status_code == 403 and "both belong to organisation 'Lab A'" in again.json()["detail"]
    assert b.honest_view() == before
    events = json.loads(_admin(b, "keys", "events", "--json").stdout)
    assert [(e["fingerprint"], e["event"], e["detail"]) for e in events] == [
        (b.fp("Lab A spare"), "set-org", "organisation (none) -> Lab A")]
    nowhere = _admin(b, "keys", "set-org", b.fp("Lab A spare"), "Nobody")
    assert nowhere.returncode != 0 and "organisation 'Nobody' is not registered" in nowhere.stderr


def test_the_operators_word_lets_a_matching_key_attest(org_board):
    b = org_board
    bow = b.honest["Lab C/bow"]
    assert b.attest("Lab A spare", bow, "reproduced", GOOD).status_code == 201  # no match: Lab C's row
    roberta = b.honest["Lab A/roberta"]
    assert b.attest("Lab A spare", roberta, "reproduced", GOOD).status_code == 403
    out = _admin(b, "keys", "allow-attest", b.fp("Lab A spare"), b.fp("Lab A"))
    assert out.returncode == 0, out.stderr
    r = b.attest("Lab A spare", roberta, "reproduced", GOOD, created="2026-06-03T00:00:00.000Z")
    assert r.status_code == 201, r.text
    assert b.row(roberta)["audit"]["state"] == "reproduced by 2"


@pytest.mark.parametrize(("auditor", "other", "match"), [
    ("Lab A spare", "Lab A", True), ("lab-a", "Lab A", True), ("LAB A", "lab a", True), ("Audit Co", "Lab A", False),
    ("Audit Lab", "Lab A", False), ("AI", "AI Research", False), ("Lab A spare", None, False), ("", "x", False)])
def test_names_match_ignores_case_spaces_and_punctuation(auditor, other, match):
    assert names_match(auditor, other) is match
