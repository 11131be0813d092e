"""Seeded robustness perturbations: one function per suite, ``op(text, rng) -> (new_text, change)``.

Each op returns the text unchanged (and ``change`` ``""``) when it does not apply,
so the caller can drop the example instead of emitting a copy. Ops only use the
``random.Random`` they are given, so a seed fixes the output exactly.

Protected spans are never changed, split or joined to a neighbour: URLs, @handles,
#hashtags, emoticons, emoji and numbers (:func:`protected_spans`). Ops edit only the
free text between them. The fairness ops live in :mod:`dynadesk.scoring.gender`.
"""

from __future__ import annotations

import random
import re
from collections.abc import Callable, Iterator, Sequence

from dynadesk.scoring.wordlists import (
    CONTRACTIONS,
    HOMOGLYPHS,
    KEYBOARD_NEIGHBOURS,
    MISSPELLINGS,
    ZERO_WIDTH,
)

Op = Callable[[str, random.Random], tuple[str, str]]
Span = tuple[int, int, str]

_EMOTICON = (r"(?:[<>]?[:;=8xX][\-o\*']?[\)\]\(\[dDpP/\\:\}\{@\|3oO]+|[\)\]\(\[dDpP/\\:\}\{@\|]+[\-o\*']?[:;=8]"
             r"|<3+|</3|\^_*\^|-_+-|[oO]_[oO]|T_T|;_;|:-?\*|xD+|XD+)")
_EMOJI = "(?:[\U0001F000-\U0001FAFF\u2600-\u27BF\u2B00-\u2BFF\u2190-\u21FF\u2300-\u23FF][\uFE0F\u200D]?)+"
PROTECTED = re.compile(
    r"(?:https?://|www\.)\S+"                          # URLs
    r"|\b[\w.-]+\.(?:com|org|net|edu|gov|io|co|uk)\b(?:/\S*)?"
    r"|[@#][A-Za-z0-9_]+"                               # @handles, #hashtags
    r"|(?<![A-Za-z0-9])" + _EMOTICON + r"(?![A-Za-z0-9])"
    r"|" + _EMOJI +
    r"|[$£€]?\d+(?:[.,:/]\d+)*(?:st|nd|rd|th|s|%|am|pm)?")  # numbers, with their unit/ordinal
_WORD = re.compile(r"[A-Za-z]+(?:'[A-Za-z]+)?")
_NEGATIONS = {"not", "no", "nor", "never", "none", "nothing", "nobody", "neither", "nowhere"}


def protected_spans(text: str) -> list[tuple[int, int]]:
    """``(start, end)`` of every URL, @handle, #hashtag, emoticon, emoji and number."""
    return [m.span() for m in PROTECTED.finditer(text)]


def protected_tokens(text: str) -> list[str]:
    """The protected strings of ``text`` in order (what no robustness op may change)."""
    return [m.group() for m in PROTECTED.finditer(text)]


def free_segments(text: str) -> Iterator[tuple[int, int]]:
    """``(start, end)`` of the text between protected spans."""
    last = 0
    for start, end in protected_spans(text):
        if start > last:
            yield last, start
        last = end
    if last < len(text):
        yield last, len(text)


def map_free(text: str, fn: Callable[[str], str]) -> str:
    """``fn`` applied to each free segment; protected spans kept byte for byte."""
    out, last = [], 0
    for start, end in protected_spans(text):
        out.append(fn(text[last:start]) if start > last else "")
        out.append(text[start:end])
        last = end
    out.append(fn(text[last:]) if last < len(text) else "")
    return "".join(out)


def free_words(text: str) -> list[re.Match[str]]:
    """Word matches that lie wholly in free text and touch no protected span."""
    spans = protected_spans(text)
    return [m for m in _WORD.finditer(text)
            if not any(s <= m.end() and m.start() <= e for s, e in spans)]


def match_case(source: str, word: str) -> str:
    """``word`` with the capitalisation pattern of ``source`` (UPPER, Title or lower)."""
    if len(source) > 1 and source.isupper():
        return word.upper()
    if source[:1].isupper():
        return word[:1].upper() + word[1:]
    return word


