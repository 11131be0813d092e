"""SQL for the LAN hub (issue 37): invited people, one-time invite codes, browser sessions, and which
session wrote which example or vote.

Codes and session tokens are stored as their SHA-256 only (a copy of the database signs nobody in).
A hub person is an annotator of the annotation area (same name, so every example and vote the hub
stores names them); ``hub_people.role`` is their hub role (``validator`` judges but does not write
examples). ``hub_writes`` ties each write to the session that made it and to the client's request id,
so a retried request never stores a second example.
"""

from __future__ import annotations

import sqlite3
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from sqlite_utils import Database, Migrations

from dynadesk.errors import AlreadyExistsError, NotFoundError
from dynadesk.store.core import Record, Repo, disk_full_is_store_error

if TYPE_CHECKING:
    from dynadesk.store import Store

migrations = Migrations("dynadesk.hub")

HUB_ROLES = ("annotator", "validator", "owner")
WRITE_KINDS = ("example", "vote")


@migrations()
def m001_hub(db: Database) -> None:
    db.execute("""
        CREATE TABLE hub_people (
            name TEXT PRIMARY KEY REFERENCES annotators(name),
            role TEXT NOT NULL CHECK (role IN ('annotator', 'validator', 'owner')),
            invited_at TEXT NOT NULL,
            revoked_at TEXT
        )""")
    db.execute("""
        CREATE TABLE hub_invites (
            code_hash TEXT PRIMARY KEY,
            name TEXT NOT NULL REFERENCES hub_people(name),
            created_at TEXT NOT NULL,
            expires_at TEXT NOT NULL,
            used_at TEXT,
            revoked_at TEXT
        )""")
    db.execute("""
        CREATE TABLE hub_sessions (
            id INTEGER PRIMARY KEY,
            token_hash TEXT NOT NULL UNIQUE,
            name TEXT NOT NULL REFERENCES hub_people(name),
            created_at TEXT NOT NULL,
            expires_at TEXT NOT NULL,
            last_seen TEXT NOT NULL,
            revoked_at TEXT,
            client TEXT NOT NULL DEFAULT ''
        )""")
    db.execute("CREATE INDEX hub_sessions_name ON hub_sessions(name)")
    db.execute("""
        CREATE TABLE hub_writes (
            id INTEGER PRIMARY KEY,
            name TEXT NOT NULL REFERENCES hub_people(name),
            session_id INTEGER NOT NULL REFERENCES hub_sessions(id),
            kind TEXT NOT NULL CHECK (kind IN ('example', 'vote')),
            request_id TEXT NOT NULL,
            uid TEXT,
            created_at TEXT NOT NULL,
            UNIQUE (name, kind, request_id)
        )""")


@dataclass(frozen=True)
class HubPerson(Record):
    name: str
    role: str
    invited_at: str
    revoked_at: str | None


@dataclass(frozen=True)
class HubSession(Record):
    id: int
    name: str
    role: str
    created_at: str
    expires_at: str
    last_seen: str
    revoked_at: str | None
    client: str


_SESSION_SELECT = ("SELECT s.id, s.name, p.role, s.created_at, s.expires_at, s.last_seen,"
                   " COALESCE(s.revoked_at, p.revoked_at), s.client"
                   " FROM hub_sessions s JOIN hub_people p ON p.name = s.name")


@contextmanager
def _immediate(store: Store) -> Iterator[Database]:
    """A transaction that takes the write lock first (``BEGIN IMMEDIATE``): one that reads and then writes
    under a deferred BEGIN fails at once with "database is locked" when another connection wrote after its
    read (SQLite cannot wait then); this one waits for the lock (busy timeout) before reading."""
    db = store.db
    with disk_full_is_store_error(store.path):
        db.execute("BEGIN IMMEDIATE")
        try:
            yield db
        except BaseException:
            db.conn.rollback()
            raise
        db.execute("COMMIT")


