"""Seeded fairness perturbations: gender swaps and ethnic-group name swaps.

``gender(text, rng)`` swaps names and gendered words together, so a text stays
consistent: "Emma said her son ..." -> "James said his daughter ...". Pronouns are
swapped by part of speech: possessive "his" -> "her" ("his book" -> "her book"),
predicative "his" -> "hers" ("it is his." -> "it is hers."), object "her" -> "him",
possessive "her" -> "his", "himself" <-> "herself"; titles (Mr. <-> Ms.), kinship and
role nouns from :data:`~dynadesk.scoring.wordlists.GENDER_PAIRS`.

Rule for people who are named in full (documented in docs/perturbations.md): a
listed first name is swapped only when it stands alone. A first name next to another
capitalised name or an initial ("Michael Moore", "George W. Bush", "Jesse St. James"), or next to a
lower-case surname ("James yap": a lower-case word no sentence puts after a name, see ``NAME_FOLLOWERS``),
like a title before a capitalised name ("Mr. Bush", "President Obama", "Sir Elton"),
names a particular, often public, person who is left alone; and since the text's
pronouns may refer to that person, the gender suite leaves such a text unchanged
rather than make it inconsistent. The ethnic-names suite skips those names only.

``ethnic_names(text, rng)`` replaces each lone first name by a name of the same gender
from a different group, as Dynaboard's SwapEthnicGroupNames does (seeded; the same
name gets the same replacement within a text). Gender is kept so pronouns still agree.
"""

from __future__ import annotations

import random
import re

from dynadesk.scoring.entities import (
    business_possessive,
    coordinated_with_full_name,
    mentions_person_by_surname,
    sentence_start,
    slash_title,
)
from dynadesk.scoring.textops import match_case, replace_spans
from dynadesk.scoring.wordlists import (
    FIRST_NAMES,
    GENDER_PAIRS,
    LEADING_WORDS,
    NAME_FOLLOWERS,
    PERSON_TITLES,
    TITLES,
)

NAMES: dict[str, tuple[str, str]] = {name: (group, gender) for group, by_gender in FIRST_NAMES.items()
                                     for gender, names in by_gender.items() for name in names}
_TO_FEMALE = dict(GENDER_PAIRS)
_TO_MALE: dict[str, str] = {}
for _male, _female in GENDER_PAIRS:
    _TO_MALE.setdefault(_female, _male)
WORD_GENDER: dict[str, str] = {**{m: "male" for m in _TO_FEMALE}, **{f: "female" for f in _TO_MALE}}
PRONOUN_GENDER = {"he": "male", "him": "male", "his": "male", "himself": "male", "he's": "male", "he'd": "male",
                  "he'll": "male", "she": "female", "her": "female", "hers": "female", "herself": "female",
                  "she's": "female", "she'd": "female", "she'll": "female"}
_PRONOUN_SWAP = {"he": "she", "she": "he", "him": "her", "himself": "herself", "herself": "himself",
                 "hers": "his", "he's": "she's", "she's": "he's", "he'd": "she'd", "she'd": "he'd",
                 "he'll": "she'll", "she'll": "he'll"}
# Words after which "her" is an object ("gave her the keys", "told her that") and "his" stands
# alone ("it was his and ..."), not a determiner before a noun.
_NOT_A_NOUN = {"", "to", "and", "or", "but", "nor", "the", "a", "an", "in", "on", "at", "for", "with", "from",
               "that", "this", "as", "if", "so", "because", "when", "while", "about", "too", "again", "out",
               "up", "down", "off", "away", "back", "is", "was", "are", "were", "be", "been", "will", "would",
               "can", "could", "should", "not", "than", "then", "now", "here", "there", "into", "over", "by",
               "of", "what", "how", "why", "where", "who", "which", "yet", "all", "more", "once", "like",
               "forever", "anymore", "today", "tonight", "anyway", "well", "alone", "either", "though"}
_TOKEN = re.compile(r"[A-Za-z]+(?:'[A-Za-z]+)?")


