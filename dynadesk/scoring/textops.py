"""Seeded text perturbations: one function per suite, ``op(text, rng) -> (new_text, change)``.

Each op returns the text unchanged (and ``change`` ``""``) when it does not apply,
so the caller can drop the example instead of emitting a copy. Ops only use the
``random.Random`` they are given, so a seed fixes the output exactly.
"""

from __future__ import annotations

import random
import re
from collections.abc import Callable

from dynadesk.scoring.wordlists import (
    CONTRACTIONS,
    FIRST_NAMES,
    GENDER_PAIRS,
    HOMOGLYPHS,
    KEYBOARD_NEIGHBOURS,
    MISSPELLINGS,
    name_index,
)

Op = Callable[[str, random.Random], tuple[str, str]]

_WORD = re.compile(r"[A-Za-z]+(?:'[A-Za-z]+)?")
_NAME = re.compile(r"\b[A-Z][a-zA-Z]+\b")
_PUNCT = re.compile(r"[.,;:!?\"()\[\]-]|(?<![A-Za-z])'|'(?![A-Za-z])")


def match_case(source: str, word: str) -> str:
    """``word`` with the capitalisation pattern of ``source`` (UPPER, Title or lower)."""
    if len(source) > 1 and source.isupper():
        return word.upper()
    if source[:1].isupper():
        return word[:1].upper() + word[1:]
    return word


def _replace_spans(text: str, spans: list[tuple[int, int, str]]) -> str:
    out, last = [], 0
    for start, end, repl in sorted(spans):
        out.append(text[last:start])
        out.append(repl)
        last = end
    out.append(text[last:])
    return "".join(out)


# --------------------------------------------------------------------------- robustness

def _typo(word: str, rng: random.Random) -> tuple[str, str]:
    kind = rng.choice(("neighbour", "swap", "drop", "insert"))
    i = rng.randrange(len(word))
    ch = word[i]
    near = KEYBOARD_NEIGHBOURS.get(ch.lower(), "")
    if kind == "neighbour" and near:
        return word[:i] + match_case(ch, rng.choice(near)) + word[i + 1:], kind
    if kind == "swap" and i + 1 < len(word) and word[i] != word[i + 1]:
        return word[:i] + word[i + 1] + word[i] + word[i + 2:], kind
    if kind == "drop" and len(word) > 2:
        return word[:i] + word[i + 1:], kind
    if kind == "insert" and near:
        return word[:i + 1] + rng.choice(near) + word[i + 1:], kind
    return word, ""


def typos(text: str, rng: random.Random) -> tuple[str, str]:
    """Keyboard typos (neighbour substitution, swap, drop, insert) in one or two words."""
    words = [m for m in _WORD.finditer(text) if len(m.group()) >= 3 and "'" not in m.group()]
    if not words:
        return text, ""
    n = 1 if len(words) < 8 else 2
    spans, kinds = [], []
    for m in rng.sample(words, n):
        for _ in range(6):  # an op may not apply to this word; try another draw
            new, kind = _typo(m.group(), rng)
            if kind and new != m.group():
                spans.append((m.start(), m.end(), new))
                kinds.append(kind)
                break
    return _replace_spans(text, spans), "typo:" + ",".join(kinds) if kinds else ""


def misspellings(text: str, rng: random.Random) -> tuple[str, str]:
    """Common misspellings of listed words (every listed word is misspelled)."""
    spans = [(m.start(), m.end(), match_case(m.group(), MISSPELLINGS[m.group().lower()]))
             for m in _WORD.finditer(text) if m.group().lower() in MISSPELLINGS]
    return _replace_spans(text, spans), f"misspelled:{len(spans)}" if spans else ""