def replace_spans(text: str, spans: Sequence[Span]) -> str:
    """``text`` with each ``(start, end, replacement)`` applied (spans must not overlap)."""
    out, last = [], 0
    for start, end, repl in sorted(spans):
        out.append(text[last:start])
        out.append(repl)
        last = end
    out.append(text[last:])
    return "".join(out)


def _typo_candidates(text: str) -> list[re.Match[str]]:
    """Words a typo may hit: four letters or more, no apostrophe, not a negation."""
    return [m for m in free_words(text)
            if len(m.group()) >= 4 and "'" not in m.group() and m.group().lower() not in _NEGATIONS]


def _inner_typo(word: str, rng: random.Random, keyboard: bool) -> str:
    """One edit strictly inside ``word`` (first and last letters kept, so "HATE" never becomes "ATE")."""
    i = rng.randrange(1, len(word) - 1)
    ch = word[i]
    near = KEYBOARD_NEIGHBOURS.get(ch.lower(), "")
    kind = rng.choice(("substitute", "swap", "drop", "insert"))
    if kind == "swap" and word[i] != word[i + 1] and i + 2 < len(word):
        return word[:i] + word[i + 1] + word[i] + word[i + 2:]
    if kind == "drop" and len(word) > 4:
        return word[:i] + word[i + 1:]
    pool = near if keyboard else "abcdefghijklmnopqrstuvwxyz".replace(ch.lower(), "")
    if not pool:
        return word
    new = match_case(ch, rng.choice(pool)) if ch.isalpha() else rng.choice(pool)
    if kind == "insert":
        return word[:i + 1] + new + word[i + 1:]
    return word[:i] + new + word[i + 1:]


def _typos(text: str, rng: random.Random, keyboard: bool, label: str) -> tuple[str, str]:
    words = _typo_candidates(text)
    if not words:
        return text, ""
    spans = []
    for m in rng.sample(words, 1 if len(words) < 8 else 2):
        for _ in range(6):  # an edit may not apply at the drawn place; draw again
            new = _inner_typo(m.group(), rng, keyboard)
            if new != m.group():
                spans.append((m.start(), m.end(), new))
                break
    return (replace_spans(text, spans), f"{label}:{len(spans)}") if spans else (text, "")


def typos(text: str, rng: random.Random) -> tuple[str, str]:
    """Keyboard typos (neighbour key hit, swap, drop, extra key) inside one or two words."""
    return _typos(text, rng, True, "keyboard_typos")


def char_typos(text: str, rng: random.Random) -> tuple[str, str]:
    """Random character typos (any letter substituted or inserted, swap, drop) inside one or two words."""
    return _typos(text, rng, False, "char_typos")


def misspellings(text: str, rng: random.Random) -> tuple[str, str]:
    """Common misspellings of listed words (every listed word is misspelled)."""
    spans = [(m.start(), m.end(), match_case(m.group(), MISSPELLINGS[m.group().lower()]))
             for m in free_words(text) if m.group().lower() in MISSPELLINGS]
    return replace_spans(text, spans), f"misspelled:{len(spans)}" if spans else ""


def split_words(text: str, rng: random.Random) -> tuple[str, str]:
    """One word of four letters or more split in two by a space ("great" -> "gr eat")."""
    words = _typo_candidates(text)
    if not words:
        return text, ""
    m = rng.choice(words)
    cut = rng.randrange(1, len(m.group()))
    return text[:m.start() + cut] + " " + text[m.start() + cut:], f"split:{m.group()}"


def case(text: str, rng: random.Random) -> tuple[str, str]:
    """Letter case change of the free text: all lower, all upper, title case, or one word upper-cased."""
    choices = ["lower", "upper", "title", "shout"]
    rng.shuffle(choices)
    for choice in choices:
        if choice == "lower":
            new = map_free(text, str.lower)
        elif choice == "upper":
            new = map_free(text, str.upper)
        elif choice == "title":
            new = replace_spans(text, [(m.start(), m.end(), m.group()[:1].upper() + m.group()[1:])
                                       for m in free_words(text)])
        else:
            cands = [m for m in free_words(text) if not m.group().isupper()]
            if not cands:
                continue
            m = rng.choice(cands)
            new = replace_spans(text, [(m.start(), m.end(), m.group().upper())])
        if new != text:
            return new, f"case:{choice}"
    return text, ""


