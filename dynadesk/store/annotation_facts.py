"""A round's example facts kept between calls and brought up to date from the rows added since.

The hub asks for a round's statistics on every user's poll and for the head of its validation queue on every
validator's turn; both read the facts of every example of the round with their votes (O(examples) a call: ~11 ms
at 4,000 examples, ~13 % of the hub's CPU under 30 users). Examples and votes are only ever added on the hub's
path, so the facts kept from the last call are brought up to date from the rows whose ``seq`` is above the highest
seen (two indexed range reads), and read whole again only when something else changed: a counter that triggers
(``m005``) move on every update or delete of an example or vote and on every change to the annotators or the
trusted pack keys (a held record accepted, a vote's role changed, a row removed). The cache is exact: a test
compares it after each step of a random sequence of writes with the facts read whole.

Shared by every connection of one process to one database file (the hub's threads each hold their own), keyed by
the file's path and inode, its task and round number; entries are never changed once published (copy on write), so
a reader needs no lock. A database file copied over a live one in place (not a supported way to restore one:
SQLite warns it corrupts) is not detected while its counters and seqs stay at or above the cached ones.
"""

from __future__ import annotations

import bisect
import threading
from collections import OrderedDict
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import TYPE_CHECKING

from dynadesk.store.annotation_records import ExampleFacts, Validation, validation_from_row
from dynadesk.store.annotation_schema import KEY_TAG_SQL

if TYPE_CHECKING:
    from sqlite_utils import Database

# every vote with the role it counts with (AnnotationRepo.validations_for says when a vote counts as an owner's)
VOTE_WITH_ROLE_SQL = (
    "SELECT v.*, CASE WHEN (v.signer IS NULL AND a.role = 'owner') OR EXISTS (SELECT 1 FROM"
    " trusted_pack_keys k JOIN annotators p ON p.name = k.person WHERE k.fingerprint = v.signer"
    f" AND p.role = 'owner' AND v.annotator IN (k.person, k.person || '@pack:' || {KEY_TAG_SQL}))"
    " THEN 'owner' ELSE 'annotator' END AS role"
    " FROM validations v JOIN annotators a ON a.name = v.annotator")

_FACTS_SQL = ("SELECT e.seq, e.uid, e.annotator, e.model_name, e.fooled, e.time_ms, e.created_at"
              " FROM annotated_examples e JOIN rounds r ON r.id = e.round_id"
              " WHERE e.task = ? AND r.number = ? AND e.held IS NULL AND e.seq > ? AND e.seq <= ?"
              " ORDER BY e.created_at, e.seq")
_VOTES_SQL = (VOTE_WITH_ROLE_SQL + " JOIN annotated_examples e ON e.uid = v.example_uid"
              " JOIN rounds r ON r.id = e.round_id WHERE e.task = ? AND r.number = ? AND v.held IS NULL"
              " AND v.seq > ? AND v.seq <= ? ORDER BY v.created_at, v.seq")
_MARKS_SQL = ("SELECT (SELECT n FROM annotation_changes WHERE id = 1),"
              " (SELECT COALESCE(MAX(seq), 0) FROM annotated_examples),"
              " (SELECT COALESCE(MAX(seq), 0) FROM validations)")

KEEP_ROUNDS = 16  # rounds kept per process (a hub serves a few; a test process opens many workspaces)


@dataclass(frozen=True)
class _Marks:
    """Where the database stood when the facts were read: the change counter and the highest example and vote."""

    changes: int
    example_seq: int
    vote_seq: int


@dataclass
class _RoundFacts:
    marks: _Marks
    facts: list[ExampleFacts]  # published: never changed in place (a reader may hold it)
    created: list[str]  # each fact's created_at, for placing an example added out of order
    by_uid: dict[str, ExampleFacts] = field(default_factory=dict)  # only read and changed under the lock


_entries: OrderedDict[tuple[str, int, str, int], _RoundFacts] = OrderedDict()
_lock = threading.Lock()


