"""Badges bound to exact claims (issue 44, item 1), attacked against a real ``dynadesk-server`` on SQLite and
PostgreSQL.

Three labs' honest rows are on the board; an auditor reproduced three of them (re-running on its own machine, the
"Audit CPU 9000" class). Lab A then re-signs its reproduced results with made-up numbers, under new names, on the
auditor's hardware class, and Lab C tries to shed a dispute by re-signing with another predictions digest. On the
old server (attestations attached to ``results_key``: task, key, model, data and predictions digests) every copy
showed "reproduced by 1", the 20 copies took the default view ("confirmed" auditor's class) and the re-signed
disputed row read "not audited": each test here was seen failing there.
"""

from __future__ import annotations

import pytest
from support.badges import AUDIT_CLASS, AUDIT_HW, GOOD, LAB_CLASS, BadgeBoard


@pytest.fixture(params=["sqlite", "postgresql"])
def badge_board(request, tmp_path):
    target = tmp_path / "board.db" if request.param == "sqlite" else request.getfixturevalue("pg_url")
    b = BadgeBoard(tmp_path, target)
    try:
        yield b
    finally:
        b.close()


def test_re_signed_made_up_numbers_keep_no_badge(badge_board):
    b = badge_board
    before = b.honest_view()
    assert before["class"] == LAB_CLASS
    assert [s for _, _, s in before["rows"]] == ["reproduced by 1"] * 3 + ["not audited"]
    original = b.payloads["Lab A/roberta"]
    made_up = b.upload(b.re_signed(original, "Lab A", name="roberta-v2", perf=99.0, throughput=1e6, memory=0.01),
                       "Lab A")
    row = b.row(made_up.id)
    assert row["audit"]["state"] == "not audited" and row["audit"]["attestations"] == []
    assert b.honest_view() == before
    # any one other value, name or class is another claim; only the identical claim (a new time) keeps it
    for change in ({"throughput": 301.0}, {"memory": 1.99}, {"perf": 75.01}, {"name": "roberta-renamed"},
                   {"hardware": AUDIT_HW}):
        copy_ = b.upload(b.re_signed(original, "Lab A", **({"name": "roberta-x"} | change)), "Lab A")
        assert b.row(copy_.id)["audit"]["state"] == "not audited", change
    same = b.upload(b.re_signed(original, "Lab A"), "Lab A")  # replaces the roberta row with the same claim
    assert b.row(same.id)["audit"]["state"] == "reproduced by 1"
    b.honest["Lab A/roberta"] = same.id
    assert b.honest_view() == before
    # the same name with made-up numbers replaces the row, which is "not audited" and no reference row
    replaced = b.upload(b.re_signed(original, "Lab A", perf=99.0, throughput=1e6, memory=0.01), "Lab A")
    answer = b.board("?limit=1000&audit=all")
    (row,) = [r for r in answer["rows"] if r["bundle_id"] == replaced.id]
    assert row["audit"]["state"] == "not audited"
    assert replaced.id not in {r["bundle_id"] for r in answer["reference"]["rows"]}


def test_twenty_re_signed_copies_get_no_badge_and_do_not_confirm_the_auditors_class(badge_board):
    b = badge_board
    before = b.honest_view()
    original = b.payloads["Lab A/roberta"]
    copies = [b.upload(b.re_signed(original, "Lab A", name=f"filler-{i:02d}", perf=10.0 + i * 0.5,
                                   hardware=AUDIT_HW), "Lab A") for i in range(20)]
    everything = {r["bundle_id"]: r for r in b.board("?hardware_class=all&limit=1000&audit=all")["rows"]}
    assert all(everything[c.id]["audit"]["state"] == "not audited" for c in copies)
    assert b.honest_view() == before  # the default class, the honest order, scores and badges
    classes = {c["class"]: c for c in b.board("?limit=1000")["hardware_classes"]}
    assert classes[AUDIT_CLASS]["status"] == "declared" and classes[AUDIT_CLASS]["confirmed_submitters"] == 0
    audited = b.board(f"?hardware_class={AUDIT_CLASS}&audit=reproduced&limit=1000")
    assert audited["rows"] == []


