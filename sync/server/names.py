"""Model names that cannot impersonate another row (issue 32, item 3).

A row's label is its model name, so a name must not look like another row's: the server
refuses (422 ``invalid_model_name``, naming the character and where it is) a name that

- is not in Unicode NFC (an NFD "é" looks like the NFC one but is a different row), or not in NFKC (full-width
  "ＢＥＲＴ" reads as "BERT");
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

import functools
import re
import unicodedata

from confusable_homoglyphs import categories, confusables

from dynadesk.errors import ModelNameError
from dynadesk.lookalike import look

__all__ = ["check_model_name", "look"]

_REFUSED_CATEGORIES = {"Cc": "control", "Cf": "invisible format", "Co": "private-use", "Cn": "unassigned",
                       "Zl": "line separator", "Zp": "paragraph separator"}
_QUALIFIER = re.compile(r"\(\s*[^()]*,\s*[0-9a-fA-F]{6,}\s*\)")
WHERE = "payload.model.name"


def _char(c: str) -> str:
    return f"U+{ord(c):04X} {unicodedata.name(c, 'unnamed')}"


@functools.lru_cache(maxsize=4096)  # a board's uploads repeat their names; a refusal is never kept (it raises)
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
    if unicodedata.normalize("NFKC", name) != name:  # full-width "ＢＥＲＴ" reads as "BERT" (issue 45)
        raise ModelNameError(f"{WHERE} {name!r} holds full-width or compatibility characters (write it as "
                             f"{unicodedata.normalize('NFKC', name)!r})")
    if _QUALIFIER.search(name):
        raise ModelNameError(f"{WHERE} {name!r} contains a submitter qualifier like '(Lab, 6f4de524)'; "
                             "the board adds those itself")
    return name
