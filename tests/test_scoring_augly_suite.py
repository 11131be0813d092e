"""The dynaboard-augly suite set: the reference's AugLy families, settings and pre/post-processing."""

from __future__ import annotations

import random

from dynadesk.scoring.augly_suite import (
    AUGLY_OPS,
    PUNCTUATION_CHARS,
    WHITESPACE_CHARS,
    ZERO_WIDTH_CHARS,
    insert_chars,
    perturb_text,
    postprocess,
    preprocess,
)

TEXT = "The quick brown fox couldn't jump over the green, grassy hill."


def test_pre_and_post_processing_are_dynabench_s():
    assert preprocess("Hi, it's me!") == "Hi ,  it ' s me ! "
    assert postprocess(preprocess("Hi, it's me!")) == "Hi,  it' s me!"  # the reference's own residue


def test_insertion_every_ten_characters_with_varied_chars():
    text = "abcdefghijklmnopqrstuvwxyz"
    out = insert_chars(text, ZERO_WIDTH_CHARS, random.Random(0))
    assert out.replace("\u200b", "").translate({ord(c): None for c in ZERO_WIDTH_CHARS}) == text
    parts = [out[0:10], out[11:21], out[22:]]
    assert parts == ["abcdefghij", "klmnopqrst", "uvwxyz"] and out[10] in ZERO_WIDTH_CHARS
    assert out[21] in ZERO_WIDTH_CHARS
    assert insert_chars("abc", PUNCTUATION_CHARS, random.Random(0)) == "abc"  # no gap under ten characters


def test_every_family_changes_a_sentence_and_is_seeded():
    first = perturb_text(TEXT, 0, "ex1")
    assert [s for s, _ in first] == list(AUGLY_OPS)
    assert first == perturb_text(TEXT, 0, "ex1")
    assert first != perturb_text(TEXT, 1, "ex1")
    shown = dict(first)
    assert any(c in shown["augly_whitespace"] for c in "\t\v\f\r\n")
    assert any(0x1D400 <= ord(c) <= 0x1D6A3 or 0xFF21 <= ord(c) <= 0xFF5A for c in shown["augly_fun_fonts"])
    assert any(c in shown["augly_upside_down"] for c in "ɐǝɹʇʎɥ")
    tokens = preprocess(TEXT).split()  # every third token of the pre-processed text, as the reference sees it
    upper = {t.upper() for i, t in enumerate(tokens) if i % 3 == 2 and t.isalpha()}
    assert upper == {"BROWN", "OVER"} and all(u in shown["augly_case"] for u in upper)
    assert "quick" in shown["augly_case"]
    assert sum(1 for c in shown["augly_similar_unicode"] if ord(c) > 127) >= 2
    assert all(c in "".join(PUNCTUATION_CHARS) + TEXT for c in shown["augly_punctuation"])
    assert set(WHITESPACE_CHARS) >= {" ", "\t", "\v"}