def round_facts(db: Database, path: Path | None, task: str, round_number: int) -> list[ExampleFacts]:
    """The round's examples (held ones left out) in creation order with their votes, oldest first: what
    :meth:`AnnotationRepo.example_facts` returns, from the kept facts where nothing but additions happened."""
    conn = db.conn
    with _lock:  # marks read under the lock: each holder's snapshot is at least as new as the one before it
        began = not conn.in_transaction
        if began:
            conn.execute("BEGIN")  # one snapshot for the marks and the rows read up to them
        try:
            marks = _Marks(*conn.execute(_MARKS_SQL).fetchone())
            if path is None:
                return list(_read(db, task, round_number, _Marks(marks.changes, 0, 0), marks).facts)
            key = (str(path), _inode(path), task, round_number)
            entry = _entries.get(key)
            if entry is None or entry.marks.changes != marks.changes \
                    or entry.marks.example_seq > marks.example_seq or entry.marks.vote_seq > marks.vote_seq:
                entry = _read(db, task, round_number, _Marks(marks.changes, 0, 0), marks)
            elif entry.marks != marks:
                try:
                    entry = _catch_up(db, task, round_number, entry, marks)
                except BaseException:
                    _entries.pop(key, None)  # its by_uid may be half changed
                    raise
            _entries[key] = entry
            _entries.move_to_end(key)
            while len(_entries) > KEEP_ROUNDS:
                _entries.popitem(last=False)
            return list(entry.facts)
        finally:
            if began and conn.in_transaction:
                conn.execute("COMMIT")


def _inode(path: Path) -> int:
    try:
        return path.stat().st_ino
    except OSError:
        return -1


def _read(db: Database, task: str, round_number: int, since: _Marks, upto: _Marks) -> _RoundFacts:
    """The facts of the examples and votes added after ``since`` up to ``upto`` (all of them from zero marks)."""
    rows = db.execute(_FACTS_SQL, [task, round_number, since.example_seq, upto.example_seq]).fetchall()
    facts = [ExampleFacts(r[1], r[2], r[3], bool(r[4]), r[5]) for r in rows]
    entry = _RoundFacts(upto, facts, [r[6] for r in rows], {f.uid: f for f in facts})
    for vote in _votes(db, task, round_number, since, upto):
        ex = entry.by_uid.get(vote.example_uid)
        if ex is not None:
            ex.validations.append(vote)  # still private: nothing has been published yet
    return entry


def _votes(db: Database, task: str, round_number: int, since: _Marks, upto: _Marks) -> list[Validation]:
    if upto.vote_seq <= since.vote_seq:  # none added (a catch-up's examples are read before its votes)
        return []
    return [validation_from_row(r) for r in db.query(_VOTES_SQL, [task, round_number, since.vote_seq,
                                                                  upto.vote_seq])]


def _catch_up(db: Database, task: str, round_number: int, entry: _RoundFacts, marks: _Marks) -> _RoundFacts:
    """``entry`` with the examples and votes added since its marks, as a new entry (the old one stays as it was
    for readers holding its list); an example or vote dated before the last one kept goes where a whole read
    would have put it (after every one dated the same: its ``seq`` is higher)."""
    added = _read(db, task, round_number, entry.marks, _Marks(marks.changes, marks.example_seq, entry.marks.vote_seq))
    changed: dict[str, ExampleFacts] = {}
    for vote in _votes(db, task, round_number, entry.marks, marks):
        ex = changed.get(vote.example_uid) or added.by_uid.get(vote.example_uid)
        if ex is None:
            old = entry.by_uid.get(vote.example_uid)
            if old is None:
                continue  # a vote on another round's example or a held one
            ex = changed[old.uid] = replace(old, validations=list(old.validations))
        at = bisect.bisect_right([v.created_at for v in ex.validations], vote.created_at)
        ex.validations.insert(at, vote)
    facts = [changed.get(ex.uid, ex) for ex in entry.facts] if changed else list(entry.facts)
    created = list(entry.created)
    for ex, when in zip(added.facts, added.created):
        at = bisect.bisect_right(created, when)
        facts.insert(at, ex)
        created.insert(at, when)
    by_uid = entry.by_uid
    by_uid.update(changed)
    by_uid.update(added.by_uid)
    return _RoundFacts(marks, facts, created, by_uid)