_MARK = re.compile(r"[.,;:!?\"()\[\]]|(?<=\s)-+(?=\s)|(?<![A-Za-z])'|'(?![A-Za-z])")


def _strip_marks(text: str) -> str:
    """Every punctuation mark of the free text removed (apostrophes inside words kept), gaps squeezed."""
    spans = protected_spans(text)
    marks = [(m.start(), m.end(), "") for m in _MARK.finditer(text)
             if not any(s <= m.start() < e for s, e in spans)]
    return map_free(replace_spans(text, marks), lambda seg: re.sub(r"[ \t]{2,}", " ", seg)).strip()


def punctuation(text: str, rng: random.Random) -> tuple[str, str]:
    """Punctuation removed (every mark in free text) or inserted (a comma after a word, or a closing mark)."""
    choices = ["remove", "comma", "end"]
    rng.shuffle(choices)
    words = free_words(text)
    for choice in choices:
        if choice == "remove":
            new = _strip_marks(text)
        elif choice == "comma" and len(words) > 1:
            m = rng.choice(words[:-1])
            if not text[m.end():m.end() + 1].isspace():
                continue
            new = text[:m.end()] + "," + text[m.end():]
        elif choice == "end":
            body = text.rstrip()
            if protected_spans(body) and protected_spans(body)[-1][1] == len(body):
                continue  # a closing mark glued to a URL or emoticon would change it
            new = body + (body[-1] if body[-1] in ".!?" else rng.choice(("!", ".", "...")))
        else:
            continue
        if new != text and new.strip():
            return new, f"punctuation:{choice}"
    return text, ""


def whitespace(text: str, rng: random.Random) -> tuple[str, str]:
    """Extra spaces: one to three gaps between words widened, or a trailing space added."""
    gaps = list(re.finditer(r"(?<=\S) (?=\S)", text))
    if not gaps:
        return text + "  ", "whitespace:trailing"
    chosen = rng.sample(gaps, min(len(gaps), rng.randint(1, 3)))
    spans = [(m.start(), m.end(), " " * rng.randint(2, 4)) for m in chosen]
    return replace_spans(text, spans), f"whitespace:{len(spans)}"


def zero_width(text: str, rng: random.Random) -> tuple[str, str]:
    """Invisible characters (zero-width space, joiners, word joiner) inside one to three words."""
    words = [m for m in free_words(text) if len(m.group()) >= 2]
    if not words:
        return text, ""
    chosen = rng.sample(words, min(len(words), rng.randint(1, 3)))
    spans = []
    for m in chosen:
        cut = rng.randrange(1, len(m.group()))
        spans.append((m.start(), m.end(), m.group()[:cut] + rng.choice(ZERO_WIDTH) + m.group()[cut:]))
    return replace_spans(text, spans), f"zero_width:{len(spans)}"


def homoglyphs(text: str, rng: random.Random) -> tuple[str, str]:
    """One to three letters of free text replaced by look-alike Unicode characters (Cyrillic/Greek)."""
    where = [i for s, e in free_segments(text) for i in range(s, e) if text[i] in HOMOGLYPHS]
    if not where:
        return text, ""
    chosen = rng.sample(where, min(len(where), rng.randint(1, 3)))
    chars = list(text)
    for i in chosen:
        chars[i] = HOMOGLYPHS[chars[i]]
    return "".join(chars), f"homoglyphs:{len(chosen)}"


# --------------------------------------------------------------------------- contractions

_AUXILIARY_HOSTS = {"i", "you", "he", "she", "it", "we", "they", "that", "there", "what", "who"}
_PERFECT_NEXT = {"been", "got", "gotten", "had", "done", "seen", "made", "never", "always", "just", "already",
                 "ever", "lost", "found", "heard", "read", "tried", "become"}