def case(text: str, rng: random.Random) -> tuple[str, str]:
    """Letter case change: all lower, all upper, title case, or one word upper-cased."""
    words = list(_WORD.finditer(text))
    choices = ["lower", "upper", "title", "shout"]
    rng.shuffle(choices)
    for choice in choices:
        if choice == "lower":
            new = text.lower()
        elif choice == "upper":
            new = text.upper()
        elif choice == "title":
            new = _replace_spans(text, [(m.start(), m.end(), m.group()[:1].upper() + m.group()[1:]) for m in words])
        else:
            cands = [m for m in words if not m.group().isupper()]
            if not cands:
                continue
            m = rng.choice(cands)
            new = _replace_spans(text, [(m.start(), m.end(), m.group().upper())])
        if new != text:
            return new, f"case:{choice}"
    return text, ""


def punctuation(text: str, rng: random.Random) -> tuple[str, str]:
    """Punctuation removed (all marks) or inserted (a comma after a word, or a closing mark)."""
    choices = ["remove", "comma", "end"]
    rng.shuffle(choices)
    words = list(_WORD.finditer(text))
    for choice in choices:
        if choice == "remove":
            new = re.sub(r"\s{2,}", " ", _PUNCT.sub("", text)).strip()
        elif choice == "comma" and len(words) > 1:
            m = rng.choice(words[:-1])
            if text[m.end():m.end() + 1] in (",", ".", "!", "?", ";", ":"):
                continue
            new = text[:m.end()] + "," + text[m.end():]
        elif choice == "end":
            body = text.rstrip()
            new = body + (body[-1] if body[-1] in ".!?" else rng.choice(("!", ".", "...")))
        else:
            continue
        if new != text and new.strip():
            return new, f"punctuation:{choice}"
    return text, ""


def whitespace(text: str, rng: random.Random) -> tuple[str, str]:
    """Extra spaces: one to three gaps between words widened, or a trailing space added."""
    gaps = [m for m in re.finditer(r"(?<=\S) (?=\S)", text)]
    if not gaps:
        return text + "  ", "whitespace:trailing"
    chosen = rng.sample(gaps, min(len(gaps), rng.randint(1, 3)))
    spans = [(m.start(), m.end(), " " * rng.randint(2, 4)) for m in chosen]
    return _replace_spans(text, spans), f"whitespace:{len(spans)}"


_EXPANDED = re.compile(r"\b(" + "|".join(sorted(map(re.escape, CONTRACTIONS), key=len, reverse=True)) + r")\b",
                       re.IGNORECASE)
_CONTRACTED_MAP = {v: k for k, v in CONTRACTIONS.items()}
_CONTRACTED = re.compile(r"\b(" + "|".join(sorted(map(re.escape, _CONTRACTED_MAP), key=len, reverse=True))
                         + r")(?![A-Za-z])", re.IGNORECASE)


def contractions(text: str, rng: random.Random) -> tuple[str, str]:
    """Expanded forms contracted ("do not" -> "don't"), or contractions expanded."""
    modes = [m for m, rx in (("contract", _EXPANDED), ("expand", _CONTRACTED)) if rx.search(text)]
    if not modes:
        return text, ""
    mode = rng.choice(modes)
    if mode == "contract":
        new = _EXPANDED.sub(lambda m: match_case(m.group(), CONTRACTIONS[m.group().lower()]), text)
    else:
        new = _CONTRACTED.sub(lambda m: match_case(m.group(), _CONTRACTED_MAP[m.group().lower()]), text)
    return (new, f"contractions:{mode}") if new != text else (text, "")


def homoglyphs(text: str, rng: random.Random) -> tuple[str, str]:
    """One to three letters replaced by look-alike Unicode characters (Cyrillic/Greek)."""
    where = [i for i, ch in enumerate(text) if ch in HOMOGLYPHS]
    if not where:
        return text, ""
    chosen = rng.sample(where, min(len(where), rng.randint(1, 3)))
    chars = list(text)
    for i in chosen:
        chars[i] = HOMOGLYPHS[chars[i]]
    return "".join(chars), f"homoglyphs:{len(chosen)}"


