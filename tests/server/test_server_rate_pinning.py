"""The operator cannot be steered through pinning (issue 44, item 2): reference rows must be of distinct
organisations, on a real server (SQLite and PostgreSQL).

Lab B (one organisation, one key) uploads three rows whose throughput trades ~1000x steeper against performance than
every honest lab's, and asks the operator to pin them ("our reference runs"). On the previous code the three pins made
a reference set of Lab B alone: provisional rates and a frozen edition were Lab B's throughput rate (~1e5 examples/s
per point instead of the honest 100), which reordered the honest rows (seen failing first: the freeze succeeded and
the edition's throughput rate was Lab B's). Now each organisation counts once among the reference rows, and a freeze
whose reference rows hold two rows of one organisation is refused, naming them and the next step; an operator who
means it (a board of one lab) says so with ``--single-organisation WHY``, which the signed edition and every board
scored with it state.
"""

from __future__ import annotations

import pytest
from support.sync import stop_server
from test_server_rate_editions import HONEST, RateBoard, honest_scores

from dynadesk.sync.server.db import ServerDB

TASK = "sentiment"
STEEP = ((86.0, 2.0e6), (80.0, 1.4e6), (70.0, 0.4e6))  # Lab B's rows: 1e5 examples/s per point


@pytest.fixture(params=["sqlite", "postgresql"])
def pin_board(request, tmp_path):
    target = tmp_path / "board.db" if request.param == "sqlite" else request.getfixturevalue("pg_url")
    b = RateBoard(tmp_path, target)
    try:
        b.honest_ids = [b.upload(lab, model, perf) for lab, model, perf in HONEST]
        b.steep_ids = [b.upload("Lab B", f"b{i}", perf, throughput=t) for i, (perf, t) in enumerate(STEEP)]
        yield b
    finally:
        stop_server(b.proc)


def _editions(b: RateBoard) -> int:
    db = ServerDB(b.db_path)
    try:
        return len(db.conn.execute("SELECT id FROM rate_editions").fetchall())
    finally:
        db.close()


def test_pinning_one_submitters_rows_does_not_let_it_set_the_rates(pin_board):
    b = pin_board
    before = b.board("?limit=1000&audit=all")
    for bid in b.steep_ids:
        b.operator("reference", "pin", bid, "--note", "Lab B asked")
    pinned = b.board("?limit=1000&audit=all")
    # provisional rates: Lab B's three pins are one reference row, so no rate rests on Lab B alone
    assert pinned["amrs"]["throughput"] is None, pinned["amrs"]
    assert pinned["rates"]["status"] == "none"
    notes = " ".join(pinned["notes"])
    assert "distinct organisations" in notes and "Lab B" in notes, notes
    assert honest_scores(pinned, b.fp("Lab B")) == honest_scores(before, b.fp("Lab B"))
    # the freeze is refused, naming the organisation, its rows and the next step; nothing is signed or logged
    out = b.operator("rates", "freeze", "--task", TASK, "--key", str(b.key_path), ok=False)
    assert "Lab B" in out and "distinct organisations" in out and "reference unpin" in out, out
    assert "--single-organisation" in out, out
    assert _editions(b) == 0
    # explicit rows of one organisation are refused the same way
    out = b.operator("rates", "freeze", "--task", TASK, "--key", str(b.key_path),
                     *[x for bid in b.steep_ids for x in ("--bundle", bid)], ok=False)
    assert "Lab B" in out and "distinct organisations" in out, out
    assert _editions(b) == 0


def test_one_pinned_row_per_organisation_makes_the_honest_rates(pin_board):
    b = pin_board
    for bid in [*b.honest_ids, *b.steep_ids]:
        b.operator("reference", "pin", bid)
    out = b.operator("rates", "freeze", "--task", TASK, "--key", str(b.key_path), ok=False)
    assert "Lab B" in out and "distinct organisations" in out, out  # still two rows of Lab B among the pins
    for bid in b.steep_ids[1:]:
        b.operator("reference", "unpin", bid)
    assert "distinct organisations" not in " ".join(b.board("?limit=1000&audit=all")["notes"])  # only while it holds
    out = b.operator("rates", "freeze", "--task", TASK, "--key", str(b.key_path))
    assert "edition 1" in out, out
    answer = b.board("?limit=1000&audit=all")
    orgs = sorted(r["organisation"] for r in answer["reference"]["rows"])
    assert orgs == ["Lab A", "Lab B", "Lab C", "Lab D", "Lab E"], answer["reference"]["rows"]
    # Lab B's one row is bounded like any row: the honest rate stands
    assert answer["amrs"]["throughput"] == pytest.approx(100.0)
    said = " ".join(answer["notes"])
    assert "rate edition 1 of 'sentiment'" in said
    assert "not distinct ones" not in said and "Dynaboard's rule" not in said


def test_a_board_of_one_lab_freezes_its_own_rows_only_by_saying_so(pin_board):
    b = pin_board
    for bid in b.steep_ids:
        b.operator("reference", "pin", bid)
    out = b.operator("rates", "freeze", "--task", TASK, "--key", str(b.key_path), "--single-organisation",
                     "our own lab's board")
    assert "edition 1" in out, out
    answer = b.board("?limit=1000&audit=all")
    assert answer["amrs"]["throughput"] == pytest.approx(1.0e5)
    notes = " ".join(answer["notes"])
    assert "1 organisation (Lab B)" in notes and "our own lab's board" in notes, notes
