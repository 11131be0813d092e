"""SQL for adversarial annotation: annotators, rounds, contexts, examples, validations.

Annotators are referenced by name (names travel in pack files between
machines); examples and validations by a random ``uid`` minted where they were
made, so merging a pack never duplicates them. Every write here is one
transaction that is committed before the method returns.
"""

from __future__ import annotations

import sqlite3
from collections.abc import Iterable, Sequence
from contextlib import AbstractContextManager
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from sqlite_utils import Database

from dynadesk.errors import AlreadyExistsError, AnnotationError, NotFoundError
from dynadesk.store.annotation_facts import VOTE_WITH_ROLE_SQL, round_facts
from dynadesk.store.annotation_records import (
    ROLES,
    VERDICTS,
    AnnotatedExample,
    Annotator,
    ExampleFacts,
    Round,
    RoundModel,
    TrustedKey,
    Validation,
    dumps_json,
    example_from_row,
    validation_from_row,
)
from dynadesk.store.annotation_schema import migrations
from dynadesk.store.core import Repo
from dynadesk.store.datasets import now_iso

if TYPE_CHECKING:
    from dynadesk.store import Store

__all__ = ["ROLES", "VERDICTS", "AnnotatedExample", "AnnotationRepo", "Annotator", "ExampleFacts", "Round",
           "RoundModel", "TrustedKey", "Validation", "attach", "example_from_row", "migrations"]

_EXAMPLE_SELECT = ("SELECT e.*, r.number AS round_number FROM annotated_examples e"
                   " JOIN rounds r ON r.id = e.round_id")



@dataclass(frozen=True)
class _NewRound:
    """A ``rounds`` row about to be inserted (its models and contexts go in beside it)."""

    task: str
    number: int
    status: str
    created_by: str | None
    created_at: str
    closed_at: str | None


