"""What a name looks like: UTS #39 confusable skeletons, shared by every name that must not impersonate another.

The server's model names (``sync/server/names.py``) and task names (``dynadesk/taskfile_guard.py``) both ask
:func:`look`: two names with the same look read the same to a person ("BERT" and "bert"; Cyrillic "ѕentiment"
and Latin "sentiment"; "rnodel" and "model"), so a new name whose look equals a known one's is a look-alike.
"""

from __future__ import annotations

import unicodedata
from functools import lru_cache

from confusable_homoglyphs import confusables


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
    """What ``name`` looks like: its case-folded confusable skeleton (UTS #39's skeleton of the NFKC form, then case
    folding, then the skeleton again). Two names with the same look are look-alikes ("BERT", "bert", full-width
    "ＢＥＲＴ"; "роѕе", "pose"; "rnodel", "model")."""
    return _skeleton(_skeleton(unicodedata.normalize("NFKC", name)).casefold())