def test_a_dispute_survives_re_signing_with_another_predictions_digest(badge_board):
    b = badge_board
    bow = b.honest.pop("Lab C/bow")
    r = b.attest("Auditor C", bow, "disputed", {**GOOD, "predictions.merkle_root": "differs"})
    assert r.status_code == 201, r.text
    assert b.row(bow)["audit"]["state"] == "disputed"
    before = b.honest_view()
    original = b.payloads["Lab C/bow"]
    other = b.upload(b.re_signed(original, "Lab C", predictions="sha256:" + "5e" * 32), "Lab C")
    assert b.row(other.id)["audit"]["state"] == "disputed"  # the same model's results, whatever they now say
    renamed = b.upload(b.re_signed(original, "Lab C", name="bow-2", predictions="sha256:" + "6e" * 32), "Lab C")
    assert b.row(renamed.id)["audit"]["state"] == "disputed"  # the same weights under another name
    assert b.honest_view() == before
    # the auditor who disputed it may re-run the new claim: a later "reproduced" of that exact claim lifts it
    again = b.attest("Auditor C", other.id, "reproduced", GOOD, created="2026-07-01T00:00:00.000Z")
    assert again.status_code == 201, again.text
    assert b.row(other.id)["audit"]["state"] == "reproduced by 1"
    assert b.row(renamed.id)["audit"]["state"] == "disputed"


def test_the_model_page_notes_appear_when_and_only_when_their_condition_holds(badge_board):
    import requests

    b = badge_board

    def page(bundle_id: str) -> str:
        r = requests.get(f"{b.url}/models/{bundle_id}", timeout=30)
        assert r.status_code == 200
        return r.text

    not_audited, speaks = "Not audited: no auditor has re-run this exact claim", "speaks for this bundle"
    identical, follows = "the identical claim, signed at another time", "a dispute follows this model’s results"
    original = b.payloads["Lab A/roberta"]
    same = b.upload(b.re_signed(original, "Lab A", name="roberta"), "Lab A")
    made_up = b.upload(b.re_signed(original, "Lab A", name="roberta-v2", perf=99.0), "Lab A")
    assert b.attest("Auditor C", b.honest["Lab C/bow"], "disputed",
                    {**GOOD, "predictions.merkle_root": "differs"}).status_code == 201
    other = b.upload(b.re_signed(b.payloads["Lab C/bow"], "Lab C", predictions="sha256:" + "7e" * 32), "Lab C")
    cases = {b.honest["Lab B/bert"]: (speaks,), same.id: (speaks, identical), made_up.id: (not_audited,),
             b.honest["Lab C/bow"]: (speaks,), other.id: (speaks, follows)}
    notes = (not_audited, speaks, identical, follows)
    for bundle_id, shown in cases.items():
        text = page(bundle_id)
        for note in notes:
            assert (note in text) is (note in shown), (bundle_id, note)
    assert "1 attestation speaks for" in page(other.id)


@pytest.mark.browser
def test_the_class_banner_names_rows_reproduced_on_another_class_only_when_there_are_some(tmp_path):
    """Seen first on the old page: "no auditor has re-run a row on it" beside three rows marked "reproduced by 1"
    (re-run on the auditor's machine class), with nothing saying where they were re-run."""
    from urllib.parse import quote

    from support.board import chromium

    b = BadgeBoard(tmp_path, tmp_path / "board.db")
    try:
        lone = b.upload(b.payload("Lab B", "elsewhere-run", hardware=AUDIT_HW), "Lab B")  # declared, unaudited
        assert b.row(lone.id)["audit"]["state"] == "not audited"
        for browser in chromium():
            page = browser.new_page(viewport={"width": 1500, "height": 1000})
            for query, shown in (("", "3 rows shown here were reproduced by an auditor on another machine class."),
                                 (f"?hardware_class={quote(AUDIT_CLASS)}", None)):
                page.goto(b.url + "/" + query)
                page.wait_for_selector("#task-sentiment[data-loaded] #board-sentiment tbody tr")
                status = page.inner_text("#class-status")
                assert "declared" in status and "no auditor has re-run a row on it." in status
                assert ("reproduced by an auditor on another machine class" in status) is (shown is not None), status
                if shown:
                    assert shown in status
            page.close()
    finally:
        b.close()
