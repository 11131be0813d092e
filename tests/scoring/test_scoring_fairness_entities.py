"""Fairness swaps a reader can trust, family by family (issue 49 item 6): people named by surname alone keep their
pronouns; businesses, titles of works and people named in full keep their names; gendered nouns flip with the
pronouns that refer to them. Sentences from the kinds of text the bundled sets hold (reviews, tweets, news)."""

from __future__ import annotations

import random

import pytest

from dynadesk.scoring.gender import ethnic_names, gender


def _all_seeds(op, text):
    return {op(text, random.Random(seed)) for seed in range(6)}


@pytest.mark.parametrize("text", [
    "Nicholson gives his best performance in years.",                       # sentence-initial surname + verb
    "I think Scorsese lost his touch here.",                                 # irregular past after a surname
    "Zhang ... has done an amazing job with his mainly nonprofessional cast.",
    "Bravo reveals the true intent of her film.",
    "(Ferrera) has the charisma of a young woman who knows how to hold the screen.",
    "With each of her three protagonists, Miller eloquently captures the moment.",
    "his (Nelson's) screenplay is a mess",                                   # a possessive surname
    "A film by Kubrick, and his best.",                                      # after "by"
])
def test_a_person_named_by_surname_alone_keeps_the_pronouns(text):
    assert _all_seeds(gender, text) == {(text, "")}


@pytest.mark.parametrize("text", [
    "Mr. Smith said he liked it.",                         # a title before a surname: a particular person
    "Emily and William Harris host the show, and she sings.",  # a first name coordinated with a full name
    "We ate at Jerry's deli and the waiter was rude.",     # a business named after a person
    "I went to Wendy's and she served me fries.",
    "Julia/Julia was a delight.",                          # a film title joined by a slash
    "Getting onto Prince of Persia with him last year.",   # a gendered noun inside a title
    "George W. Bush said his piece.",                      # named in full
])
@pytest.mark.parametrize("op", [gender, ethnic_names])
def test_named_entities_are_left_alone(op, text):
    assert _all_seeds(op, text) == {(text, "")}, op.__name__


@pytest.mark.parametrize(("text", "want"), [
    ("the strongman lifted the car and her arms shook.", "the strongwoman lifted the car and his arms shook."),
    ("the fireman saved her cat", "the firewoman saved his cat"),
    ("The sportswomen and their coach, a woman of her word.", "The sportsmen and their coach, a man of his word."),
    ("Her heiress lost her bet.", "His heir lost his bet."),
    ("my wife shuns all new technology but now she's forever asking.",
     "my husband shuns all new technology but now he's forever asking."),
])
def test_gendered_nouns_flip_with_their_pronouns(text, want):
    assert gender(text, random.Random(0))[0] == want


def test_a_gendered_noun_without_a_pair_leaves_the_text_alone():
    text = "the frogman surfaced and waved her flag."  # no listed pair: flipping the pronoun alone contradicts it
    assert _all_seeds(gender, text) == {(text, "")}


@pytest.mark.parametrize("text", [
    "Emma said her son was late.",
    "When Sandra drank her brandy, she slept.",
    "The movie was great and her acting was superb.",
    "If her friends are angry at her, she doesn't hear about it.",
])
def test_ordinary_sentences_are_still_swapped(text):
    new, change = gender(text, random.Random(1))
    assert change and new != text