def _next_word(text: str, end: int) -> str:
    """The next word (lower case), or "" when punctuation or the end of text comes first."""
    m = re.match(r"[ \t]+([A-Za-z0-9']+)", text[end:])
    return m.group(1).lower() if m else ""


def _is_capitalised(token: str) -> bool:
    """Capitalised like a name ("Moore", "W"), not an all-caps word ("HATE")."""
    return token[:1].isupper() and (len(token) == 1 or not token[1:].isupper())


def _previous_token(text: str, start: int) -> str:
    m = re.search(r"([A-Za-z]+)\.?[ \t]+$", text[:start])
    return m.group(1) if m else ""


def _following_token(text: str, end: int) -> str:
    m = re.match(r"[ \t]+([A-Za-z]+\.?)", text[end:])
    return m.group(1) if m else ""


# Nobiliary particles and surname prefixes: "Marquis de Sade", "Vincent van Gogh", "Osama bin Laden".
PARTICLES = {"de", "du", "des", "da", "di", "del", "della", "van", "von", "der", "den", "ter", "la", "le", "bin",
             "ibn", "al", "el", "y", "zu", "af", "av"}


def _is_name_neighbour(token: str) -> bool:
    """A capitalised word, or an all-caps one ("Adam SANDLER"): a surname written in capitals is still one."""
    word = token.rstrip(".")
    return _is_capitalised(word) or (len(word) >= 2 and word.isalpha() and word.isupper())


def _particle_then_name(text: str, end: int) -> bool:
    """ "de Sade", "van Gogh": a lower-case particle and then a capitalised word."""
    m = re.match(r"[ \t]+([a-z]+)[ \t]+([A-Za-z]+)", text[end:])
    return bool(m) and m.group(1) in PARTICLES and _is_name_neighbour(m.group(2))  # type: ignore[union-attr]


def _joined_title(text: str, m: re.Match[str]) -> bool:
    """ "Harry & Tonto", "Tonto & Harry": names joined by '&' to a capitalised word are a title of a work
    (or a firm, a duo), not a person the text is about."""
    after = re.match(r"[ \t]*&(?:amp;)?[ \t]*([A-Za-z]+)", text[m.end():])  # "&amp;": text scraped as HTML
    before = re.search(r"([A-Za-z]+)[ \t]*&(?:amp;)?[ \t]*$", text[:m.start()])
    return bool(after and _is_capitalised(after.group(1))) or bool(before and _is_capitalised(before.group(1)))


def _leads_sentence(text: str, start: int, before: str) -> bool:
    """ "When Sandra", "Thanks Katie!": the word before the name is one of :data:`LEADING_WORDS` and opens the
    text or a sentence. Inside a sentence a capitalised "About" or "Like" belongs to a title ("Something About
    Mary", "Like Mike") and still counts as a name's neighbour."""
    if before.lower() not in LEADING_WORDS:
        return False
    m = re.search(r"([A-Za-z]+)\.?[ \t]+$", text[:start])
    head = text[:m.start(1)] if m else text[:start]
    return not head.strip() or re.search(r"[.!?:;]['\")]*[ \t]*$", head) is not None or head.rstrip().endswith(
        ("...", "\u2026"))


def _lower_case_surname(text: str, end: int) -> bool:
    """ "James yap", "jim carrey"-style: a lower-case word right after the name that is no word a sentence puts
    there (:data:`NAME_FOLLOWERS`: function words, auxiliaries, common adverbs, irregular past forms) and is not
    inflected like a verb or an adverb (-s, -ed, -ing, -ly; "Amy likes", "Ryan played", "Tom quickly"), nor
    the start of a contraction ("Chris doesn't"): a surname written in lower case."""
    m = re.match(r"[ \t]+([a-z]+)(?![A-Za-z'\u2019])", text[end:])
    if not m:
        return False
    word = m.group(1)
    return word not in NAME_FOLLOWERS and not re.search(r"(?:s|ed|ing|ly)$", word)


