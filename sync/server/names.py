"""Model names that cannot impersonate another row (issue 32, item 3).

A row's label is its model name, so a name must not look like another row's: the server
refuses (422 ``invalid_model_name``, naming the character and where it is) a name that

- is not in Unicode NFC (an NFD "é" looks like the NFC one but is a different row);
- holds a control, format (zero-width, bidi), private-use, unassigned, line/paragraph separator
  or non-ASCII space character, NUL included (SQLite would store it, PostgreSQL cannot), or starts
  or ends with a space;
- mixes scripts (UTS #39, via ``confusable-homoglyphs``: Cyrillic "о" in a Latin name), or holds
  a character confusable with an ASCII one in a name that is otherwise ASCII (a non-breaking hyphen);
- carries a submitter qualifier like ``"(Lab B, 6f4de524)"``, the form the board uses to tell
  shared names apart.

The check runs after the signature and before anything is stored, on every backend alike.

Names that pass can still look alike: case only ("BERT", "bert"), a whole name in another script
("роѕе" in Cyrillic, "pose" in Latin), "rn" for "m". Refusing those would let whoever uploads first
squat on every spelling of a name, so they are accepted and :func:`look` gives the key under which
the board groups them: any two rows whose names share it are both shown with their submitter.
"""

from __future__ import annotations

import re
import unicodedata
from functools import lru_cache

from confusable_homoglyphs import categories, confusables

from dynadesk.errors import ModelNameError

_REFUSED_CATEGORIES = {"Cc": "control", "Cf": "invisible format", "Co": "private-use", "Cn": "unassigned",
                       "Zl": "line separator", "Zp": "paragraph separator"}
_QUALIFIER = re.compile(r"\(\s*[^()]*,\s*[0-9a-fA-F]{6,}\s*\)")
WHERE = "payload.model.name"


def _char(c: str) -> str:
    return f"U+{ord(c):04X} {unicodedata.name(c, 'unnamed')}"


def check_model_name(name: str) -> str:
    """``name`` unchanged when it cannot impersonate another row, else a ModelNameError naming the character."""
    if unicodedata.normalize("NFC", name) != name:
        raise ModelNameError(f"{WHERE} {name!r} is not in Unicode NFC form (write it as "
                             f"{unicodedata.normalize('NFC', name)!r})")
    for i, c in enumerate(name):
        kind = _REFUSED_CATEGORIES.get(unicodedata.category(c))
        if kind is None and unicodedata.category(c) == "Zs" and c != " ":
            kind = "non-ASCII space"
        if kind is not None:
            raise ModelNameError(f"{WHERE} holds the {kind} character {_char(c)} at position {i}")
    if name != name.strip(" "):
        raise ModelNameError(f"{WHERE} {name!r} starts or ends with a space")
    if confusables.is_mixed_script(name):
        raise ModelNameError(f"{WHERE} {name!r} mixes scripts (a look-alike of another name); use one script")
    if any(ord(c) < 128 for c in name):
        for i, c in enumerate(name):
            if ord(c) >= 128 and (categories.aliases_categories(c)[0] == "COMMON"
                                  or confusables.is_confusable(c, preferred_aliases=["latin"])):
                raise ModelNameError(f"{WHERE} holds {_char(c)} at position {i}, confusable with an ASCII "
                                     "character in a name that is otherwise ASCII")
    if _QUALIFIER.search(name):
        raise ModelNameError(f"{WHERE} {name!r} contains a submitter qualifier like '(Lab, 6f4de524)'; "
                             "the board adds those itself")
    return name


@lru_cache(maxsize=1)
def _prototypes() -> dict[str, str]:
    """Character -> the prototype it reads as (UTS #39's confusables, from ``confusable-homoglyphs``' table).

    That table lists each pair both ways: a source character lists only its prototype, a prototype lists
    all its sources. So a character with one entry maps to it (a pair of single-entry characters maps to
    the lower code point of the two); one with several is a prototype itself."""
    data = {k.replace("\u200e", ""): [g["c"].replace("\u200e", "") for g in v]
            for k, v in confusables.confusables_data.items()}
    out: dict[str, str] = {}
    for char, glyphs in data.items():
        if len(glyphs) != 1 or not char:
            continue
        target = glyphs[0]
        if len(target) == 1 and len(data.get(target, ())) == 1:
            target = min(char, target)
        out[char] = target
    return out


def _skeleton(text: str) -> str:
    table = _prototypes()
    return unicodedata.normalize("NFD", "".join(table.get(c, c) for c in unicodedata.normalize("NFD", text)))


@lru_cache(maxsize=65536)
def look(name: str) -> str:
    """What ``name`` looks like: its case-folded confusable skeleton (UTS #39's skeleton, then case folding, then
    the skeleton again). Two names with the same look are look-alikes ("BERT", "bert"; "роѕе", "pose"; "rnodel",
    "model")."""
    return _skeleton(_skeleton(name).casefold())
