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
from typing import TYPE_CHECKING, Any

from dynadesk.errors import ValidationError
from dynadesk.store.annotation import Validation

if TYPE_CHECKING:
    from dynadesk.annotation.held import Provenance
    from dynadesk.annotation.pack import MergeReport
    from dynadesk.store.annotation import AnnotationRepo

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


def merged_vote(repo: AnnotationRepo, trust: Provenance, v: dict[str, Any], report: MergeReport) -> Validation | None:
    """The pack's vote ``v`` as stored here -- under its pack-qualified identity when another machine's key
    signed the pack, so it never uses up a local person's vote -- or None (listed in the report) when that
    identity already voted on the example here or it would validate an example written under its own name."""
    who = trust.voter(v["annotator"])
    example_author = repo.get_example(v["example_uid"], with_validations=False).annotator \
        if repo.has_example(v["example_uid"]) else None
    if repo.has_vote(v["example_uid"], who):
        report.conflicts.append(f"'{who}' already voted on example '{v['example_uid']}' here;"
                                f" the pack's vote '{v['verdict']}' was not added")
        return None
    if who != v["annotator"] and example_author == v["annotator"]:
        report.refused.append(f"vote {v['uid']} by '{v['annotator']}': validates an example written under that "
                              "same name here")
        return None
    vote = Validation(uid=v["uid"], example_uid=v["example_uid"], annotator=who, verdict=v["verdict"],
                      label=v.get("label"), reason=v["reason"], origin=v["origin"], created_at=v["created_at"],
                      signer=trust.vote_signer)
    if who != v["annotator"]:
        repo.ensure_annotator(who, "annotator", v["created_at"])  # a pack identity: never a role here
        if v["annotator"] in trust.people:
            here = "an owner" if v["annotator"] in trust.owners else "a person"
            report.conflicts.append(f"vote {vote.uid} by '{v['annotator']}' ({here} here) is stored as '{who}': a"
                                    " pack from another machine's key never votes under a local person's name"
                                    + (" (its key is bound to them: it counts with their role)"
                                       if trust.bound_person == v["annotator"] else
                                       f" ('dynadesk annotate trust KEY --person {v['annotator']}' binds the key"
                                       " to them)"))
    vote.held = trust.vote_hold(vote)
    if vote.held:
        report.validations_held += 1
        report.held.append(f"vote {vote.uid}: {vote.held}")
    return vote
