"""Validation rules, verified status and the serving order of the queue."""

from __future__ import annotations

import sqlite3

import pytest
from support.annotation import make_example, open_store, sentiment_round

from dynadesk import annotation as ann
from dynadesk.errors import AnnotationError, ValidationError


@pytest.fixture
def st(tmp_path, models):
    s = open_store(tmp_path / "ws")
    sentiment_round(s, models, people=[(n, "annotator") for n in ("w1", "w2", "v1", "v2", "v3", "v4")]
                    + [("boss", "owner")])
    yield s
    s.close()


def test_no_self_validation_no_double_vote(st):
    ex = make_example(st, "w1", "the food was good", fooled=True)
    with pytest.raises(AnnotationError, match="'w1' wrote example"):
        ann.validate(st, ex.uid, "w1", "correct")
    ann.validate(st, ex.uid, "v1", "correct")
    with pytest.raises(AnnotationError, match="already validated"):
        ann.validate(st, ex.uid, "v1", "incorrect", label="neutral")
    # the database refuses them as well, whatever the caller
    for who in ("w1", "v1"):
        with pytest.raises(sqlite3.IntegrityError):
            st.db.execute("INSERT INTO validations(uid, example_uid, annotator, verdict, origin, created_at)"
                          " VALUES (?, ?, ?, 'correct', 'x', 'now')", [f"manual-{who}", ex.uid, who])
    assert len(st.annotation.get_example(ex.uid).validations) == 1


def test_votes_in_the_same_millisecond_replay_in_the_order_they_were_cast(st, monkeypatch):
    """Votes carry millisecond times; two cast within one tick must still count in the order they were cast (the
    store's insertion order), never in the order of their random ids: a later owner's vote may not undo a decision
    the votes had already reached. (Seen in a suite run: the owner's vote sorted first by its uid.)"""
    import sys

    monkeypatch.setattr(sys.modules["dynadesk.annotation.validate"], "now_iso", lambda: "2026-12-06T00:00:00.000+00:00")
    for i in range(12):  # a random tiebreak would pass all twelve with probability 2**-12
        ex = make_example(st, "w1", f"a story number {i}", fooled=True)
        for who in ("v1", "v2", "v3"):
            _, s = ann.validate(st, ex.uid, who, "flagged", reason="spam")
        _, s = ann.validate(st, ex.uid, "boss", "correct")
        assert (s.status, s.decided_by) == ("verified-not-correct", "votes"), i
        again = ann.list_examples(st, "sentiment")  # read back from the store: the same replay
        assert {e.uid: x.status for e, x in again}[ex.uid] == "verified-not-correct", i


def test_verdict_arguments_are_checked(st):
    ex = make_example(st, "w1", "it was ok", fooled=True)
    with pytest.raises(ValidationError, match="needs the corrected label"):
        ann.validate(st, ex.uid, "v1", "incorrect")
    with pytest.raises(ValidationError, match="equals the example's own target"):
        ann.validate(st, ex.uid, "v1", "incorrect", label=ex.target)
    with pytest.raises(ValidationError, match="not one of the task's labels"):
        ann.validate(st, ex.uid, "v1", "incorrect", label="joyful")
    with pytest.raises(ValidationError, match="needs a reason"):
        ann.validate(st, ex.uid, "v1", "flagged")
    with pytest.raises(ValidationError, match="only an 'incorrect' verdict"):
        ann.validate(st, ex.uid, "v1", "correct", label="neutral")
    with pytest.raises(ValidationError, match="verdict 'maybe'"):
        ann.validate(st, ex.uid, "v1", "maybe")
    assert st.annotation.get_example(ex.uid).validations == []
    other = next(lab for lab in ("negative", "neutral", "positive") if lab != ex.target)
    v, status = ann.validate(st, ex.uid, "v1", "incorrect", label=other)
    assert (v.label, status.incorrect, status.status) == (other, 1, "unverified")


def test_verified_fooled_and_not_correct_at_votes_needed(st):
    fooled = make_example(st, "w1", "great film", fooled=True)
    plain = make_example(st, "w1", "bad film", fooled=False)
    bad = make_example(st, "w2", "a story", fooled=True)
    for who in ("v1", "v2"):
        assert ann.validate(st, fooled.uid, who, "correct")[1].status == "unverified"
    _, s = ann.validate(st, fooled.uid, "v3", "correct")  # votes_needed = 3 for sentiment
    assert (s.status, s.verified_fooled, s.decided_by) == ("verified-correct", True, "votes")
    for who in ("v1", "v2", "v3"):
        _, s = ann.validate(st, plain.uid, who, "correct")
    assert (s.status, s.verified_fooled) == ("verified-correct", False)  # correct but did not fool the model
    ann.validate(st, bad.uid, "v1", "flagged", reason="not English")
    ann.validate(st, bad.uid, "v2", "correct")
    other = next(lab for lab in ("negative", "neutral") if lab != bad.target)
    ann.validate(st, bad.uid, "v3", "incorrect", label=other)
    _, s = ann.validate(st, bad.uid, "v4", "flagged", reason="spam")
    assert (s.status, s.correct, s.incorrect, s.flagged) == ("unverified", 1, 1, 2)  # N of one kind decides
    _, s = ann.validate(st, bad.uid, "w1", "flagged", reason="spam")
    assert (s.status, s.correct, s.incorrect, s.flagged) == ("verified-not-correct", 1, 1, 3)
    # a later contrary vote does not undo a decision reached earlier
    _, s = ann.validate(st, bad.uid, "boss", "correct")
    assert s.status == "verified-not-correct"


