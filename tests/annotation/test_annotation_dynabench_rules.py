"""Dynabench's counting: N incorrect or N flagged votes decide "not correct" (never a pool of both), and the
per-annotator MER of Dynabench's user board (fooling examples validators rejected no longer count) is reported
beside the raw MER, each named."""

from __future__ import annotations

import pytest
from click.testing import CliRunner
from support.annotation import make_example, open_store, sentiment_round

from dynadesk import annotation as ann


@pytest.fixture
def st(tmp_path, models):
    s = open_store(tmp_path / "ws")
    sentiment_round(s, models, people=[(n, "annotator") for n in ("w1", "w2", "v1", "v2", "v3", "v4")])
    yield s
    s.close()


def _other(ex) -> str:
    return next(lab for lab in ("negative", "neutral", "positive") if lab != ex.target)


def test_two_incorrect_and_one_flagged_do_not_decide_three_of_one_kind_do(st):
    ex = make_example(st, "w1", "the soup was cold", fooled=True)
    ann.validate(st, ex.uid, "v1", "incorrect", label=_other(ex))
    ann.validate(st, ex.uid, "v2", "incorrect", label=_other(ex))
    _, s = ann.validate(st, ex.uid, "v3", "flagged", reason="unclear")
    assert (s.status, s.incorrect, s.flagged) == ("unverified", 2, 1)  # votes_needed = 3 of one kind
    _, s = ann.validate(st, ex.uid, "v4", "incorrect", label=_other(ex))
    assert (s.status, s.decided_by) == ("verified-not-correct", "votes")
    flagged = make_example(st, "w1", "spam spam", fooled=True)
    for who in ("v1", "v2", "v3"):
        _, s = ann.validate(st, flagged.uid, who, "flagged", reason="spam")
    assert s.status == "verified-not-correct"


def test_the_user_board_mer_leaves_out_rejected_fooling_examples_beside_the_raw_mer(st):
    rejected = make_example(st, "w1", "a tricky one", fooled=True)
    make_example(st, "w1", "another tricky one", fooled=True)  # not validated: still counts on the board
    make_example(st, "w1", "plain one", fooled=False)
    make_example(st, "w1", "plain two", fooled=False)
    for who in ("v1", "v2", "v3"):
        ann.validate(st, rejected.uid, who, "incorrect", label=_other(rejected))
    (w1,) = [a for a in ann.round_stats(st, "sentiment").annotators if a.annotator == "w1"]
    assert (w1.collected, w1.fooled, w1.rejected_fooled) == (4, 2, 1)
    assert w1.mer == pytest.approx(0.5) and w1.board_mer == pytest.approx(0.25)


def test_rounds_stats_names_both_mers(st, tmp_path):
    from dynadesk.cli import cli

    ex = make_example(st, "w1", "a tricky one", fooled=True)
    for who in ("v1", "v2", "v3"):
        ann.validate(st, ex.uid, who, "flagged", reason="off-task")
    st.close()
    res = CliRunner().invoke(cli, ["--home", str(tmp_path / "ws"), "rounds", "stats", "sentiment"])
    assert res.exit_code == 0, res.output
    assert "MER raw" in res.output and "MER Dynabench board" in res.output
    row = next(line for line in res.output.splitlines() if line.startswith("w1"))
    assert "100.0%" in row and "0.0%" in row
