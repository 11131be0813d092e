"""Krippendorff's alpha (nominal) and round statistics (MER, vMER, median time, per annotator)."""

from __future__ import annotations

import statistics

import pytest
from support.annotation import make_example, open_store, sentiment_round

from dynadesk import annotation as ann


def test_alpha_matches_the_hand_computed_example():
    """The example worked out in ``krippendorff_alpha_nominal``'s docstring.

    u1 = [c, c, c], u2 = [c, i], u3 = [i, i, f], u4 = [c] (dropped).
    Coincidences: o_cc = 3, o_ci = o_ic = 1, o_ii = 1, o_if = o_fi = 1;
    n_c = 4, n_i = 3, n_f = 1, n = 8; observed off-diagonal sum 4;
    expected sum_{x != y} n_x n_y = 2 * (12 + 4 + 3) = 38;
    alpha = 1 - 7 * 4 / 38 = 10 / 38.
    """
    units = [["c", "c", "c"], ["c", "i"], ["i", "i", "f"], ["c"]]
    assert ann.krippendorff_alpha_nominal(units) == pytest.approx(10 / 38)
    # order of units and of values inside a unit does not matter
    assert ann.krippendorff_alpha_nominal([["f", "i", "i"], ["c"], ["i", "c"], ["c", "c", "c"]]) == \
        pytest.approx(10 / 38)


def test_alpha_limits():
    """Perfect agreement with variation -> 1; systematic disagreement -> below 0; undefined -> None.

    [[a,a],[b,b]]: no off-diagonal coincidences, alpha = 1.
    [[a,b],[a,b]]: o_ab = o_ba = 2, n_a = n_b = 2, n = 4; alpha = 1 - 3 * 4 / (2 * 2 * 2) = -0.5.
    """
    assert ann.krippendorff_alpha_nominal([["a", "a"], ["b", "b"]]) == pytest.approx(1.0)
    assert ann.krippendorff_alpha_nominal([["a", "b"], ["a", "b"]]) == pytest.approx(-0.5)
    assert ann.krippendorff_alpha_nominal([["a", "a", "a"], ["a", "a"]]) is None  # one value only
    assert ann.krippendorff_alpha_nominal([["a"], ["b"]]) is None  # nothing pairable
    assert ann.krippendorff_alpha_nominal([]) is None


def test_round_stats_by_hand(tmp_path, models):
    st = open_store(tmp_path / "ws")
    sentiment_round(st, models, people=[("w1", "annotator"), ("w2", "annotator"), ("v1", "annotator"),
                                        ("v2", "annotator"), ("v3", "annotator")])
    plan = {"w1": [True, True, False, True], "w2": [False, True]}
    made = {w: [make_example(st, w, f"{w} says number {i} {'x' * i}", f) for i, f in enumerate(flags)]
            for w, flags in plan.items()}
    w1, w2 = made["w1"], made["w2"]
    for who in ("v1", "v2", "v3"):
        ann.validate(st, w1[0].uid, who, "correct")        # verified fooled
        ann.validate(st, w2[1].uid, who, "correct")        # verified fooled
        ann.validate(st, w1[2].uid, who, "correct")        # verified correct, not fooled
    ann.validate(st, w1[1].uid, "v1", "flagged", reason="gibberish")
    ann.validate(st, w1[1].uid, "v2", "correct")           # undecided

    s = ann.round_stats(st, "sentiment")
    all_ex = w1 + w2
    assert (s.collected, s.fooled, s.verified_fooled) == (6, 4, 2)
    assert s.mer == pytest.approx(4 / 6) and s.vmer == pytest.approx(2 / 6)
    assert s.median_time_ms == statistics.median(ex.time_ms for ex in all_ex)
    assert s.validations == 11
    # verdicts per example: three all-correct units and one [flagged, correct]:
    # o_cc = 9 (3 units x 6 pairs / 2), o_cf = o_fc = 1; n_c = 10, n_f = 1, n = 11
    # alpha = 1 - 10 * 2 / (2 * 10 * 1) = 0
    assert s.alpha == pytest.approx(0.0)
    rows = {a.annotator: a for a in s.annotators}
    assert (rows["w1"].collected, rows["w1"].fooled, rows["w1"].verified_fooled) == (4, 3, 1)
    assert rows["w1"].mer == pytest.approx(3 / 4) and rows["w1"].vmer == pytest.approx(1 / 4)
    assert rows["w2"].mer == pytest.approx(1 / 2) and rows["w2"].vmer == pytest.approx(1 / 2)
    assert rows["w2"].median_time_ms == statistics.median(ex.time_ms for ex in w2)
    assert (rows["v1"].validations_given, rows["v2"].validations_given, rows["v3"].validations_given) == (4, 4, 3)
    assert rows["v1"].collected == 0 and rows["v1"].mer is None
    # an empty new round has no rates, not a division by zero
    ann.new_round(st, "sentiment", ["tiny-sentiment"])
    empty = ann.round_stats(st, "sentiment")
    assert (empty.round, empty.collected, empty.mer, empty.vmer, empty.alpha) == (2, 0, None, None, None)
    assert [r.round for r in ann.task_stats(st, "sentiment")] == [1, 2]
    st.close()


def test_the_facts_statistics_read_are_the_examples_own_in_the_same_order_with_the_same_votes(tmp_path, models):
    """``round_stats`` reads :meth:`example_facts` (a few columns, no JSON: 27 -> 11 ms on 600 examples and 900
    votes), not whole examples: each round's facts are its examples' own, in their order, with the same votes and
    roles (an owner's vote decides alone); another round's examples are not among them."""
    st = open_store(tmp_path / "ws")
    sentiment_round(st, models, people=[("w1", "annotator"), ("w2", "annotator"), ("boss", "owner"),
                                        ("v1", "annotator")])
    first = [make_example(st, w, f"{w} wrote number {i}", i % 2 == 0) for i, w in enumerate(["w1", "w2", "w1"])]
    ann.validate(st, first[0].uid, "boss", "correct")
    ann.validate(st, first[1].uid, "v1", "flagged", reason="unclear")
    ann.new_round(st, "sentiment", ["tiny-sentiment"])
    second = [make_example(st, "w2", "round two, number one", True)]
    for number, made in ((1, first), (2, second)):
        whole = st.annotation.examples("sentiment", number)
        facts = st.annotation.example_facts("sentiment", number)
        assert [f.uid for f in facts] == [e.uid for e in whole] == [e.uid for e in made]
        for f, e in zip(facts, whole):
            assert (f.annotator, f.model_name, f.fooled, f.time_ms) == (e.annotator, e.model_name, e.fooled, e.time_ms)
            assert f.validations == e.validations
    owner_vote = st.annotation.example_facts("sentiment", 1)[0].validations
    assert [(v.annotator, v.role) for v in owner_vote] == [("boss", "owner")]
    assert ann.round_stats(st, "sentiment", 1).verified_fooled == 1  # the owner's one vote decided it
