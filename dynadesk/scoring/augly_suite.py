"""The reference robustness families, as Dynabench runs them through AugLy: the ``dynaboard-augly`` suite set.

Dynabench's ``evaluation/scripts/augly_perturbation.py`` perturbs each example with twelve
AugLy transforms, each wrapped in its text pre-processing (a space on each side of
``. , ! ? ' : -``) and post-processing (the spaces before those marks removed, the text
stripped); a perturbed copy is kept when its text differs from the original. AugLy is
not installable offline here, so this module reimplements the families with the settings
Dynabench passes (AugLy's defaults otherwise), written from AugLy's documented behaviour:

====================== ===========================================================
``augly_case``          ChangeCase(case="upper", cadence=3.0): every third word upper-cased
``augly_contractions``  Contractions(aug_p=1.0): every expanded form contracted ("do not" -> "don't"),
                        without grammar checks, never the other way
``augly_punctuation``   InsertPunctuationChars(granularity="all", cadence=10, vary_chars=True):
                        one of ``. ? ! , ; : - ' ...`` after every 10 characters, words included
``augly_whitespace``    InsertWhitespaceChars(... same): space, tab, newline, CR, VT, FF
``augly_zero_width``    InsertZeroWidthChars(... same): U+200B-D, U+2060-4
``augly_fun_fonts``     ReplaceFunFonts(vary_fonts=True; granularity "all", aug_p=0.3): with
                        probability 0.3 a try (three tries, as nlpaug retries an unchanged text) the
                        whole text in one of AugLy's 19 font kinds: ten mathematical letter styles,
                        small capitals, or a combining mark after every character (underline,
                        strike-through, slash ...)
``augly_similar_unicode`` ReplaceSimilarUnicodeChars(aug_word_p=0.3, aug_char_p=0.3, min_char=2):
                        int(30 %) of the tokens (at least one), int(30 %) of their letters (at least
                        one), replaced by look-alike letters
``augly_upside_down``   ReplaceUpsideDown(granularity="word", aug_p=0.3): int(30 %) of the tokens flipped
``augly_char_typos``    SimulateTypos(typo_type="charmix"): int(30 %) of the tokens, one character each
                        deleted, inserted, substituted or swapped with its neighbour
``augly_keyboard_typos`` SimulateTypos(typo_type="keyboard"): int(30 %) of the tokens, one character each
                        replaced by a QWERTY neighbour (digits and symbols of the top row included)
``augly_misspellings``  SimulateTypos(typo_type="misspelling"): DynaDesk's misspellings op (its list)
``augly_split_words``   SplitWords(aug_word_p=0.3, min_char=4): int(30 %) of the tokens, those of four
                        characters or more, split at a random position

Counts follow nlpaug's ``int(p * size)`` with a minimum of one; a token is a whitespace-separated piece of
the pre-processed text (punctuation marks are tokens of their own there, as in AugLy's tokenizer).
``bench/bench_augly.py`` compares every family with real AugLy on one model and set.
====================== ===========================================================

Every op is a :data:`~dynadesk.scoring.textops.Op` (``(text, rng) -> (text, change)``), seeded
by the caller as every DynaDesk suite is, so a suite's output is reproducible.
"""

from __future__ import annotations

import math
import random
import re
from collections.abc import Callable

from dynadesk.scoring.textops import Op, match_case, misspellings
from dynadesk.scoring.wordlists import CONTRACTIONS

SUITE_SET = "dynaboard-augly"
DEFAULT_SUITE_SET = "dynadesk"

PUNCTUATION_CHARS = (".", "?", "!", ",", ";", ":", "-", "'", "...")
WHITESPACE_CHARS = (" ", "\t", "\n", "\r", "\v", "\f")
ZERO_WIDTH_CHARS = ("\u200b", "\u200c", "\u200d", "\u2060", "\u2061", "\u2062", "\u2063", "\u2064")
CADENCE = 10.0
WORD_P = 0.3
CHAR_P = 0.3

