"""Identities a pack cannot prove: which merged records are held, and an owner accepting them.

A pack is signed by a *workspace* key, so it proves which machine sent it, not
who on that machine voted. Three things follow (issue 37):

* a vote from another machine's key is stored under its pack identity,
  ``NAME@pack:<key>`` (:mod:`dynadesk.annotation.pack_identity`, issue 45), never
  under a local person's name nor using up their vote; it counts with an owner's
  weight only when the key is bound to that owner here
  (``dynadesk annotate trust KEY --person NAME``); the role lookup lives in
  :meth:`AnnotationRepo.validations_for`, so every reader (stats, export, queue)
  gets it;
* examples and votes by people this workspace did not know before the merge
  are merged *held*; so are round targets it never had (not registered here
  with that digest, not already a target of the local round) and the examples
  they answered;
* held records count nowhere (not collected, fooled or verified) until an owner
  here accepts them with :func:`accept_held`; ``annotate verify`` lists them.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from dynadesk.store.annotation import AnnotationRepo

from dynadesk.annotation.annotators import resolve_annotator
from dynadesk.annotation.pack_identity import base_name, qualified
from dynadesk.annotation.signing import own_fingerprint
from dynadesk.errors import AnnotationError
from dynadesk.store.annotation import AnnotatedExample, Validation

if TYPE_CHECKING:
    from dynadesk.store import Store


@dataclass
class Provenance:
    """What this workspace knew before a merge: its people and owners, its models, its rounds' targets."""

    people: set[str]
    owners: set[str]
    bound_person: str | None
    vote_signer: str | None
    models: set[tuple[str, str]]
    targets: dict[tuple[str, int], set[tuple[str, str]]]

    @classmethod
    def before_merge(cls, store: Store, body: dict[str, Any], fingerprint: str) -> Provenance:
        repo = store.annotation
        people = repo.list_annotators()
        own = fingerprint == own_fingerprint(store)
        key = None if own else repo.trusted_key(fingerprint)
        models = {(m.name, m.digest) for m in store.models.list(None)}
        targets = {(r["task"], r["number"]): repo.round_targets(r["task"], r["number"]) for r in body["rounds"]}
        return cls(people={a.name for a in people}, owners={a.name for a in people if a.role == "owner"},
                   bound_person=key.person if key else None, vote_signer=None if own else fingerprint,
                   models=models, targets=targets)

    def _known_target(self, task: str, number: int, name: str, digest: str) -> bool:
        return (name, digest) in self.models or (name, digest) in self.targets.get((task, number), set())

    def unknown_targets(self, rnd: dict[str, Any]) -> dict[str, str]:
        """The round's models this workspace never had, each with why it is held."""
        return {m["name"]: f"target model '{m['name']}' {m['digest'][:19]}... is not registered here"
                for m in rnd["models"]
                if not self._known_target(rnd["task"], rnd["number"], m["name"], m["digest"])}

    def example_hold(self, ex: AnnotatedExample) -> str | None:
        if ex.annotator not in self.people:
            return f"written by '{ex.annotator}', who is not known here"
        if not self._known_target(ex.task, ex.round, ex.model_name, ex.model_digest):
            return f"answered by target model '{ex.model_name}', which is not registered here"
        return None

    def vote_hold(self, vote: Validation) -> str | None:
        name = base_name(vote.annotator)  # the person as the pack's machine named them
        if name not in self.people:
            return f"vote by '{name}', who is not known here"
        return None

    def voter(self, name: str) -> str:
        """Whose name a merged vote by ``name`` is stored under: the name itself for a pack of this workspace's
        own key, else its pack-qualified identity (:mod:`dynadesk.annotation.pack_identity`), never a local
        person's name -- even for a key bound to that person (the binding lends the role, not the name)."""
        return name if self.vote_signer is None else qualified(name, self.vote_signer)

    def merged_vote(self, repo: AnnotationRepo, v: dict[str, Any]) -> tuple[Validation | None, list[tuple[str, str]]]:
        """The pack's vote ``v`` as stored here -- under its pack-qualified identity when another machine's key
        signed the pack (:meth:`voter`), so it never uses up a local person's vote -- or None when that identity
        already voted on the example here or would validate an example written under its own name; with the
        report's notes, ``(conflicts|refused|held, text)``."""
        who = self.voter(v["annotator"])
        author = repo.get_example(v["example_uid"], with_validations=False).annotator \
            if repo.has_example(v["example_uid"]) else None
        if repo.has_vote(v["example_uid"], who):
            return None, [("conflicts", f"'{who}' already voted on example '{v['example_uid']}' here; the pack's"
                                        f" vote '{v['verdict']}' was not added")]
        if who != v["annotator"] and author == v["annotator"]:
            return None, [("refused", f"vote {v['uid']} by '{v['annotator']}': validates an example written under"
                                      " that same name here")]
        vote = Validation(uid=v["uid"], example_uid=v["example_uid"], annotator=who, verdict=v["verdict"],
                          label=v.get("label"), reason=v["reason"], origin=v["origin"], created_at=v["created_at"],
                          signer=self.vote_signer)
        notes = []
        if who != v["annotator"]:
            repo.ensure_annotator(who, "annotator", v["created_at"])  # a pack identity: never a role here
            if v["annotator"] in self.people:
                here = "an owner" if v["annotator"] in self.owners else "a person"
                bound = (" (its key is bound to them: it counts with their role)" if self.bound_person == v["annotator"]
                         else f" ('dynadesk annotate trust KEY --person {v['annotator']}' binds the key to them)")
                notes.append(("conflicts", f"vote {vote.uid} by '{v['annotator']}' ({here} here) is stored as '{who}':"
                                           " a pack from another machine's key never votes under a local person's"
                                           " name" + bound))
        vote.held = self.vote_hold(vote)
        if vote.held:
            notes.append(("held", f"vote {vote.uid}: {vote.held}"))
        return vote, notes


def accept_held(store: Store, owner: str | None) -> dict[str, int]:
    """An owner here accepts every held record: they count from now on (people stay plain annotators)."""
    who = resolve_annotator(store, owner)
    if who.role != "owner":
        raise AnnotationError(f"'{who.name}' is not an owner here: only an owner accepts held pack records")
    return store.annotation.accept_held()
