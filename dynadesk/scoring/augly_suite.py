"""The reference robustness families, as Dynabench runs them through AugLy: the ``dynaboard-augly`` suite set.

Dynabench's ``evaluation/scripts/augly_perturbation.py`` perturbs each example with twelve
AugLy transforms, each wrapped in its text pre-processing (a space on each side of
``. , ! ? ' : -``) and post-processing (the spaces before those marks removed, the text
stripped); a perturbed copy is kept when its text differs from the original. AugLy is
not installable offline here, so this module reimplements the families with the settings
Dynabench passes (AugLy's defaults otherwise), written from AugLy's documented behaviour:

====================== ===========================================================
``augly_case``          ChangeCase(case="upper", cadence=3.0): every third word upper-cased
``augly_contractions``  Contractions(aug_p=1.0): DynaDesk's contractions op (an approximation:
                        AugLy applies its mapping without the grammar checks)
``augly_punctuation``   InsertPunctuationChars(granularity="all", cadence=10, vary_chars=True):
                        one of ``. ? ! , ; : - ' ...`` after every 10 characters, words included
``augly_whitespace``    InsertWhitespaceChars(... same): space, tab, newline, CR, VT, FF
``augly_zero_width``    InsertZeroWidthChars(... same): U+200B-D, U+2060-4
``augly_fun_fonts``     ReplaceFunFonts(vary_fonts=True; granularity "all"): the whole text in one
                        Unicode font (bold, italic, script, fraktur, double-struck, sans, monospace ...)
``augly_similar_unicode`` ReplaceSimilarUnicodeChars(aug_word_p=0.3, aug_char_p=0.3, min_char=2):
                        30 % of the words, 30 % of their letters, replaced by look-alike letters
``augly_upside_down``   ReplaceUpsideDown(granularity="word", aug_p=0.3): 30 % of the words flipped
``augly_char_typos`` / ``augly_keyboard_typos`` / ``augly_misspellings`` / ``augly_split_words``:
                        SimulateTypos / SplitWords; DynaDesk's char_typos, typos, misspellings and
                        split_words ops stand in (the same families, milder rates)
====================== ===========================================================

Every op is a :data:`~dynadesk.scoring.textops.Op` (``(text, rng) -> (text, change)``), seeded
by the caller as every DynaDesk suite is, so a suite's output is reproducible.
"""

from __future__ import annotations

import math
import random
import re
from collections.abc import Callable

from dynadesk.scoring.textops import Op, char_typos, contractions, misspellings, split_words, typos

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


def _fonts() -> list[Callable[[str], str]]:
    """Unicode letter styles: mathematical alphanumerics (contiguous A-Z, a-z blocks) and full width."""
    def block(upper: int, lower: int, digits: int | None = None) -> Callable[[str], str]:
        def style(text: str) -> str:
            out = []
            for ch in text:
                if "A" <= ch <= "Z":
                    out.append(chr(upper + ord(ch) - 65))
                elif "a" <= ch <= "z":
                    out.append(chr(lower + ord(ch) - 97))
                elif digits is not None and "0" <= ch <= "9":
                    out.append(chr(digits + ord(ch) - 48))
                else:
                    out.append(ch)
            return "".join(out)
        return style
    return [block(0x1D400, 0x1D41A, 0x1D7CE),   # bold
            block(0x1D468, 0x1D482),           # bold italic
            block(0x1D4D0, 0x1D4EA),           # bold script
            block(0x1D56C, 0x1D586),           # bold fraktur
            block(0x1D5A0, 0x1D5BA, 0x1D7E2),  # sans-serif
            block(0x1D5D4, 0x1D5EE, 0x1D7EC),  # sans-serif bold
            block(0x1D608, 0x1D622),           # sans-serif italic
            block(0x1D670, 0x1D68A, 0x1D7F6),  # monospace
            block(0xFF21, 0xFF41, 0xFF10)]     # full width


FONTS = _fonts()

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


def _pick(words: list[re.Match[str]], rng: random.Random, p: float, min_len: int = 1) -> list[re.Match[str]]:
    """AugLy's word choice: ceil(p * len(words)) of the eligible words, drawn without replacement."""
    eligible = [w for w in words if len(w.group()) >= min_len]
    if not eligible:
        return []
    k = min(len(eligible), max(1, math.ceil(p * len(words))))
    return sorted(rng.sample(eligible, k), key=lambda m: m.start())


def _replace_words(text: str, chosen: list[re.Match[str]], fn: Callable[[str], str]) -> str:
    out, last = [], 0
    for m in chosen:
        out += [text[last:m.start()], fn(m.group())]
        last = m.end()
    return "".join(out + [text[last:]])


def _wrapped(name: str, fn: Callable[[str, random.Random], str]) -> Op:
    """An op with Dynabench's pre- and post-processing; unchanged text is reported as no change."""
    def op(text: str, rng: random.Random) -> tuple[str, str]:
        new = postprocess(fn(preprocess(text), rng))
        return (new, name) if new != text else (text, "")
    op.__name__ = name
    return op


def _case(text: str, rng: random.Random) -> str:
    words = _words(text)
    return _replace_words(text, [w for i, w in enumerate(words) if i % 3 == 2], str.upper)


def _fun_fonts(text: str, rng: random.Random) -> str:
    return rng.choice(FONTS)(text)


def _similar_unicode(text: str, rng: random.Random) -> str:
    def word(w: str) -> str:
        where = [i for i, ch in enumerate(w) if ch.lower() in SIMILAR_UNICODE]
        if not where:
            return w
        k = max(1, math.ceil(CHAR_P * len(w)))
        hit = set(rng.sample(where, min(k, len(where))))
        return "".join(rng.choice(SIMILAR_UNICODE[ch.lower()]) if i in hit else ch for i, ch in enumerate(w))
    return _replace_words(text, _pick(_words(text), rng, WORD_P, min_len=2), word)


def _upside_down(text: str, rng: random.Random) -> str:
    return _replace_words(text, _pick(_words(text), rng, WORD_P),
                          lambda w: "".join(UPSIDE_DOWN.get(ch, ch) for ch in reversed(w)))


def _reuse(op: Op) -> Callable[[str, random.Random], str]:
    return lambda text, rng: op(text, rng)[0]


AUGLY_OPS: dict[str, Op] = {
    "augly_case": _wrapped("augly_case", _case),
    "augly_contractions": _wrapped("augly_contractions", _reuse(contractions)),
    "augly_punctuation": _wrapped("augly_punctuation", lambda t, r: insert_chars(t, PUNCTUATION_CHARS, r)),
    "augly_whitespace": _wrapped("augly_whitespace", lambda t, r: insert_chars(t, WHITESPACE_CHARS, r)),
    "augly_zero_width": _wrapped("augly_zero_width", lambda t, r: insert_chars(t, ZERO_WIDTH_CHARS, r)),
    "augly_fun_fonts": _wrapped("augly_fun_fonts", _fun_fonts),
    "augly_similar_unicode": _wrapped("augly_similar_unicode", _similar_unicode),
    "augly_upside_down": _wrapped("augly_upside_down", _upside_down),
    "augly_char_typos": _wrapped("augly_char_typos", _reuse(char_typos)),
    "augly_keyboard_typos": _wrapped("augly_keyboard_typos", _reuse(typos)),
    "augly_misspellings": _wrapped("augly_misspellings", _reuse(misspellings)),
    "augly_split_words": _wrapped("augly_split_words", _reuse(split_words)),
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
