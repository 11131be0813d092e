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
    "whoooooo... James yap for the win!! Go purefoods!!!",  # a surname written in lower case
    "Jim carrey is so funny in this one.",
    "I liked it more than Harry &amp; Tonto.",               # a film title, scraped as HTML
    "We saw Pauline &amp; Paulette twice.",
    "I liked There's Something About Mary a lot.",           # a title word inside a sentence
    "Just ''Stuart's Choice'' on the front.",                # a brand, a possessive before a capitalised word
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


@pytest.mark.parametrize("text", [
    "Amy played tennis all day.",            # inflected verbs: -ed, -s, -ing, -ly
    "Katie likes the new one.",
    "Hope that Chris doesn't freeze up.",    # a contraction
    "When Sandra drank her brandy, she slept.",  # an irregular past form
    "Amy and Tom came late.",                # function words
    "If you see Jim, say hi for me.",        # punctuation
])
@pytest.mark.parametrize("op", [gender, ethnic_names])
def test_a_name_before_an_ordinary_word_is_swapped(op, text):
    new, change = op(text, random.Random(2))
    assert change and new != text, (op.__name__, text)


def test_the_name_lists_are_larger_disjoint_and_deterministic():
    from dynadesk.scoring.gender import NAMES
    from dynadesk.scoring.wordlists import FIRST_NAMES, NAME_FOLLOWERS

    for group, by_gender in FIRST_NAMES.items():
        for g, names in by_gender.items():
            assert len(names) >= 30 and len(set(names)) == len(names), (group, g)
            assert all(n.isalpha() and n[0].isupper() for n in names)
    assert sum(len(v) for d in FIRST_NAMES.values() for v in d.values()) == len(NAMES)  # no name in two groups
    for word in ("Marquis", "Ryan", "Scott", "Will", "Mark", "Frank", "Jesus", "Oscar"):  # titles, surnames, words
        assert word not in NAMES
    assert not {n.lower() for n in NAMES} & NAME_FOLLOWERS
    text = "Emma said Tom would bring Keisha and Hiroshi to see Priya."
    once = ethnic_names(text, random.Random("x"))
    assert once == ethnic_names(text, random.Random("x")) and once[0] != text  # seeded: the same every time


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
