"""Named entities the fairness suites must leave alone: people named by surname alone, businesses named after a
person, titles of works joined by a slash, and first names coordinated with a full name.

Why: a gender swap that changes "Nicholson gives his best performance" into "... her best performance" makes a
real man a woman; an ethnic-name swap that renames "Jerry's deli" or "Julia/Julia" renames a business or a film,
and one that renames "Emily" in "Emily and William Harris" splits a couple. Each such text says less about the
model's fairness than about the suite's mistakes, so the suites leave it (or the name) alone:

- :func:`mentions_person_by_surname`: a capitalised word that is no listed first name, title or common word,
  in a person's place in the sentence (before a verb: "Nicholson gives", "Scorsese lost"; a possessive:
  "Spielberg's"; after "by", "with", "starring" ...). The gender suite leaves such a text unchanged, as it does
  one naming someone in full: its pronouns may refer to that person.
- :func:`business_possessive`: "Jerry's deli", "at Wendy's": a possessive name before a business noun, or after
  "at"/"from" closing a phrase.
- :func:`slash_title`: "Julia/Julia": a name joined by "/" to a capitalised word.
- :func:`coordinated_with_full_name`: "Emily and William Harris": a first name joined by "and"/"&" to a first
  name followed by a surname.
"""

from __future__ import annotations

import re
from collections.abc import Container

from dynadesk.scoring.wordlists import LEADING_WORDS, NAME_FOLLOWERS, PERSON_TITLES

BUSINESS_NOUNS = frozenset("""
deli delis diner diners restaurant restaurants cafe cafes café bar bars pub pubs grill kitchen bakery bakeries
pizza pizzeria burger burgers tavern inn bistro cantina steakhouse shop shops store stores market supermarket
salon garage motors bbq barbecue chicken donuts doughnuts bagels subs tacos cafeteria coffee brewery boutique
""".split())
SITE_WORDS = frozenset({"at", "from", "to", "into", "inside", "outside", "near", "of"})
# Capitalised words that are never a person in a sentence: calendar words, the pronoun I, greetings and the like.
NOT_PEOPLE = frozenset("""
i monday tuesday wednesday thursday friday saturday sunday january february march april may june july august
september october november december christmas easter god lord jesus english american british french german
internet tv dvd ok okay lol omg wow yes no oh hey hi please thanks thank dear
""".split())
# Words after a person's name that make it the subject of a verb ("Nicholson gives", "Spielberg has").
_VERB_AFTER = frozenset("""
is was has had does did can could will would should may might must says said plays played gives gave makes made
seems seemed looks looked stars starred directs directed delivers delivered shows showed gets got takes took tries
tried proves proved manages managed deserves deserved needs needed wants wanted knows knew never always just also
really still lost won left took went came wrote found kept brought became put ran sat stood fell began chose drove
spoke sang stole gets
""".split())
_PERSON_BEFORE = frozenset({"by", "with", "starring", "featuring", "than", "ask", "asked", "told", "tell", "thank"})
_WORD = re.compile(r"[A-Za-z]+(?:'s)?")


def _capitalised(word: str) -> bool:
    return word[:1].isupper() and (len(word) == 1 or not word[1:].isupper())


def sentence_start(text: str, start: int) -> bool:
    """Whether ``start`` opens the text or a sentence (after . ! ? : ; a line break or an ellipsis)."""
    head = text[:start].rstrip(" \t\"'(“‘")
    return not head or head[-1] in ".!?:;\n" or head.endswith(("...", "\u2026"))


def _next_word(text: str, end: int) -> str:
    m = re.match(r"[ \t]+([A-Za-z]+)", text[end:])
    return m.group(1) if m else ""


def _verb_position_word(text: str, end: int) -> str:
    """The next word, past a closing bracket, quote or ellipsis and one -ly adverb ("(Ferrera) has", "Zhang ...
    has", "Miller eloquently captures")."""
    m = re.match(r"[)\]\"'\u201d\u2019]*(?:[ \t]*(?:\.\.\.|\u2026))?[ \t]+([A-Za-z]+)(?:[ \t]+([a-z]+))?", text[end:])
    if not m:
        return ""
    return m.group(2) if m.group(1).endswith("ly") and m.group(1).islower() and m.group(2) else m.group(1)


