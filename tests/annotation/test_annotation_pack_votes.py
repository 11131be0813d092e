"""A trusted pack's votes stay the pack's (issue 45, item 4): stored under a pack-qualified identity
(``name@pack:<key fingerprint>``), never under a local person's name, never using up a local person's vote."""

from __future__ import annotations

import sqlite3
from pathlib import Path

import pytest
from support.annotation import make_example, two_machines

from dynadesk import annotation as ann
from dynadesk.annotation.signing import own_fingerprint
from dynadesk.errors import ValidationError
from dynadesk.store import Store


@pytest.fixture
def two(tmp_path, models):
    """Machine A and machine B with the same model and round; B trusts A's pack key (bound to nobody)."""
    with two_machines(tmp_path, models, mutual=False) as stores:
        yield stores


def _pack_name(store, name: str) -> str:
    return f"{name}@pack:{own_fingerprint(store).removeprefix('sha256:')[:16]}"


def test_a_pack_vote_under_the_owners_name_never_uses_up_her_vote(two, tmp_path: Path) -> None:
    """A's 'bob' (another person who picked the same name) validates amy's example; B's owner is also 'bob'.
    Before, the merged vote was stored under B's bob: bob was refused his own vote ('already validated') and
    showed a validation he never cast. Now it is stored under bob@pack:<A's key>, bob votes, both show apart."""
    a, b = two
    b.annotation.db.execute("UPDATE annotators SET role = 'owner' WHERE name = 'bob'")
    ann.add_annotator(a, "bob")
    ann.add_annotator(b, "amy")  # the author is known here: her example counts
    ex = make_example(a, "amy", "a fooling attempt from machine A", fooled=True)
    ann.validate(a, ex.uid, "bob", "incorrect", label="negative" if ex.target == "positive" else "positive",
                 reason="A's bob disagrees")
    ann.pack(a, tmp_path / "a.pack")

    report = ann.merge(b, tmp_path / "a.pack")
    assert report.validations_added == 1
    pack_bob = _pack_name(a, "bob")
    (vote,) = b.annotation.get_example(ex.uid).validations
    assert vote.annotator == pack_bob and vote.role == "annotator"
    assert any(pack_bob in note for note in report.conflicts), report.conflicts  # the report says where it went

    ann.validate(b, ex.uid, "bob", "correct")  # before: "'bob' has already validated example ..."
    votes = {v.annotator: v for v in b.annotation.get_example(ex.uid).validations}
    assert set(votes) == {pack_bob, "bob"} and votes["bob"].role == "owner" and votes["bob"].verdict == "correct"
    stats = {s.annotator: s.validations_given for s in ann.round_stats(b, "sentiment").annotators}
    assert stats.get("bob") == 1 and stats.get(pack_bob) == 1, stats
    (row,) = ann.export_examples(b, "sentiment")
    assert sorted(v["annotator"] for v in row["metadata"]["annotation"]["validations"]) == sorted(["bob", pack_bob])
    assert ann.merge(b, tmp_path / "a.pack").validations_added == 0  # merged again: nothing new


def test_a_local_person_cannot_take_a_pack_identitys_name(two) -> None:
    _a, b = two
    with pytest.raises(ValidationError, match="@pack:"):
        ann.add_annotator(b, "bob@pack:0123456789abcdef")


def test_a_pack_vote_stored_under_the_owners_name_by_an_older_release_moves_to_its_pack_identity(
        two, tmp_path: Path) -> None:
    """An old database where a merge already used up the owner's vote: opening it with this release moves the
    vote to its pack identity (migration m004), so the owner can vote again and her count is her own."""
    a, b = two
    b.annotation.db.execute("UPDATE annotators SET role = 'owner' WHERE name = 'bob'")
    ex = make_example(a, "amy", "another fooling attempt from A", fooled=True)
    ann.pack(a, tmp_path / "a.pack")
    ann.merge(b, tmp_path / "a.pack")
    path = Path(b.path)
    b.close()
    db = sqlite3.connect(path)  # what an older release wrote: the pack's vote under B's own 'bob'
    db.execute("PRAGMA foreign_keys=ON")
    db.execute("INSERT INTO validations(uid, example_uid, annotator, verdict, reason, origin, created_at, signer)"
               " VALUES ('oldvote01', ?, 'bob', 'correct', '', 'ws-a', '2026-01-01T00:00:00Z', ?)",
               [ex.uid, own_fingerprint(a)])
    db.execute("DELETE FROM _sqlite_migrations WHERE migration_set = 'dynadesk.annotation' AND name = ?",
               ["m004_pack_identities"])
    db.commit()
    db.close()
    b = Store.open(path)
    try:
        (vote,) = b.annotation.get_example(ex.uid).validations
        assert vote.uid == "oldvote01" and vote.annotator == _pack_name(a, "bob")
        ann.validate(b, ex.uid, "bob", "correct")
    finally:
        b.close()


def test_nobody_here_acts_as_a_pack_identity(two, tmp_path: Path) -> None:
    """A local user voting as 'amy@pack:<A>' first would make the pack's real vote a conflict, dropped."""
    from dynadesk.errors import AnnotationError

    a, b = two
    ann.add_annotator(b, "amy")
    ann.add_annotator(b, "abe")  # known here: the pack's abe counts (as abe@pack:<A>), not held
    ex = make_example(a, "amy", "a third fooling attempt from A", fooled=True)
    ann.validate(a, ex.uid, "abe", "correct")
    ann.pack(a, tmp_path / "a.pack")
    ann.merge(b, tmp_path / "a.pack")
    pack_abe = _pack_name(a, "abe")
    assert [v.annotator for v in b.annotation.get_example(ex.uid).validations] == [pack_abe]
    with pytest.raises(AnnotationError, match="is a pack identity"):
        ann.validate(b, ex.uid, pack_abe, "incorrect", label="positive")
    with pytest.raises(AnnotationError, match="is a pack identity"):
        ann.use_annotator(b, pack_abe)
    assert pack_abe not in [p.name for p in ann.list_annotators(b)]