def test_owner_vote_decides(st):
    a = make_example(st, "w1", "loved it", fooled=True)
    b = make_example(st, "w1", "hated it", fooled=True)
    _, s = ann.validate(st, a.uid, "boss", "correct")
    assert (s.status, s.verified_fooled, s.decided_by) == ("verified-correct", True, "boss")
    _, s = ann.validate(st, b.uid, "boss", "flagged", reason="offensive")
    assert (s.status, s.verified_fooled) == ("verified-not-correct", False)


def test_queue_order_fooled_first_fewest_votes_seeded(st):
    fooled = [make_example(st, "w1", f"fooled text {i}", fooled=True) for i in range(6)]
    plain = [make_example(st, "w2", f"plain text {i}", fooled=False) for i in range(3)]
    ann.validate(st, fooled[0].uid, "v2", "correct")
    ann.validate(st, fooled[1].uid, "v2", "correct")
    ann.validate(st, fooled[1].uid, "v3", "correct")
    q = ann.validation_queue(st, "sentiment", "v1", seed=7, limit=None)
    assert len(q) == 9
    assert [ex.fooled for ex in q] == [True] * 6 + [False] * 3
    votes = [len(ex.validations) for ex in q[:6]]
    assert votes == sorted(votes) and q[4].uid == fooled[0].uid and q[5].uid == fooled[1].uid
    # seeded: the same seed gives the same order, another seed shuffles the ties
    assert [e.uid for e in ann.validation_queue(st, "sentiment", "v1", seed=7, limit=None)] == [e.uid for e in q]
    orders = {tuple(e.uid for e in ann.validation_queue(st, "sentiment", "v1", seed=s, limit=4)) for s in range(6)}
    assert len(orders) > 1
    # own examples, examples already voted on and decided examples are not served
    assert all(ex.annotator != "w1" for ex in ann.validation_queue(st, "sentiment", "w1", limit=None))
    assert fooled[0].uid not in {e.uid for e in ann.validation_queue(st, "sentiment", "v2", limit=None)}
    ann.validate(st, fooled[2].uid, "boss", "correct")
    assert fooled[2].uid not in {e.uid for e in ann.validation_queue(st, "sentiment", "v1", limit=None)}
    nxt = ann.next_to_validate(st, "sentiment", "v1", seed=7)
    assert nxt.uid == ann.validation_queue(st, "sentiment", "v1", seed=7)[0].uid
    for ex in plain + fooled:
        if ex.annotator != "v4" and ex.uid != fooled[2].uid:
            ann.validate(st, ex.uid, "v4", "correct")
    assert ann.next_to_validate(st, "sentiment", "v4") is None


def test_the_queue_ranked_on_facts_is_the_queue_of_the_whole_examples(tmp_path, models):
    """``validation_queue`` ranks the round's light facts and reads whole only the examples it returns (one by one
    up to 50, else the round in one query): the queue is exactly the one ranked over the whole examples, for each
    validator, head, page and whole queue; writers never see their own, nobody an example they judged or a decided
    one."""
    from dynadesk.annotation.validate import WHOLE_ONE_BY_ONE, _order_key, example_status

    st = open_store(tmp_path / "ws")
    sentiment_round(st, models, people=[("w1", "annotator"), ("w2", "annotator"), ("v1", "annotator"),
                                        ("v2", "annotator"), ("v3", "annotator")])
    made = [make_example(st, "w1" if i % 3 else "w2", f"number {i} {'y' * (i % 7)}", i % 2 == 0)
            for i in range(WHOLE_ONE_BY_ONE + 40)]
    for i, ex in enumerate(made[:20]):
        for who in ("v1", "v2", "v3")[: 1 + i % 3]:  # one, two or three votes: some decided, some not
            ann.validate(st, ex.uid, who, "correct")

    def whole_queue(who: str, seed: int) -> list:
        todo = [ex for ex in st.annotation.examples("sentiment", 1) if ex.annotator != who
                and all(v.annotator != who for v in ex.validations) and not example_status(ex, 3).decided]
        return sorted(todo, key=lambda ex: _order_key(seed, ex))

    for who in ("v1", "v3", "w1"):
        for seed in (0, 7):
            expected = whole_queue(who, seed)
            assert (len(expected) > WHOLE_ONE_BY_ONE) is (who != "w1")  # both ways of reading them whole
            for limit in (1, 2, 20, None):  # the head, a tie cut inside a (fooled, votes) group, a page, all
                got = ann.validation_queue(st, "sentiment", who, seed=seed, limit=limit)
                assert [e.to_dict() for e in got] == [e.to_dict() for e in expected[:limit]], (who, seed, limit)
