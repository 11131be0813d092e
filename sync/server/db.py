"""The leaderboard server's own database: the only place server SQL lives (SQLite or PostgreSQL).

Tables: ``keys`` (registered submitter keys, with revocation), ``board_datasets``
(the datasets each task's board accepts, by name and digest), ``bundles`` (the
exact signed bytes of every accepted bundle), ``log`` (the transparency hash
chain) and ``board`` (the latest bundle of each model and submitter, so a
board query never scans all bundles). An upload is one write transaction, taken in turn by every
writer of every process (:mod:`dynadesk.sync.server.backend`): bundle row, log entry and board row
appear together or not at all, and the log stays one chain.

The schema is the migration list in :mod:`dynadesk.sync.server.migrations`, applied on open, so an
existing database (the old code's included) upgrades in place. The SQL here is written once, with
``?`` placeholders; :mod:`dynadesk.sync.server.dialect` adapts it to PostgreSQL.
``meta.config_version`` is bumped by triggers on every change to ``keys`` or
``board_datasets``: uploads read keys and datasets from an in-process cache that is
revalidated with ``PRAGMA data_version`` (SQLite: any other connection committed?) and, only then
(always on PostgreSQL), that one counter, so an admin revoking a key in another process takes
effect at once.
"""

from __future__ import annotations

import json
from typing import Any

from dynadesk.errors import (
    NotFoundError,
    SnapshotError,
)
from dynadesk.sync.rules.claims import ClaimFacts, attach
from dynadesk.sync.server.db_core import _ANY_TASK, _BOARD_VERSION
from dynadesk.sync.server.db_ingest import IngestTables
from dynadesk.sync.server.db_keys import KeyTables
from dynadesk.sync.server.records import (
    ROLES,
    BundleFacts,
    CheckedAttestation,
    CheckedBundle,
    EntryHash,
    KeyRow,
    UploadConfig,
)

__all__ = ["ROLES", "BundleFacts", "CheckedAttestation", "CheckedBundle", "EntryHash", "KeyRow", "ServerDB",
           "UploadConfig"]