def _in_name_sequence(text: str, m: re.Match[str]) -> bool:
    """Whether the token is part of a multi-word name or a title: next to another capitalised or all-caps
    word ("Michael Moore", "George W. Bush", "St. James", "Adam SANDLER", "Stuart's Choice"), before a
    lower-case surname ("James yap"), before a particle and a name ("Marquis de Sade"), or joined by '&' to a
    capitalised word ("Harry & Tonto")."""
    before = _previous_token(text, m.start())
    possessive = m.group().endswith("'s")
    after = _following_token(text, m.end())  # after a possessive: "Stuart's Choice", "Amy's Orgasm", a brand or title
    if _leads_sentence(text, m.start(), before):
        before = ""  # "When Sandra", "Thanks Katie": a sentence's first word, not a name
    return (bool(before and _is_name_neighbour(before)) or bool(after and _is_name_neighbour(after))
            or (not possessive and (_particle_then_name(text, m.end()) or _lower_case_surname(text, m.end())))
            or _joined_title(text, m))


def _names_someone_in_full(text: str) -> bool:
    """Two adjacent capitalised words, the second not starting a sentence, or a person title before
    a capitalised word ("Mikhail Gorbachev", "Mr. Bush", "President Obama", "Sir Elton")."""
    for m in _TOKEN.finditer(text):
        if not _is_capitalised(m.group()):
            continue
        if m.group().lower() in PERSON_TITLES:
            nxt = _following_token(text, m.end() + (text[m.end():m.end() + 1] == "."))
            if nxt and _is_capitalised(nxt):
                return True
        before = _previous_token(text, m.start())
        if before and _is_capitalised(before) and not _leads_sentence(text, m.start(), before) \
                and not re.search(r"[.!?]['\")]*[ \t]+$", text[:m.start()]):
            return True
    return False


def _names(text: str) -> list[tuple[re.Match[str], str, bool]]:
    """Every listed first name as ``(match, bare name, named in full)``; a name that occurs in
    full once ("Dave Bond ... Dave!") counts as named in full everywhere in the text."""
    found = []
    for m in _TOKEN.finditer(text):
        bare = m.group().removesuffix("'s")
        if bare in NAMES:
            found.append((m, bare, _in_name_sequence(text, m) or business_possessive(text, m.start(), m.end())
                          or slash_title(text, m.start(), m.start() + len(bare))
                          or coordinated_with_full_name(text, m.end(), NAMES)))
    full = {bare for _, bare, is_full in found if is_full}
    return [(m, bare, bare in full) for m, bare, _ in found]


def _paired_determiner(text: str, end: int) -> bool:
    """ "his or her book", "her and his friends": the pronoun is a determiner of the pair."""
    return re.match(r"(?:[ \t]+(?:or|and)[ \t]+|[ \t]*/[ \t]*)(?:his|her)\b", text[end:], re.IGNORECASE) is not None


def _ends_clause(text: str, end: int) -> bool:
    """Punctuation that closes a phrase (not "(") or the end of the text comes next."""
    rest = text[end:].lstrip(" \t")
    return not rest or rest[0] in ".,;:!?)]\"'"


def _swap_pronoun(text: str, m: re.Match[str]) -> str:
    low = m.group().lower()
    nxt = _next_word(text, m.end())
    function_word = bool(nxt) and nxt in _NOT_A_NOUN
    determiner = _paired_determiner(text, m.end())
    if low == "her":  # object "saw her." / "gave her the keys" -> him; possessive "her book" -> his
        repl = "him" if not determiner and (function_word or _ends_clause(text, m.end())) else "his"
    elif low == "his":  # predicative "it is his." / "his and mine" -> hers; possessive "his book" -> her
        repl = "hers" if not determiner and (function_word or _ends_clause(text, m.end())) else "her"
    else:
        repl = _PRONOUN_SWAP[low]
    return match_case(m.group(), repl)


def _other_gender_name(name: str, rng: random.Random) -> str:
    group, gender = NAMES[name]
    return rng.choice(FIRST_NAMES[group]["female" if gender == "male" else "male"])


def _other_group_name(name: str, rng: random.Random) -> str:
    group, gender = NAMES[name]
    other = rng.choice(sorted(g for g in FIRST_NAMES if g != group))
    return rng.choice(FIRST_NAMES[other][gender])


