"""Pack-qualified identities: whose name a vote merged from another machine's pack is stored under.

A pack is signed by a *workspace* key: it proves which machine sent a vote, not that the ``bob`` who cast
it there is the ``bob`` here. So a vote a pack carries from another machine's key is stored under
``bob@pack:<first 16 hex digits of the key's fingerprint>``, a name no local person can take
(:func:`check_local_name`): it never uses up a local person's vote, never shows as theirs in round
statistics or exports, and counts with an owner's weight only when this workspace bound that key to the
person (``dynadesk annotate trust KEY --person bob``; see ``AnnotationRepo.validations_for``). A name that
is already a pack identity (a pack re-exported by a machine that merged it) is kept as it is.
"""

from __future__ import annotations

import re

from dynadesk.errors import ValidationError

MARK = "@pack:"
TAG_HEX = 16
_QUALIFIED = re.compile(r"^(?P<base>.+)@pack:(?P<tag>[0-9a-f]{16})$")


def key_tag(fingerprint: str) -> str:
    """The part of a key's fingerprint a pack identity carries (``sha256:`` dropped, 16 hex digits)."""
    return fingerprint.removeprefix("sha256:")[:TAG_HEX]


def qualified(name: str, fingerprint: str) -> str:
    """``name`` as the pack signed by ``fingerprint`` carries it: ``name@pack:<tag>`` (kept when already one)."""
    if is_pack_identity(name):
        return name
    return f"{name}{MARK}{key_tag(fingerprint)}"


def is_pack_identity(name: str) -> bool:
    return _QUALIFIED.match(name) is not None


def base_name(name: str) -> str:
    """The name the pack's machine knew the person by (``bob`` for ``bob@pack:...``)."""
    m = _QUALIFIED.match(name)
    return m.group("base") if m else name


def check_local_name(name: str) -> None:
    """A local person's name never contains the pack mark: pack identities cannot be taken over here."""
    if MARK in name:
        raise ValidationError(f"annotator name {name[:60]!r} holds '{MARK}', which marks the votes of a pack from "
                              "another machine; choose another name")