_FRONTED = {"how", "what", "as", "than", "however", "whatever", "wherever", "where"}
_CONTRACTED_MAP = {v: k for k, v in CONTRACTIONS.items()}
_EXPANDED = re.compile(r"\b(" + "|".join(sorted(map(re.escape, CONTRACTIONS), key=len, reverse=True)) + r")\b",
                       re.IGNORECASE)
_CONTRACTED = re.compile(r"\b(" + "|".join(sorted(map(re.escape, _CONTRACTED_MAP), key=len, reverse=True))
                         + r")(?![A-Za-z])", re.IGNORECASE)


def _next_word(text: str, end: int) -> str:
    """The word right after ``end`` (lower case), or "" at a clause end (punctuation, end of text)."""
    m = re.match(r"[ \t]+([A-Za-z0-9']+)", text[end:])
    return m.group(1).lower() if m else ""


def _may_contract(text: str, m: re.Match[str]) -> bool:
    """Grammar: "I am" -> "I'm" only before a complement that follows it ("as I am," and "how tired
    I am of" stay); "I have" -> "I've" only as the perfect auxiliary ("I have been", not "I have a car")."""
    first, _, second = m.group().lower().partition(" ")
    if first not in _AUXILIARY_HOSTS:
        return True  # negations ("do not", "cannot") contract anywhere
    nxt = _next_word(text, m.end())
    if not nxt or nxt == "of":
        return False
    before = re.findall(r"[A-Za-z']+", text[:m.start()])[-3:]
    if any(w.lower() in _FRONTED for w in before):
        return False  # the complement moved in front: "how tired I am of", "as happy as we are"
    if second == "have":
        return nxt in _PERFECT_NEXT or nxt.endswith("ed")
    return True


# Subjects after an inverted negation: "didn't you", "isn't it", "won't they".
_INVERTED_SUBJECTS = {"i", "you", "he", "she", "it", "we", "they", "there", "that", "this", "one", "anyone",
                      "everyone", "someone", "somebody", "anybody", "everybody"}


def _may_expand(text: str, m: re.Match[str]) -> bool:
    """"'s"/"'d" are ambiguous ("he's been" = has, "I'd gone" = had): expand only the clear cases; an
    inverted negation stays ("didn't you" -> "did not you" is not English; "did you not" would reorder)."""
    word = m.group().lower()
    nxt = _next_word(text, m.end())
    if word.endswith("n't") and nxt in _INVERTED_SUBJECTS:
        return False
    participle = nxt.endswith("ed")
    if word.endswith("'s") and (nxt in {"been", "got", "gotten", "had", "done"} or participle):
        return False
    return not (word.endswith("'d") and (nxt in {"been", "better", "had", "got", "gotten"} or participle))


def contractions(text: str, rng: random.Random) -> tuple[str, str]:
    """Expanded forms contracted ("do not" -> "don't") where grammar allows, or contractions expanded."""
    candidates = {
        "contract": [(m.start(), m.end(), match_case(m.group(), CONTRACTIONS[m.group().lower()]))
                     for m in _EXPANDED.finditer(text) if _may_contract(text, m)],
        "expand": [(m.start(), m.end(), match_case(m.group(), _CONTRACTED_MAP[m.group().lower()]))
                   for m in _CONTRACTED.finditer(text) if _may_expand(text, m)],
    }
    modes = [mode for mode, spans in candidates.items() if spans]
    if not modes:
        return text, ""
    mode = rng.choice(modes)
    new = replace_spans(text, candidates[mode])
    return (new, f"contractions:{mode}") if new != text else (text, "")


ROBUSTNESS_OPS: dict[str, Op] = {
    "case": case, "contractions": contractions, "punctuation": punctuation, "whitespace": whitespace,
    "zero_width": zero_width, "homoglyphs": homoglyphs, "typos": typos, "char_typos": char_typos,
    "misspellings": misspellings, "split_words": split_words,
}