class HubRepo(Repo):
    # -- people and invites ---------------------------------------------------------
    def invite(self, name: str, role: str, code_hash: str, now: str, expires_at: str) -> HubPerson:
        """(Re)invite ``name`` with ``role``: a revoked person is reinstated; earlier unused codes stop working."""
        with self._store.atomic() as db:
            db.execute("INSERT INTO hub_people(name, role, invited_at) VALUES (?, ?, ?) ON CONFLICT(name) DO UPDATE"
                       " SET role = excluded.role, invited_at = excluded.invited_at, revoked_at = NULL",
                       [name, role, now])
            db.execute("UPDATE hub_invites SET revoked_at = ? WHERE name = ? AND used_at IS NULL"
                       " AND revoked_at IS NULL", [now, name])
            db.execute("INSERT INTO hub_invites(code_hash, name, created_at, expires_at) VALUES (?, ?, ?, ?)",
                       [code_hash, name, now, expires_at])
        return self.person(name)

    def person(self, name: str) -> HubPerson:
        row = self.db.execute("SELECT name, role, invited_at, revoked_at FROM hub_people WHERE name = ?",
                              [name]).fetchone()
        if row is None:
            raise NotFoundError(f"'{name}' was never invited to the hub (see 'dynadesk hub invite')")
        return HubPerson(*row)

    def people(self) -> list[HubPerson]:
        return [HubPerson(*r) for r in self.db.execute(
            "SELECT name, role, invited_at, revoked_at FROM hub_people ORDER BY name")]

    def redeem(self, code_hash: str, now: str, session_hash: str, session_expires: str, client: str) -> int | None:
        """Use a valid invite code once and open a session for its person (one transaction); the session id,
        or None when the code is unknown, used, revoked or expired, or its person is revoked."""
        with _immediate(self._store) as db:
            row = db.execute(
                "SELECT i.name FROM hub_invites i JOIN hub_people p ON p.name = i.name WHERE i.code_hash = ?"
                " AND i.used_at IS NULL AND i.revoked_at IS NULL AND i.expires_at > ? AND p.revoked_at IS NULL",
                [code_hash, now]).fetchone()
            if row is None:
                return None
            db.execute("UPDATE hub_invites SET used_at = ? WHERE code_hash = ?", [now, code_hash])
            cur = db.execute("INSERT INTO hub_sessions(token_hash, name, created_at, expires_at, last_seen, client)"
                             " VALUES (?, ?, ?, ?, ?, ?)", [session_hash, row[0], now, session_expires, now, client])
            return int(cur.lastrowid or 0)

    def revoke(self, name: str, now: str) -> int:
        """Revoke the person, their open sessions and unused codes; how many sessions were open."""
        self.person(name)
        with self._store.atomic() as db:
            db.execute("UPDATE hub_people SET revoked_at = COALESCE(revoked_at, ?) WHERE name = ?", [now, name])
            db.execute("UPDATE hub_invites SET revoked_at = ? WHERE name = ? AND used_at IS NULL"
                       " AND revoked_at IS NULL", [now, name])
            n = db.execute("UPDATE hub_sessions SET revoked_at = ? WHERE name = ? AND revoked_at IS NULL"
                           " AND expires_at > ?", [now, name, now]).rowcount
        return int(n)

    # -- sessions -------------------------------------------------------------------
    def session_by_token(self, token_hash: str) -> HubSession | None:
        row = self.db.execute(_SESSION_SELECT + " WHERE s.token_hash = ?", [token_hash]).fetchone()
        return HubSession(*row) if row else None

    def end_session(self, session_id: int, now: str) -> None:
        with self._store.atomic() as db:
            db.execute("UPDATE hub_sessions SET revoked_at = COALESCE(revoked_at, ?) WHERE id = ?", [now, session_id])

    def touch(self, session_id: int, now: str) -> None:
        with self._store.atomic() as db:
            db.execute("UPDATE hub_sessions SET last_seen = ? WHERE id = ?", [now, session_id])

    def sessions(self, live_at: str | None = None) -> list[HubSession]:
        """Every session, or (``live_at``) those neither revoked nor expired then, newest first."""
        where = "" if live_at is None else \
            " WHERE s.revoked_at IS NULL AND p.revoked_at IS NULL AND s.expires_at > ?"
        args = [] if live_at is None else [live_at]
        return [HubSession(*r) for r in self.db.execute(_SESSION_SELECT + where + " ORDER BY s.id DESC", args)]

    # -- writes ---------------------------------------------------------------------
    def reserve_write(self, name: str, session_id: int, kind: str, request_id: str, now: str) -> str | None:
        """Claim ``request_id`` for a write; None when claimed now, else the uid it already wrote
        ('' while that first attempt is still running or failed without a uid)."""
        try:
            with self._store.atomic() as db:
                db.execute("INSERT INTO hub_writes(name, session_id, kind, request_id, created_at)"
                           " VALUES (?, ?, ?, ?, ?)", [name, session_id, kind, request_id, now])
        except sqlite3.IntegrityError:
            row = self.db.execute("SELECT uid FROM hub_writes WHERE name = ? AND kind = ? AND request_id = ?",
                                  [name, kind, request_id]).fetchone()
            if row is None:
                raise AlreadyExistsError(f"write {request_id!r} of '{name}' could not be recorded") from None
            return str(row[0] or "")
        return None

    def finish_write(self, name: str, kind: str, request_id: str, uid: str | None) -> None:
        """Record the uid a claimed write stored, or (``uid`` None: it failed) release the claim."""
        with self._store.atomic() as db:
            if uid is None:
                db.execute("DELETE FROM hub_writes WHERE name = ? AND kind = ? AND request_id = ? AND uid IS NULL",
                           [name, kind, request_id])
            else:
                db.execute("UPDATE hub_writes SET uid = ? WHERE name = ? AND kind = ? AND request_id = ?",
                           [uid, name, kind, request_id])

    def writes(self, kind: str | None = None) -> list[dict[str, Any]]:
        return list(self.db.query("SELECT w.name, w.session_id, w.kind, w.request_id, w.uid, w.created_at"
                                  " FROM hub_writes w WHERE (? IS NULL OR w.kind = ?) ORDER BY w.id", [kind, kind]))

    def work_per_person(self) -> dict[str, dict[str, int]]:
        """Examples written and votes given per annotator (every task and round; held pack records left out)."""
        out: dict[str, dict[str, int]] = {}
        for name, n in self.db.execute("SELECT annotator, COUNT(*) FROM annotated_examples WHERE held IS NULL"
                                       " GROUP BY annotator"):
            out.setdefault(name, {"examples": 0, "votes": 0})["examples"] = int(n)
        for name, n in self.db.execute("SELECT annotator, COUNT(*) FROM validations WHERE held IS NULL"
                                       " GROUP BY annotator"):
            out.setdefault(name, {"examples": 0, "votes": 0})["votes"] = int(n)
        return out


def attach(store: Store) -> None:
    store.hub = HubRepo(store)
