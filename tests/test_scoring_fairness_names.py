"""Fairness swaps change people, not titles, surnames or titles of works; inverted negations stay English."""

from __future__ import annotations

import random

import pytest

from dynadesk.scoring.gender import ethnic_names, gender
from dynadesk.scoring.textops import contractions


@pytest.mark.parametrize("text", [
    "I read what Marquis de Sade wrote.",     # a title with a particle: not a first name
    "Funny as ever, Adam SANDLER is back.",      # a public figure's surname in capitals
    "Vincent van Gogh painted it.",
    "We watched Harry & Tonto last night.",     # a film title
    "Tonto & Harry is a film I love.",
    "Nolan Ryan threw a no-hitter.",
])
@pytest.mark.parametrize("op", [gender, ethnic_names])
def test_titles_surnames_and_works_are_left_alone(op, text):
    for seed in range(5):
        assert op(text, random.Random(seed)) == (text, ""), (op.__name__, text)


@pytest.mark.parametrize("op", [gender, ethnic_names])
def test_a_lone_first_name_is_still_swapped(op):
    new, change = op("Adam said the movie was great.", random.Random(1))
    assert new != "Adam said the movie was great." and change
    new, change = op("I told Adam & my brother to come.", random.Random(1))  # '&' before a lower-case word
    assert change


@pytest.mark.parametrize("text,unchanged", [
    ("Why didn't you call?", "didn't you"),
    ("It's cold, isn't it?", "isn't it"),
    ("Won't they come?", "Won't they"),
    ("Don't we all?", "Don't we"),
])
def test_inverted_negations_are_not_expanded(text, unchanged):
    for seed in range(6):
        new, _ = contractions(text, random.Random(seed))
        assert unchanged in new and "not you" not in new and "not it" not in new


def test_plain_negations_still_expand():
    new, change = contractions("You didn't call me.", random.Random(0))
    assert new == "You did not call me." and change == "contractions:expand"