class AnnotationRepo(Repo):
    # -- workspace-level values -------------------------------------------------
    def meta_get_or_create(self, key: str, value: str) -> str:
        """Return ``key``'s value, storing ``value`` first if unset (race-free across processes)."""
        self.db.execute("INSERT OR IGNORE INTO meta(key, value) VALUES (?, ?)", [key, value])
        return str(self.db.execute("SELECT value FROM meta WHERE key = ?", [key]).fetchone()[0])

    def meta_write_once(self, key: str, value: str) -> str:
        """:meth:`meta_get_or_create` for a value nothing changes once stored (the workspace's HMAC secret and
        id), read from the database once per store: every example and vote asked for both, each ask an
        ``INSERT OR IGNORE`` (a write statement, taking the database's write lock) and a read."""
        known: dict[str, str] = self.__dict__.setdefault("_write_once", {})
        if key not in known:
            known[key] = self.meta_get_or_create(key, value)
        return known[key]

    # -- trusted pack keys ------------------------------------------------------
    def trust_key(self, fingerprint: str, public_key_hex: str, name: str, person: str | None = None) -> TrustedKey:
        """Record a trusted pack key (kept as first named when trusted already); ``person`` binds it to one
        person here, whose owner votes it may then carry (a later binding replaces an earlier one)."""
        self.db.execute("INSERT OR IGNORE INTO trusted_pack_keys(fingerprint, public_key, name, added_at)"
                        " VALUES (?, ?, ?, ?)", [fingerprint, public_key_hex, name, now_iso()])
        if person is not None:
            self.db.execute("UPDATE trusted_pack_keys SET person = ? WHERE fingerprint = ?", [person, fingerprint])
        rows = list(self.db.query("SELECT * FROM trusted_pack_keys WHERE fingerprint = ?", [fingerprint]))
        return TrustedKey(**rows[0])

    def trusted_key(self, fingerprint: str) -> TrustedKey | None:
        rows = list(self.db.query("SELECT * FROM trusted_pack_keys WHERE fingerprint = ?", [fingerprint]))
        return TrustedKey(**rows[0]) if rows else None

    def trusted_keys(self) -> list[TrustedKey]:
        return [TrustedKey(**r) for r in self.db.query("SELECT * FROM trusted_pack_keys ORDER BY added_at, name")]

    # -- annotators -------------------------------------------------------------
    def add_annotator(self, name: str, role: str) -> Annotator:
        try:
            with self._store.atomic() as db:
                db.execute("INSERT INTO annotators(name, role, created_at) VALUES (?, ?, ?)", [name, role, now_iso()])
        except sqlite3.IntegrityError as exc:
            raise AlreadyExistsError(f"an annotator named '{name}' already exists") from exc
        return self.get_annotator(name)

    def ensure_annotator(self, name: str, role: str, created_at: str) -> bool:
        """Insert if missing (merge); True when it was added."""
        cur = self.db.execute("INSERT OR IGNORE INTO annotators(name, role, created_at) VALUES (?, ?, ?)",
                              [name, role, created_at])
        return cur.rowcount > 0

    def get_annotator(self, name: str) -> Annotator:
        rows = list(self.db.query("SELECT * FROM annotators WHERE name = ?", [name]))
        if not rows:
            raise NotFoundError(f"no annotator named '{name}' (see 'dynadesk annotators list')")
        return Annotator(**rows[0])

    def list_annotators(self) -> list[Annotator]:
        return [Annotator(**r) for r in self.db.query("SELECT * FROM annotators ORDER BY name")]

    # -- rounds -----------------------------------------------------------------
    def open_round(self, task: str, models: list[RoundModel], contexts: list[tuple[str, str]],
                   created_by: str | None) -> Round:
        """Close the task's open round and open the next number, with its models and contexts."""
        with self._store.atomic() as db:
            now = now_iso()
            db.execute("UPDATE rounds SET status = 'closed', closed_at = ? WHERE task = ? AND status = 'open'",
                       [now, task])
            number = db.execute("SELECT COALESCE(MAX(number), 0) + 1 FROM rounds WHERE task = ?",
                                [task]).fetchone()[0]
            rid = self._insert_round(db, _NewRound(task, number, "open", created_by, now, None), models, contexts)
        return self._round_by_id(rid)

    def _insert_round(self, db: Database, row: _NewRound, models: Iterable[RoundModel],
                      contexts: Iterable[tuple[str, str]]) -> int:
        cur = db.execute("INSERT INTO rounds(task, number, status, created_by, created_at, closed_at)"
                         " VALUES (?,?,?,?,?,?)", [row.task, row.number, row.status, row.created_by, row.created_at,
                                                   row.closed_at])
        rid = int(cur.lastrowid or 0)
        db.conn.executemany("INSERT INTO round_models(round_id, position, model_name, model_digest) VALUES (?,?,?,?)",
                            [(rid, i, m.name, m.digest) for i, m in enumerate(models)])
        db.conn.executemany("INSERT INTO contexts(round_id, context_id, position, text) VALUES (?,?,?,?)",
                            [(rid, cid, i, text) for i, (cid, text) in enumerate(contexts)])
        return rid

    def ensure_round(self, task: str, number: int, status: str, models: list[RoundModel],
                     contexts: list[tuple[str, str]], created_by: str | None, created_at: str,
                     held: dict[str, str] | None = None) -> bool:
        """Merge: create a missing round and add missing models/contexts; True if created.

        A missing round stays open only if it was open where it came from and is newer than
        every local round of the task (which it then closes), so one round per task is open.
        Models named in ``held`` (name -> why) are added held: not a target here until accepted."""
        row = self.db.execute("SELECT id FROM rounds WHERE task = ? AND number = ?", [task, number]).fetchone()
        if row is None:
            now = now_iso()
            latest = self.db.execute("SELECT COALESCE(MAX(number), 0) FROM rounds WHERE task = ?",
                                     [task]).fetchone()[0]
            if status == "open" and number > latest:
                self.db.execute("UPDATE rounds SET status = 'closed', closed_at = ? WHERE task = ?"
                                " AND status = 'open'", [now, task])
            else:
                status = "closed"
            rid = self._insert_round(self.db, _NewRound(task, number, status, created_by, created_at,
                                                        now if status == "closed" else None), models, contexts)
            self._hold_models(rid, held or {})
            return True
        rid = row[0]
        start = self.db.execute("SELECT COALESCE(MAX(position), -1) + 1 FROM round_models WHERE round_id = ?",
                                [rid]).fetchone()[0]
        for i, m in enumerate(models):
            self.db.execute("INSERT OR IGNORE INTO round_models(round_id, position, model_name, model_digest)"
                            " VALUES (?,?,?,?)", [rid, start + i, m.name, m.digest])
        start = self.db.execute("SELECT COALESCE(MAX(position), -1) + 1 FROM contexts WHERE round_id = ?",
                                [rid]).fetchone()[0]
        for i, (cid, text) in enumerate(contexts):
            self.db.execute("INSERT OR IGNORE INTO contexts(round_id, context_id, position, text) VALUES (?,?,?,?)",
                            [rid, cid, start + i, text])
        self._hold_models(rid, held or {})
        return False

    def _hold_models(self, rid: int, held: dict[str, str]) -> None:
        for name, why in held.items():
            self.db.execute("UPDATE round_models SET held = ? WHERE round_id = ? AND model_name = ?", [why, rid, name])

    def round_targets(self, task: str, number: int) -> set[tuple[str, str]]:
        """(name, digest) of the round's accepted targets; empty when the round is not here."""
        return {(r[0], r[1]) for r in self.db.execute(
            "SELECT m.model_name, m.model_digest FROM round_models m JOIN rounds r ON r.id = m.round_id"
            " WHERE r.task = ? AND r.number = ? AND m.held IS NULL", [task, number])}

    def _round_by_id(self, rid: int) -> Round:
        rows = list(self.db.query("SELECT * FROM rounds WHERE id = ?", [rid]))
        return self._round(rows[0])

    def _round(self, row: dict[str, Any]) -> Round:
        models = [RoundModel(r["model_name"], r["model_digest"]) for r in self.db.query(
            "SELECT model_name, model_digest FROM round_models WHERE round_id = ? AND held IS NULL"
            " ORDER BY position", [row["id"]])]
        n_ctx = self.db.execute("SELECT COUNT(*) FROM contexts WHERE round_id = ?", [row["id"]]).fetchone()[0]
        return Round(id=row["id"], task=row["task"], number=row["number"], status=row["status"], models=models,
                     n_contexts=n_ctx, created_by=row["created_by"], created_at=row["created_at"],
                     closed_at=row["closed_at"])

    def get_round(self, task: str, number: int | None = None) -> Round:
        """Round ``number`` of ``task``; without a number, the latest one."""
        if number is None:
            rows = list(self.db.query("SELECT * FROM rounds WHERE task = ? ORDER BY number DESC LIMIT 1", [task]))
            if not rows:
                raise NotFoundError(f"task '{task}' has no annotation round yet (see 'dynadesk rounds new')")
        else:
            rows = list(self.db.query("SELECT * FROM rounds WHERE task = ? AND number = ?", [task, number]))
            if not rows:
                raise NotFoundError(f"task '{task}' has no round {number} (see 'dynadesk rounds list {task}')")
        return self._round(rows[0])

    def list_rounds(self, task: str | None = None) -> list[Round]:
        rows = self.db.query("SELECT * FROM rounds WHERE (? IS NULL OR task = ?) ORDER BY task, number", [task, task])
        return [self._round(r) for r in rows]

    def contexts(self, round_id: int) -> list[tuple[str, str]]:
        return [tuple(r) for r in self.db.execute(
            "SELECT context_id, text FROM contexts WHERE round_id = ? ORDER BY position", [round_id])]

    def get_context(self, round_id: int, context_id: str) -> str | None:
        row = self.db.execute("SELECT text FROM contexts WHERE round_id = ? AND context_id = ?",
                              [round_id, context_id]).fetchone()
        return row[0] if row else None

    def used_context_ids(self, round_id: int, annotator: str) -> set[str]:
        return {r[0] for r in self.db.execute(
            "SELECT DISTINCT context_id FROM annotated_examples WHERE round_id = ? AND annotator = ?"
            " AND context_id IS NOT NULL", [round_id, annotator])}

    # -- examples ---------------------------------------------------------------
    def insert_example(self, ex: AnnotatedExample, round_id: int) -> None:
        with self._store.atomic() as db:
            self._insert_example(db, ex, round_id)

    def _insert_example(self, db: Database, ex: AnnotatedExample, round_id: int) -> None:
        db.execute(
            "INSERT INTO annotated_examples(uid, round_id, task, annotator, context_id, inputs, target, model_name,"
            " model_digest, model_output, fooled, explanation, time_ms, hmac, origin, created_at, held)"
            " VALUES (?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?)",
            [ex.uid, round_id, ex.task, ex.annotator, ex.context_id, dumps_json(ex.inputs), dumps_json(ex.target),
             ex.model_name, ex.model_digest, dumps_json(ex.model_output), int(ex.fooled), ex.explanation, ex.time_ms,
             ex.hmac, ex.origin, ex.created_at, ex.held])

    def round_id(self, task: str, number: int) -> int:
        row = self.db.execute("SELECT id FROM rounds WHERE task = ? AND number = ?", [task, number]).fetchone()
        if row is None:
            raise NotFoundError(f"task '{task}' has no round {number}")
        return int(row[0])

    def get_example(self, uid: str, with_validations: bool = True) -> AnnotatedExample:
        rows = list(self.db.query(_EXAMPLE_SELECT + " WHERE e.uid = ?", [uid]))
        if not rows:
            raise NotFoundError(f"no annotated example with id '{uid}'")
        ex = example_from_row(rows[0])
        if with_validations:
            ex.validations = self.validations_for([uid])[uid]
        return ex

    def raw_examples(self, task: str | None = None, round_number: int | None = None) -> list[dict[str, Any]]:
        """Rows as stored (JSON still text), for integrity checks that must survive broken JSON."""
        return list(self.db.query(_EXAMPLE_SELECT + " WHERE (? IS NULL OR e.task = ?) AND (? IS NULL OR r.number = ?)"
                                  " ORDER BY e.created_at, e.rowid", [task, task, round_number, round_number]))

    def has_example(self, uid: str) -> bool:
        return self.db.execute("SELECT 1 FROM annotated_examples WHERE uid = ?", [uid]).fetchone() is not None

    def examples(self, task: str | None = None, round_number: int | None = None, annotator: str | None = None,
                 with_validations: bool = True) -> list[AnnotatedExample]:
        """Examples in creation order (``created_at``, then ``uid``: the same on every machine).

        Held examples (merged, not yet accepted) and held votes are left out: they count nowhere."""
        sql = (_EXAMPLE_SELECT + " WHERE (? IS NULL OR e.task = ?) AND (? IS NULL OR r.number = ?)"
               " AND (? IS NULL OR e.annotator = ?) AND e.held IS NULL ORDER BY e.created_at, e.rowid")
        out = [example_from_row(r) for r in self.db.query(sql, [task, task, round_number, round_number,
                                                         annotator, annotator])]
        if with_validations:
            self._attach_validations(out)
        return out

    def example_facts(self, task: str, round_number: int) -> list[ExampleFacts]:
        """:meth:`examples` of one round as :class:`ExampleFacts`, with their validations: the same examples in the
        same order, held ones left out, ~3x cheaper (the columns a round's statistics read, no JSON decoded), and
        kept between calls (:mod:`dynadesk.store.annotation_facts`: only the rows added since are read). The
        facts are shared with other callers: read them, never change them."""
        return round_facts(self.db, self._store.path, task, round_number)

    def example_facts_whole(self, task: str, round_number: int) -> list[ExampleFacts]:
        """:meth:`example_facts` read whole from the database, nothing kept (what the kept facts must equal)."""
        out = [ExampleFacts(r[0], r[1], r[2], bool(r[3]), r[4]) for r in self.db.execute(
            "SELECT e.uid, e.annotator, e.model_name, e.fooled, e.time_ms FROM annotated_examples e"
            " JOIN rounds r ON r.id = e.round_id WHERE e.task = ? AND r.number = ? AND e.held IS NULL"
            " ORDER BY e.created_at, e.rowid", [task, round_number])]
        self._attach_validations(out)
        return out

    def _attach_validations(self, examples: Sequence[AnnotatedExample | ExampleFacts]) -> None:
        if examples:
            by_uid = self.validations_for([e.uid for e in examples])
            for e in examples:
                e.validations = by_uid[e.uid]

    # -- validations ------------------------------------------------------------
    def insert_validation(self, v: Validation) -> None:
        try:
            with self._store.atomic() as db:
                self._insert_validation(db, v)
        except sqlite3.IntegrityError as exc:
            raise AnnotationError(f"validation of example '{v.example_uid}' by '{v.annotator}' was refused: {exc}") \
                from exc

    def _insert_validation(self, db: Database, v: Validation) -> None:
        db.execute("INSERT INTO validations(uid, example_uid, annotator, verdict, label, reason, origin, created_at,"
                   " held, signer) VALUES (?,?,?,?,?,?,?,?,?,?)",
                   [v.uid, v.example_uid, v.annotator, v.verdict, None if v.label is None else dumps_json(v.label),
                    v.reason, v.origin, v.created_at, v.held, v.signer])

    def has_vote(self, example_uid: str, annotator: str) -> bool:
        return self.db.execute("SELECT 1 FROM validations WHERE example_uid = ? AND annotator = ?",
                               [example_uid, annotator]).fetchone() is not None

    def validation_uids(self) -> set[str]:
        return {r[0] for r in self.db.execute("SELECT uid FROM validations")}

    def validations_for(self, uids: Iterable[str]) -> dict[str, list[Validation]]:
        """Validations per example uid, oldest first, each with the role it counts with; held votes left out.

        A vote counts as an owner's only when it was made here (no ``signer``) by an owner here, or came under a
        pack key bound to an owner here (stored under that person's pack identity, ``name@pack:<key>``, or under
        the name itself by releases before m004): a pack never lends a local role."""
        uids = list(uids)
        out: dict[str, list[Validation]] = {u: [] for u in uids}
        for i in range(0, len(uids), 500):
            chunk = uids[i:i + 500]
            marks = ",".join("?" * len(chunk))
            for r in self.db.query(VOTE_WITH_ROLE_SQL + f" WHERE v.example_uid IN ({marks}) AND v.held IS NULL"
                                   " ORDER BY v.created_at, v.rowid", chunk):
                out[r["example_uid"]].append(validation_from_row(r))
        return out

    # -- held records (merged from packs, waiting for an owner here) ------------
    def held_records(self, task: str | None = None, round_number: int | None = None) -> list[tuple[str, str, str]]:
        """(kind, id, why) of every held round target, example and vote, optionally of one task / round."""
        args = [task, task, round_number, round_number]
        where = " AND (? IS NULL OR r.task = ?) AND (? IS NULL OR r.number = ?)"
        out = [("target", f"{r[0]} round {r[1]}: {r[2]}", r[3]) for r in self.db.execute(
            "SELECT r.task, r.number, m.model_name, m.held FROM round_models m JOIN rounds r ON r.id = m.round_id"
            " WHERE m.held IS NOT NULL" + where + " ORDER BY r.task, r.number, m.position", args)]
        out += [("example", r[0], r[1]) for r in self.db.execute(
            "SELECT e.uid, e.held FROM annotated_examples e JOIN rounds r ON r.id = e.round_id"
            " WHERE e.held IS NOT NULL" + where + " ORDER BY e.created_at, e.rowid", args)]
        out += [("vote", r[0], r[1]) for r in self.db.execute(
            "SELECT v.uid, v.held FROM validations v JOIN annotated_examples e ON e.uid = v.example_uid"
            " JOIN rounds r ON r.id = e.round_id WHERE v.held IS NOT NULL" + where
            + " ORDER BY v.created_at, v.rowid", args)]
        return out

    def count_held_examples(self, task: str, number: int) -> int:
        return int(self.db.execute(
            "SELECT COUNT(*) FROM annotated_examples e JOIN rounds r ON r.id = e.round_id"
            " WHERE e.held IS NOT NULL AND r.task = ? AND r.number = ?", [task, number]).fetchone()[0])

    def accept_held(self) -> dict[str, int]:
        """Clear every hold (one transaction): the records count from now on."""
        with self._store.atomic() as db:
            db.execute("UPDATE round_models SET held = NULL WHERE held IS NOT NULL")
            examples = db.execute("UPDATE annotated_examples SET held = NULL WHERE held IS NOT NULL").rowcount
            votes = db.execute("UPDATE validations SET held = NULL WHERE held IS NOT NULL").rowcount
        return {"examples": int(examples), "validations": int(votes)}

    # -- merge ------------------------------------------------------------------
    def merge_rows(self, examples: list[tuple[AnnotatedExample, int]], validations: list[Validation]) -> None:
        """Insert already-checked examples and validations in one transaction."""
        try:
            with self._store.atomic() as db:
                for ex, rid in examples:
                    self._insert_example(db, ex, rid)
                for v in validations:
                    self._insert_validation(db, v)
        except sqlite3.IntegrityError as exc:
            raise AnnotationError(f"the merge was refused by the database ({exc}); nothing was merged") from exc

    def atomic(self) -> AbstractContextManager[Database]:
        return self._store.atomic()


def attach(store: Store) -> None:
    store.annotation = AnnotationRepo(store)