_PRE = re.compile(r"([.,!?':\-])")
_POST = re.compile(r"\s+([.,!?\"':\-])")


def preprocess(text: str) -> str:
    """Dynabench's pre-processing: a space on each side of ``. , ! ? ' : -``."""
    return _PRE.sub(r" \1 ", text)


def postprocess(text: str) -> str:
    """Dynabench's post-processing: no whitespace before those marks (and ``"``), stripped."""
    return _POST.sub(r"\1", text).strip()


def insert_chars(text: str, chars: tuple[str, ...], rng: random.Random, cadence: float = CADENCE) -> str:
    """A character from ``chars`` between chunks of ``cadence`` characters (one drawn per gap)."""
    splits = int((len(text) + cadence - 1) // cadence)
    chunks = [text[math.ceil(i * cadence):math.ceil((i + 1) * cadence)] for i in range(splits)]
    out: list[str] = []
    for i, chunk in enumerate(chunks):
        out.append(chunk)
        if i < len(chunks) - 1:
            out.append(rng.choice(chars))
    return "".join(out)


# Letters the mathematical blocks leave out: they live in Letterlike Symbols (Unicode's own holes).
_HOLES = {0x1D49C: {"B": "\u212c", "E": "\u2130", "F": "\u2131", "H": "\u210b", "I": "\u2110", "L": "\u2112",
                    "M": "\u2133", "R": "\u211b", "e": "\u212f", "g": "\u210a", "o": "\u2134"},
          0x1D538: {"C": "\u2102", "H": "\u210d", "N": "\u2115", "P": "\u2119", "Q": "\u211a", "R": "\u211d",
                    "Z": "\u2124"},
          0x1D504: {"C": "\u212d", "H": "\u210c", "I": "\u2111", "R": "\u211c", "Z": "\u2128"}}
SMALL_CAPS = ("\u1d00\u0299\u1d04\u1d05\u1d07\ua730\u0262\u029c\u026a\u1d0a\u1d0b\u029f\u1d0d"
              "\u0274\u1d0f\u1d18\u01eb\u0280\ua731\u1d1b\u1d1c\u1d20\u1d21x\u028f\u1d22")  # a-z
# Combining marks AugLy's "string" fonts put after every character.
MARKS = ("\u034e", "\u0353\u033d", "\u0333", "\u0337", "\u033e", "\u0336", "\u0334", "\u0332")


def _fonts() -> list[Callable[[str], str]]:
    """AugLy's 19 font kinds: ten mathematical letter styles (digits kept), small capitals, eight combining marks
    (each character followed by the mark, spaces excepted)."""
    def block(upper: int, lower: int) -> Callable[[str], str]:
        holes = _HOLES.get(upper, {})

        def style(text: str) -> str:
            return "".join(holes.get(ch) or (chr(upper + ord(ch) - 65) if "A" <= ch <= "Z" else
                                             chr(lower + ord(ch) - 97) if "a" <= ch <= "z" else ch) for ch in text)
        return style

    def small_caps(text: str) -> str:
        return "".join(SMALL_CAPS[ord(ch.lower()) - 97] if "a" <= ch.lower() <= "z" else ch for ch in text)

    def marked(mark: str) -> Callable[[str], str]:
        return lambda text: re.sub(r"\S", lambda m: m.group() + mark, text)
    return [block(0x1D400, 0x1D41A),   # bold
            block(0x1D63C, 0x1D656),   # sans-serif bold italic
            block(0x1D468, 0x1D482),   # bold italic
            block(0x1D5D4, 0x1D5EE),   # sans-serif bold
            block(0x1D4D0, 0x1D4EA),   # bold script
            block(0x1D49C, 0x1D4B6),   # script
            block(0x1D538, 0x1D552),   # double-struck
            block(0x1D608, 0x1D622),   # sans-serif italic
            block(0x1D670, 0x1D68A),   # monospace
            block(0x1D504, 0x1D51E),   # fraktur
            small_caps, *(marked(m) for m in MARKS)]


FONTS = _fonts()
FONT_P = 0.3
FONT_TRIES = 3

SIMILAR_UNICODE: dict[str, str] = {
    "a": "àáâãäåāăą∂@", "b": "ƀɓḃ", "c": "çćĉċč¢", "d": "ďđḋ₫", "e": "èéêëēĕėęě€∑", "f": "ƒḟ", "g": "ĝğġģ",
    "h": "ĥħḣ", "i": "ìíîïĩīĭįı", "j": "ĵǰ", "k": "ķƙḱ", "l": "ĺļľŀł", "m": "ḿṁ", "n": "ñńņňŉ", "o": "òóôõöøōŏő",
    "p": "ṕṗþ", "q": "ʠჹ", "r": "ŕŗřɍ", "s": "śŝşšș$", "t": "ţťŧț", "u": "ùúûüũūŭůűų", "v": "ṽṿ", "w": "ŵẁẃẅ",
    "x": "ẋẍ", "y": "ýÿŷƴ", "z": "źżžƶ",
}
UPSIDE_DOWN: dict[str, str] = dict(zip(
    "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789.,!?'\"()[]{}<>&_;",
    "ɐqɔpǝɟɓɥᴉɾʞlɯuodbɹsʇnʌʍxʎz∀ꓭƆꓷƎℲ⅁HIſꓘ⅂WNOԀΌꓤSꓕՈΛMX⅄Z0⇂ᄅƐㄣގ9ㄥ86˙'¡¿,„)(][}{><⅋‾؛"))


def _words(text: str) -> list[re.Match[str]]:
    return list(re.finditer(r"\S+", text))


def _count(p: float, size: int) -> int:
    """nlpaug's count: int(p * size), at least one."""
    return max(1, int(p * size))


def _pick(words: list[re.Match[str]], rng: random.Random, p: float, min_len: int = 1) -> list[re.Match[str]]:
    """AugLy's word choice: int(p * len(words)) (at least one) of the eligible words, drawn without replacement."""
    eligible = [w for w in words if len(w.group()) >= min_len]
    if not eligible:
        return []
    k = min(len(eligible), _count(p, len(words)))
    return sorted(rng.sample(eligible, k), key=lambda m: m.start())


def _replace_words(text: str, chosen: list[re.Match[str]], fn: Callable[[str], str]) -> str:
    out, last = [], 0
    for m in chosen:
        out += [text[last:m.start()], fn(m.group())]
        last = m.end()
    return "".join(out + [text[last:]])


_TOKEN = re.compile(r"\w+'\w+|[+\-]?\d+[,/.:^]\d+|\w+|\S")
_JOINS = ((re.compile(r"\s([\[({<])\s"), r" \1"), (re.compile(r"\s([\])}>])\s"), r"\1 "),
          (re.compile(r"\s(-)\s"), r"\1"), (re.compile(r"(\s)?(#)\s"), r"\2"), (re.compile(r"\s([,;:%])\s"), r"\1 "),
          (re.compile(r"(\$)\s(\d)"), r"\1\2"), (re.compile(r"(\$)\s"), r"\1"), (re.compile(r"(\s)?([.?!])"), r"\2"),
          (re.compile(r"(')\s(.*?)\s(')"), r"\1\2\3"), (re.compile(r'(")\s(.*?)\s(")'), r"\1\2\3"),
          (re.compile(r"\s(')\s"), r"\1 "))


def tokens_joined(text: str) -> str:
    """AugLy's tokens of ``text`` (words, contractions, numbers, single marks), one space apart: what its
    word-level transforms work on."""
    return " ".join(_TOKEN.findall(text))


def joined(text: str) -> str:
    """AugLy's re-joining of (transformed) tokens: no space before . ? ! , ; :, none around a hyphen, quotes
    closed up. Why: which texts come back changed, and so which copies are kept, depends on it."""
    text = " " + text + " "
    for pattern, repl in _JOINS:
        text = pattern.sub(repl, text)
    return text.strip()


def retokenized(text: str) -> str:
    """A text through AugLy's tokenizer and re-joining, untransformed."""
    return joined(tokens_joined(text))


def _wrapped(name: str, fn: Callable[[str, random.Random], str], tokenized: bool = False) -> Op:
    """An op with Dynabench's pre- and post-processing (a word-level one also through :func:`retokenized`, as
    AugLy's are); unchanged text is reported as no change."""
    def op(text: str, rng: random.Random) -> tuple[str, str]:
        pre = preprocess(text)
        new = postprocess(joined(fn(tokens_joined(pre), rng)) if tokenized else fn(pre, rng))
        return (new, name) if new != text else (text, "")
    op.__name__ = name
    return op


def _case(text: str, rng: random.Random) -> str:
    words = _words(text)
    return _replace_words(text, [w for i, w in enumerate(words) if i % 3 == 2], str.upper)


def _fun_fonts(text: str, rng: random.Random) -> str:
    """With probability 0.3 a try, the whole text in a font drawn per try. nlpaug tries again (three tries) only
    while its output equals its input, which happens only when re-joining the tokens changes nothing."""
    tries = FONT_TRIES if joined(text) == text else 1  # the re-joined tokens equal the input: nlpaug retries
    for _ in range(tries):
        font = rng.choice(FONTS)
        if rng.random() < FONT_P:
            return font(text)
    return text


def _similar_unicode(text: str, rng: random.Random) -> str:
    def word(w: str) -> str:
        where = [i for i, ch in enumerate(w) if ch.lower() in SIMILAR_UNICODE]
        if not where:
            return w
        k = _count(CHAR_P, len(w))
        hit = set(rng.sample(where, min(k, len(where))))
        return "".join(rng.choice(SIMILAR_UNICODE[ch.lower()]) if i in hit else ch for i, ch in enumerate(w))
    return _replace_words(text, _pick(_words(text), rng, WORD_P, min_len=2), word)


def _upside_down(text: str, rng: random.Random) -> str:
    return _replace_words(text, _pick(_words(text), rng, WORD_P),
                          lambda w: "".join(UPSIDE_DOWN.get(ch, ch) for ch in reversed(w)))


_KEY_ROWS = ("1234567890-=", "qwertyuiop[]", "asdfghjkl;'", "zxcvbnm,./")
_SHIFTED = dict(zip("1234567890-=[];',./", "!@#$%^&*()_+{}:\"<>?"))


def _keyboard() -> dict[str, str]:
    """Each key's QWERTY neighbours: left and right, and the keys above and below (digits and symbols too)."""
    pos = {ch: (r, c) for r, row in enumerate(_KEY_ROWS) for c, ch in enumerate(row)}
    out = {}
    for ch, (r, c) in pos.items():
        around = ((r, c - 1), (r, c + 1), (r - 1, c), (r - 1, c + 1), (r + 1, c - 1), (r + 1, c))
        near = [_KEY_ROWS[rr][cc] for rr, cc in around if 0 <= rr < len(_KEY_ROWS) and 0 <= cc < len(_KEY_ROWS[rr])]
        out[ch] = "".join(near) + "".join(_SHIFTED.get(n, "") for n in near if not n.isalpha())
    return out


KEYBOARD = _keyboard()
# nlpaug's random-character pool: letters of both cases, digits and its special characters
_CHARSET = "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789!@#$%^&*()_+"


def _char_edit(word: str, rng: random.Random) -> str:
    """One of nlpaug's character actions on one character: delete, insert, substitute, swap with a neighbour."""
    i = rng.randrange(len(word))
    action = rng.choice(("delete", "insert", "substitute", "swap"))
    if action == "delete":
        return word[:i] + word[i + 1:]
    if action == "insert":
        return word[:i] + rng.choice(_CHARSET) + word[i:]
    if action == "substitute":
        return word[:i] + rng.choice(_CHARSET) + word[i + 1:]
    j = i + 1 if i + 1 < len(word) else i - 1
    chars = list(word)
    chars[i], chars[j] = chars[j], chars[i]
    return "".join(chars)


def _keyboard_edit(word: str, rng: random.Random) -> str:
    where = [i for i, ch in enumerate(word) if ch.lower() in KEYBOARD]
    if not where:
        return word
    i = rng.choice(where)
    new = rng.choice(KEYBOARD[word[i].lower()])
    return word[:i] + (new.upper() if word[i].isupper() else new) + word[i + 1:]


def _typo_family(edit: Callable[[str, random.Random], str]) -> Callable[[str, random.Random], str]:
    """SimulateTypos: int(30 %) of all the tokens, drawn among those that are not punctuation marks (nlpaug skips
    those); each of two characters or more gets one edit."""
    def op(text: str, rng: random.Random) -> str:
        words = _words(text)
        eligible = [w for w in words if any(ch.isalnum() for ch in w.group())]
        chosen = sorted(rng.sample(eligible, min(len(eligible), _count(WORD_P, len(words)))), key=lambda m: m.start())
        return _replace_words(text, chosen, lambda w: match_case(w, edit(w, rng)) if len(w) >= 2 else w)
    return op


def _split(text: str, rng: random.Random) -> str:
    """SplitWords: int(30 %) of the tokens, those of four characters or more, split at a random position."""
    return _replace_words(text, _pick(_words(text), rng, WORD_P, min_len=4),
                          lambda w: w[:(k := rng.randrange(1, len(w)))] + " " + w[k:])


_EXPANDED = re.compile(r"\b(" + "|".join(sorted(map(re.escape, CONTRACTIONS), key=len, reverse=True)) + r")\b",
                       re.IGNORECASE)


def _contract(text: str, rng: random.Random) -> str:
    """Contractions(aug_p=1.0): every expanded form contracted, case kept."""
    return _EXPANDED.sub(lambda m: match_case(m.group(), CONTRACTIONS[m.group().lower()]), text)


def _reuse(op: Op) -> Callable[[str, random.Random], str]:
    return lambda text, rng: op(text, rng)[0]


AUGLY_OPS: dict[str, Op] = {
    "augly_case": _wrapped("augly_case", _case),
    "augly_contractions": _wrapped("augly_contractions", _contract, tokenized=True),
    "augly_punctuation": _wrapped("augly_punctuation", lambda t, r: insert_chars(t, PUNCTUATION_CHARS, r)),
    "augly_whitespace": _wrapped("augly_whitespace", lambda t, r: insert_chars(t, WHITESPACE_CHARS, r)),
    "augly_zero_width": _wrapped("augly_zero_width", lambda t, r: insert_chars(t, ZERO_WIDTH_CHARS, r)),
    "augly_fun_fonts": _wrapped("augly_fun_fonts", _fun_fonts, tokenized=True),
    "augly_similar_unicode": _wrapped("augly_similar_unicode", _similar_unicode, tokenized=True),
    "augly_upside_down": _wrapped("augly_upside_down", _upside_down, tokenized=True),
    "augly_char_typos": _wrapped("augly_char_typos", _typo_family(_char_edit), tokenized=True),
    "augly_keyboard_typos": _wrapped("augly_keyboard_typos", _typo_family(_keyboard_edit), tokenized=True),
    "augly_misspellings": _wrapped("augly_misspellings", _reuse(misspellings), tokenized=True),
    "augly_split_words": _wrapped("augly_split_words", _split, tokenized=True),
}
"""The ``dynaboard-augly`` suite set, in Dynabench's order."""


def perturb_text(text: str, seed: int, key: str) -> list[tuple[str, str]]:
    """Every changed copy of ``text`` under the suite set: ``[(suite, perturbed text)]``, each op seeded
    with ``seed`` and ``key`` (an example id) so the set is reproducible."""
    out = []
    for suite, op in AUGLY_OPS.items():
        new, change = op(text, random.Random(f"{SUITE_SET}:{seed}:{key}:{suite}"))
        if change:
            out.append((suite, new))
    return out