class ServerDB(KeyTables, IngestTables):
    """The server's database over a SQLite file or a ``postgresql://`` URL (``target``).

    ``conn`` runs one-statement reads (hold ``lock`` around it: SQLite has one connection per
    process); :meth:`tx` is one write transaction. ``background_checkpoint=True`` (the serving app,
    SQLite) moves WAL checkpoints to a :class:`Checkpointer` thread so no upload waits for one.
    The tables' write sides live in :class:`KeyTables` and :class:`IngestTables`; the reads are here."""

    def bundle_facts(self, bundle_id: str) -> BundleFacts:
        """Signer, time and results key of an accepted bundle (what an attestation is checked against)."""
        with self.lock:
            row = self.conn.execute("SELECT key_fingerprint, created_us, created_at, results_key FROM bundles"
                                    " WHERE id = ?", [bundle_id]).fetchone()
        if row is None:
            raise NotFoundError(f"no accepted bundle with id {bundle_id}")
        return BundleFacts(str(row[0]), int(row[1]), str(row[2]), str(row[3] or ""))

    def bundle_stats(self, bundle_ids: list[str]) -> dict[str, tuple[str, str]]:
        """``{bundle id: (intervals JSON, resampled JSON)}`` stored at ingest for those of ``bundle_ids`` that have
        them (board_stats)."""
        out: dict[str, tuple[str, str]] = {}
        for start in range(0, len(bundle_ids), 500):
            part = bundle_ids[start:start + 500]
            with self.lock:
                rows = self.conn.execute("SELECT bundle_id, intervals, resampled FROM bundle_intervals WHERE bundle_id"
                                         f" IN ({', '.join('?' * len(part))})", part).fetchall()
            out.update({str(r[0]): (str(r[1]), str(r[2])) for r in rows})
        return out


    def bundle_key(self, bundle_id: str) -> str:
        """The submitter key fingerprint of an accepted bundle."""
        with self.lock:
            row = self.conn.execute("SELECT key_fingerprint FROM bundles WHERE id = ?", [bundle_id]).fetchone()
        if row is None:
            raise NotFoundError(f"no accepted bundle with id {bundle_id}")
        return str(row[0])

    def attestations(self, task: str) -> dict[str, list[dict[str, Any]]]:
        """Attestations of non-revoked auditors that speak for a task's board rows: bundle id -> oldest first. A
        "reproduced" one shows on the exact claim it re-ran, a "disputed" one follows its results (claims.py)."""
        with self.lock:
            targets = [ClaimFacts.of(*r) for r in self.conn.execute(
                "SELECT b.id, b.key_fingerprint, sk.organisation, b.model_name, b.model_digest, b.predictions_digest,"
                " b.claim_key FROM board r JOIN bundles b ON b.id = r.bundle_id"
                " LEFT JOIN keys sk ON sk.fingerprint = b.key_fingerprint WHERE r.task = ?", [task]).fetchall()]
            found = self._task_attestations(task)
        live = [(f, a) for f, a in found if a["revoked_at"] is None]
        return {bid: [{k: v for k, v in a.items() if k not in ("organisation", "revoked_at")} for a in atts]
                for bid, atts in attach(targets, live).items()}

    def attestations_of(self, bundle_id: str) -> list[dict[str, Any]]:
        """Every attestation that speaks for a bundle (claims.py), oldest first, revoked auditors' included
        (marked): the model page lists them all, with the auditor's organisation."""
        with self.lock:
            row = self.conn.execute(
                "SELECT b.id, b.key_fingerprint, sk.organisation, b.model_name, b.model_digest, b.predictions_digest,"
                " b.claim_key, b.task FROM bundles b LEFT JOIN keys sk ON sk.fingerprint = b.key_fingerprint"
                " WHERE b.id = ?", [bundle_id]).fetchone()
            if row is None:
                return []
            found = self._task_attestations(str(row[7]))
        return attach([ClaimFacts.of(*row[:7])], found).get(bundle_id, [])

    def _task_attestations(self, task: str) -> list[tuple[ClaimFacts, dict[str, Any]]]:
        """Every attestation of a task's bundles, in log order, with the facts of the bundle it names."""
        rows = self.conn.execute(
            "SELECT a.id, a.auditor_fingerprint, k.name, k.organisation, k.revoked_at, a.verdict, a.summary,"
            " a.created_at, a.received_at, a.seq, a.bundle_id, ab.key_fingerprint, sk.organisation, ab.model_name,"
            " ab.model_digest, ab.predictions_digest, ab.claim_key FROM attestations a"
            " JOIN bundles ab ON ab.id = a.bundle_id LEFT JOIN keys k ON k.fingerprint = a.auditor_fingerprint"
            " LEFT JOIN keys sk ON sk.fingerprint = ab.key_fingerprint WHERE ab.task = ? ORDER BY a.seq",
            [task]).fetchall()
        return [(ClaimFacts.of(r[10], *r[11:17]),
                 {"id": r[0], "auditor_fingerprint": r[1], "auditor": r[2], "organisation": r[3], "revoked_at": r[4],
                  "verdict": r[5], **json.loads(r[6]), "created_at": r[7], "received_at": r[8], "log_seq": r[9],
                  "attested_bundle_id": r[10], "url": f"/api/attestations/{r[0]}"}) for r in rows]

    def attestation_raw(self, attestation_id: str) -> bytes:
        with self.lock:
            row = self.conn.execute("SELECT raw FROM attestations WHERE id = ?", [attestation_id]).fetchone()
        if row is None:
            raise NotFoundError(f"no accepted attestation with id {attestation_id}")
        return bytes(row[0])

    def bundle_raw(self, bundle_id: str) -> bytes:
        with self.lock:
            row = self.conn.execute("SELECT raw FROM bundles WHERE id = ?", [bundle_id]).fetchone()
        if row is None:
            raise NotFoundError(f"no accepted bundle with id {bundle_id}")
        return bytes(row[0])

    def bundle_sha256(self, bundle_id: str) -> str | None:
        with self.lock:
            row = self.conn.execute("SELECT bundle_sha256 FROM log WHERE bundle_id = ?", [bundle_id]).fetchone()
        return row[0] if row else None

    def list_bundles(self, task: str | None, limit: int, after_seq: int = 0) -> list[dict[str, Any]]:
        cols = ("seq", "id", "task", "model_name", "model_digest", "key_fingerprint", "created_at", "received_at")
        with self.lock:
            rows = self.conn.execute(f"SELECT {', '.join(cols)} FROM bundles WHERE {_ANY_TASK}"
                                     " AND seq > ? ORDER BY seq LIMIT ?", [task, task, after_seq, limit]).fetchall()
        return [dict(zip(cols, r)) for r in rows]

    def count_bundles(self) -> int:
        with self.lock:
            return int(self.conn.execute("SELECT COUNT(*) FROM bundles").fetchone()[0])

    def board_rows(self, task: str) -> list[dict[str, Any]]:
        """Rows of a task's board, cached until this process appends to the log or another
        process (the admin CLI revoking a key, say) commits anything (``PRAGMA data_version``; on
        PostgreSQL, until the log head or the key/dataset counter moves)."""
        with self.lock:
            version = self._board_version()
            cached = self._board_cache.get(task)
            if cached is not None and cached[0] == version:
                return cached[1]
            rows = self._board_rows(task)
            self._board_cache[task] = (version, rows)
            return rows

    def board_version(self) -> tuple[Any, ...]:
        """A value that changes whenever anything a board shows may have changed (the board caches' check)."""
        with self.lock:
            return self._board_version()

    def _board_version(self) -> tuple[Any, ...]:
        data_version = self.backend.data_version()
        if data_version is not None:
            return (data_version, self.log_head()[0])
        return tuple(self.conn.execute(_BOARD_VERSION).fetchone())

    def _board_rows(self, task: str) -> list[dict[str, Any]]:
        with self.lock:
            rows = self.conn.execute(
                "SELECT b.model_name, b.key_fingerprint, k.name, b.bundle_id, b.created_at, b.model_digest, b.metrics,"
                " b.datasets"
                " FROM board b JOIN keys k ON k.fingerprint = b.key_fingerprint"
                " WHERE b.task = ? AND k.revoked_at IS NULL ORDER BY b.model_name, b.key_fingerprint",
                [task]).fetchall()
        attested = self.attestations(task)
        return [{"model": r[0], "key_fingerprint": r[1], "submitter": r[2], "bundle_id": r[3], "created_at": r[4],
                 "model_digest": r[5], "metrics": json.loads(r[6]), "datasets": json.loads(r[7]),
                 "attestations": attested.get(r[3], [])} for r in rows]

    # ------------------------------------------------------------------ the log is the truth (issue 32)
    def stored_documents(self, after_seq: int, limit: int) -> list[tuple[int, str, str, str, bytes | None]]:
        """``(seq, kind, id, sha256, raw)`` of log entries after ``after_seq``: the stored bytes the entry names
        (None when no bundle or attestation of that id and kind is stored)."""
        with self.lock:
            rows = self.conn.execute(
                "SELECT l.seq, l.kind, l.bundle_id, l.bundle_sha256,"
                " CASE WHEN l.kind = 'attestation' THEN a.raw WHEN l.kind = 'snapshot' THEN s.raw"
                " WHEN l.kind = 'rates' THEN r.raw ELSE b.raw END"
                " FROM log l LEFT JOIN bundles b ON b.id = l.bundle_id AND b.seq = l.seq"
                " LEFT JOIN attestations a ON a.id = l.bundle_id AND a.seq = l.seq"
                " LEFT JOIN snapshots s ON s.id = l.bundle_id AND s.seq = l.seq"
                " LEFT JOIN rate_editions r ON r.id = l.bundle_id AND r.seq = l.seq"
                " WHERE l.seq > ? ORDER BY l.seq LIMIT ?", [after_seq, limit]).fetchall()
        return [(int(r[0]), str(r[1]), str(r[2]), str(r[3]), None if r[4] is None else bytes(r[4])) for r in rows]

    def stored_board(self) -> list[tuple[Any, ...]]:
        """Every board table row as ``(task, model, key, bundle_id, created_at, model_digest, metrics, datasets)``."""
        with self.lock:
            return [tuple(r) for r in self.conn.execute(
                "SELECT task, model_name, key_fingerprint, bundle_id, created_at, model_digest, metrics, datasets"
                " FROM board ORDER BY task, model_name, key_fingerprint").fetchall()]

    def bundles_in_order(self, after_seq: int, limit: int) -> list[tuple[int, bytes, int]]:
        """``(seq, raw, created_us)`` of stored bundles in log order (the board is derived from them)."""
        with self.lock:
            rows = self.conn.execute("SELECT seq, raw, created_us FROM bundles WHERE seq > ? ORDER BY seq LIMIT ?",
                                     [after_seq, limit]).fetchall()
        return [(int(r[0]), bytes(r[1]), int(r[2] or 0)) for r in rows]

    def replace_board(self, rows: list[tuple[Any, ...]]) -> None:
        """Replace the whole board table with ``rows`` (stored_board's shape plus created_us), in one transaction."""
        with self.tx() as c:
            c.execute("DELETE FROM board")
            c.executemany("INSERT INTO board(task, model_name, key_fingerprint, bundle_id, created_at, model_digest,"
                          " metrics, datasets, created_us) VALUES (?,?,?,?,?,?,?,?,?)", rows)
        self._board_cache.clear()

    # ------------------------------------------------------------------ board snapshots (issue 36)
    def add_snapshot(self, snapshot_id: str, raw: bytes, task: str, title: str, created_at: str,
                     at_head: tuple[int, str], entry_hash_fn: EntryHash) -> dict[str, Any]:
        """Store a signed snapshot and append it to the log, atomically, only if the log's head is still
        ``at_head`` (the head its rows were taken at); else :class:`SnapshotError` (take it again)."""
        import hashlib

        with self.tx() as c:
            last = c.execute("SELECT seq, entry_hash FROM log ORDER BY seq DESC LIMIT 1").fetchone()
            now = (int(last[0]), str(last[1])) if last else (0, "0" * 64)
            if now != tuple(at_head):
                raise SnapshotError(f"the log moved from entry {at_head[0]} to {now[0]} while the snapshot was taken")
            seq, entry, received = self._append_log(c, entry_hash_fn, snapshot_id, hashlib.sha256(raw).hexdigest(),
                                                     "snapshot")
            c.execute("INSERT INTO snapshots(id, seq, task, title, created_at, raw) VALUES (?,?,?,?,?,?)",
                      [snapshot_id, seq, task, title, created_at, raw])
        return {"snapshot_id": snapshot_id, "seq": seq, "entry_hash": entry, "received_at": received}

    def snapshot_raw(self, snapshot_id: str) -> tuple[bytes, int]:
        """A snapshot's signed bytes and its log entry's sequence number."""
        with self.lock:
            row = self.conn.execute("SELECT raw, seq FROM snapshots WHERE id = ?", [snapshot_id]).fetchone()
        if row is None:
            raise NotFoundError(f"no snapshot with id {snapshot_id}")
        return bytes(row[0]), int(row[1])

    def list_snapshots(self, task: str | None = None) -> list[dict[str, Any]]:
        cols = ("id", "seq", "task", "title", "created_at")
        with self.lock:
            rows = self.conn.execute(f"SELECT {', '.join(cols)} FROM snapshots WHERE {_ANY_TASK} ORDER BY seq",
                                     [task, task]).fetchall()
        return [dict(zip(cols, r)) for r in rows]

    def log_entries(self, start: int, limit: int) -> list[dict[str, Any]]:
        cols = ("seq", "bundle_id", "bundle_sha256", "received_at", "prev_hash", "entry_hash", "kind")
        with self.lock:
            rows = self.conn.execute(f"SELECT {', '.join(cols)} FROM log WHERE seq >= ? ORDER BY seq LIMIT ?",
                                     [start, limit]).fetchall()
        return [dict(zip(cols, r)) for r in rows]

    def integrity_check(self) -> str:
        """SQLite's ``PRAGMA integrity_check``: ``"ok"`` or the problems found (crash-safety tests, admins);
        PostgreSQL checks its own pages, so there it is ``"ok"`` once the database answers."""
        return self.backend.integrity_check()

    def log_entry_of(self, doc_id: str) -> dict[str, Any] | None:
        """The transparency-log entry of one bundle or attestation (the board's model page shows it)."""
        cols = ("seq", "bundle_id", "bundle_sha256", "received_at", "prev_hash", "entry_hash", "kind")
        with self.lock:
            row = self.conn.execute(f"SELECT {', '.join(cols)} FROM log WHERE bundle_id = ?", [doc_id]).fetchone()
        return dict(zip(cols, row)) if row else None