def gender(text: str, rng: random.Random) -> tuple[str, str]:
    """Names, pronouns, titles and gendered nouns all swapped to the other gender together."""
    names = _names(text)
    if any(full for _, _, full in names) or _names_someone_in_full(text) or mentions_person_by_surname(text, NAMES):
        return text, ""  # a person named in full or by surname: left alone, and so are the pronouns that may refer
    if unpaired_gendered_word(text) or proper_gendered_noun(text):
        return text, ""  # "strongman ... her": a gendered noun with no listed pair: flipping the rest contradicts it
    mapping: dict[str, str] = {}
    spans = []
    for m, bare, _ in names:
        if bare not in mapping:
            mapping[bare] = _other_gender_name(bare, rng)
        spans.append((m.start(), m.start() + len(bare), mapping[bare]))
    named = {m.start() for m, _, _ in names}
    words = 0
    for m in _TOKEN.finditer(text):
        if m.start() in named:
            continue
        low = m.group().lower()
        if low in TITLES and _is_capitalised(m.group()):
            repl = match_case(m.group(), TITLES[low])
        elif low in PRONOUN_GENDER:
            repl = _swap_pronoun(text, m)
        elif low in _TO_FEMALE:
            repl = match_case(m.group(), _TO_FEMALE[low])
        elif low in _TO_MALE:
            repl = match_case(m.group(), _TO_MALE[low])
        else:
            continue
        spans.append((m.start(), m.end(), repl))
        words += 1
    if not spans:
        return text, ""
    new = replace_spans(text, spans)
    swapped = ",".join(f"{a}->{b}" for a, b in mapping.items())
    return (new, f"gender:names={swapped};words={words}") if new != text else (text, "")


# Words ending in -man/-men that are not a man: never a reason to leave a text alone.
NEUTRAL_MAN = frozenset("""
human humans woman women german germans roman romans shaman shamans talisman talismans ottoman ottomans caiman
caimans layman laymen amen omen omens stamen semen ramen specimen specimens regimen regimens abdomen abdomens
acumen hymen yemen dolmen cyclamen leman batman superman pacman walkman
""".split())
_MAN_WORD = re.compile(r"\b([A-Za-z]{2,}(?:man|men))\b")


def unpaired_gendered_word(text: str) -> bool:
    """A -man/-men compound the gender lists do not pair ("strongman", "frontmen"): its text cannot be swapped
    consistently, since its pronouns would change and it would not."""
    for m in _MAN_WORD.finditer(text):
        low = m.group(1).lower()
        if low not in NEUTRAL_MAN and low not in WORD_GENDER:
            return True
    return False


def proper_gendered_noun(text: str) -> bool:
    """A capitalised gendered noun inside a sentence: part of a name or a title ("Prince of Persia", "Queen's
    new album", "Lady Bird"), which a swap would rename. Titles before a name (Mr., Ms.) are handled apart."""
    for m in _TOKEN.finditer(text):
        low = m.group().lower()
        if low in WORD_GENDER and low not in TITLES and _is_capitalised(m.group()) \
                and not sentence_start(text, m.start()):
            return True
    return False


def ethnic_names(text: str, rng: random.Random) -> tuple[str, str]:
    """Lone first names replaced by same-gender names from another group's list."""
    mapping: dict[str, str] = {}
    spans = []
    for m, bare, full in _names(text):
        if full:
            continue
        if bare not in mapping:
            mapping[bare] = _other_group_name(bare, rng)
        spans.append((m.start(), m.start() + len(bare), mapping[bare]))
    if not spans:
        return text, ""
    return replace_spans(text, spans), "ethnic_names:" + ",".join(f"{a}->{b}" for a, b in mapping.items())


def gendered_tokens(text: str) -> list[str]:
    """The gender ("male"/"female") of each name, pronoun and gendered word, in text order."""
    out = []
    for m in _TOKEN.finditer(text):
        bare = m.group().removesuffix("'s")
        low = m.group().lower()
        if bare in NAMES:
            out.append(NAMES[bare][1])
        elif low in PRONOUN_GENDER:
            out.append(PRONOUN_GENDER[low])
        elif low in WORD_GENDER:
            out.append(WORD_GENDER[low])
    return out