def _prev_word(text: str, start: int) -> str:
    m = re.search(r"([A-Za-z]+)[ \t]+$", text[:start])
    return m.group(1) if m else ""


def _prev_start(text: str, start: int) -> int:
    m = re.search(r"([A-Za-z]+)[ \t]+$", text[:start])
    return m.start(1) if m else start


def _verbish(word: str) -> bool:
    """A verb after a subject: a listed one, or a lower-case -s/-ed form ("reveals", "directed")."""
    low = word.lower()
    return low in _VERB_AFTER or (word.islower() and len(low) > 3 and low.endswith(("s", "ed"))
                                  and not low.endswith(("ss", "us", "is")) and low not in NAME_FOLLOWERS)


def mentions_person_by_surname(text: str, first_names: Container[str]) -> bool:
    """Whether ``text`` names someone by a capitalised word that is no listed first name (see the module
    docstring): "Nicholson gives his best", "I think Scorsese lost his touch", "a film by Kubrick"."""
    for m in _WORD.finditer(text):
        token = m.group()
        bare = token.removesuffix("'s")
        low = bare.lower()
        if not _capitalised(bare) or len(bare) < 2 or bare in first_names or low in NOT_PEOPLE \
                or low in PERSON_TITLES or low in NAME_FOLLOWERS or low in LEADING_WORDS:
            continue
        if text[m.end():m.end() + 1] in ("-", "/", "&"):
            continue
        nxt, prev = _next_word(text, m.end()), _prev_word(text, m.start())
        if prev and _capitalised(prev) and not sentence_start(text, _prev_start(text, m.start())):
            continue  # the second word of a capitalised sequence: a title or a full name, judged elsewhere
        if nxt and _capitalised(nxt):
            continue  # "New York", "Star Wars": a name of a place or a work, or a full name judged elsewhere
        possessive = token.endswith("'s")
        if possessive and nxt.lower() in BUSINESS_NOUNS:
            continue  # "McDonald's restaurant": a business
        verb = _verb_position_word(text, m.end())
        if possessive or (verb and not possessive and _verbish(verb)):
            return True
        if not sentence_start(text, m.start()) and prev.lower() in _PERSON_BEFORE:
            return True
    return False


def business_possessive(text: str, start: int, end: int) -> bool:
    """A possessive name that names a business: before a business noun ("Jerry's deli"), or closing a phrase
    after "at", "from" ... ("we ate at Wendy's.")."""
    if not text[start:end].endswith("'s"):
        return False
    nxt = _next_word(text, end).lower()
    if nxt in BUSINESS_NOUNS:
        return True
    rest = text[end:].lstrip(" \t")
    closes = not rest or rest[0] in ".,;:!?)\"'" or rest.lower().startswith(("and ", "or ", "for ", "last "))
    return closes and _prev_word(text, start).lower() in SITE_WORDS


def slash_title(text: str, start: int, end: int) -> bool:
    """ "Julia/Julia", "Romeo/Juliet": a name joined by "/" to a capitalised word (a title, not a person)."""
    after = re.match(r"[ \t]*/[ \t]*([A-Za-z]+)", text[end:])
    before = re.search(r"([A-Za-z]+)[ \t]*/[ \t]*$", text[:start])
    return bool(after and _capitalised(after.group(1))) or bool(before and _capitalised(before.group(1)))


def coordinated_with_full_name(text: str, end: int, first_names: Container[str]) -> bool:
    """ "Emily and William Harris": after the name, "and"/"&" and a first name followed by a surname."""
    m = re.match(r"[ \t]+(?:and|&|&amp;)[ \t]+([A-Z][a-z]+)[ \t]+([A-Za-z]+)", text[end:])
    if m is None:
        return False
    return m.group(1) in first_names and _capitalised(m.group(2)) and m.group(2).lower() not in LEADING_WORDS