# --------------------------------------------------------------------------- fairness

_TO_FEMALE = {m: f for m, f in GENDER_PAIRS}
_TO_MALE = {f: m for m, f in GENDER_PAIRS if f != "her"}
_GENDERED = re.compile(r"\b(" + "|".join(sorted({*_TO_FEMALE, *_TO_MALE, "her", "hers"}, key=len, reverse=True))
                       + r")\b", re.IGNORECASE)
_OBJECT_CONTEXT = {"", "to", "and", "or", "but", "the", "a", "an", "in", "on", "at", "for", "with", "from",
                   "that", "as", "if", "so", "because", "when", "about", "too", "again", "out", "up", "down", "off"}


def _next_word(text: str, end: int) -> str:
    m = re.match(r"\s*([A-Za-z']+)?", text[end:])
    return (m.group(1) or "").lower() if m else ""


def _swap_gender(m: re.Match[str], text: str) -> str:
    word = m.group()
    low = word.lower()
    nxt = _next_word(text, m.end()) if text[m.end():m.end() + 1] in (" ", "") else ""
    if low == "her":  # "her book" -> "his book"; "saw her." -> "saw him."
        repl = "him" if nxt in _OBJECT_CONTEXT else "his"
    elif low == "his":  # "his book" -> "her book"; "it is his." -> "it is hers."
        repl = "hers" if nxt in _OBJECT_CONTEXT else "her"
    elif low == "hers":
        repl = "his"
    else:
        repl = _TO_FEMALE.get(low) or _TO_MALE[low]
    return match_case(word, repl)


def gender_words(text: str, rng: random.Random) -> tuple[str, str]:
    """Every gendered word swapped to the other gender (he<->she, man<->woman, ...)."""
    count = len(_GENDERED.findall(text))
    if not count:
        return text, ""
    new = _GENDERED.sub(lambda m: _swap_gender(m, text), text)
    return (new, f"gender_words:{count}") if new != text else (text, "")


_NAMES = name_index()


def _swap_names(text: str, rng: random.Random, pick: Callable[[str, str, int, random.Random], str],
                label: str) -> tuple[str, str]:
    found = [m for m in _NAME.finditer(text) if m.group() in _NAMES]
    if not found:
        return text, ""
    mapping: dict[str, str] = {}
    for m in found:  # the same name maps to the same replacement within an example
        if m.group() not in mapping:
            mapping[m.group()] = pick(*_NAMES[m.group()], rng)
    new = _replace_spans(text, [(m.start(), m.end(), mapping[m.group()]) for m in found])
    return (new, f"{label}:" + ",".join(f"{a}->{b}" for a, b in mapping.items())) if new != text else (text, "")


def _other_gender(group: str, gender: str, pos: int, rng: random.Random) -> str:
    other = "female" if gender == "male" else "male"
    return rng.choice(FIRST_NAMES[group][other])


def _other_group(group: str, gender: str, pos: int, rng: random.Random) -> str:
    other = rng.choice(sorted(g for g in FIRST_NAMES if g != group))
    return rng.choice(FIRST_NAMES[other][gender])


def gender_names(text: str, rng: random.Random) -> tuple[str, str]:
    """Listed first names replaced by names of the other gender from the same group."""
    return _swap_names(text, rng, _other_gender, "gender_names")


def ethnic_names(text: str, rng: random.Random) -> tuple[str, str]:
    """Listed first names replaced by same-gender names from another group's list."""
    return _swap_names(text, rng, _other_group, "ethnic_names")


OPS: dict[str, Op] = {
    "typos": typos, "misspellings": misspellings, "case": case, "punctuation": punctuation,
    "whitespace": whitespace, "contractions": contractions, "homoglyphs": homoglyphs,
    "gender_words": gender_words, "gender_names": gender_names, "ethnic_names": ethnic_names,
}
