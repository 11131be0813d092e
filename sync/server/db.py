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
from collections.abc import Sequence
from contextlib import AbstractContextManager
from pathlib import Path
from typing import Any

from dynadesk.errors import (
    AlreadyExistsError,
    AttestationError,
    ConfigError,
    NotFoundError,
    ReplayError,
    SnapshotError,
)
from dynadesk.sync.claims import ClaimFacts, attach
from dynadesk.sync.format.timestamps import utc_now_text
from dynadesk.sync.server import migrations
from dynadesk.sync.server.backend import Executor, Tx
from dynadesk.sync.server.checkpoint import Checkpointer
from dynadesk.sync.server.connect import open_backend
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
_ANY_TASK = "(CAST(? AS TEXT) IS NULL OR task = ?)"  # the cast: PostgreSQL cannot type a bare NULL parameter
_KEY_COLS = "fingerprint, public_key, name, added_at, revoked_at, revoke_reason, role, organisation"
# What a board depends on besides the log: PostgreSQL has no data_version, so its cache compares these.
_BOARD_VERSION = ("SELECT (SELECT value FROM meta WHERE key = 'config_version'),"
                  " (SELECT seq FROM log ORDER BY seq DESC LIMIT 1)")


class ServerDB:
    """The server's database over a SQLite file or a ``postgresql://`` URL (``target``).

    ``conn`` runs one-statement reads (hold ``lock`` around it: SQLite has one connection per
    process); :meth:`tx` is one write transaction. ``background_checkpoint=True`` (the serving app,
    SQLite) moves WAL checkpoints to a :class:`Checkpointer` thread so no upload waits for one."""

    def __init__(self, target: str | Path, *, background_checkpoint: bool = False):
        self.backend = open_backend(target, background_checkpoint=background_checkpoint)
        self.path: Path | None = self.backend.path
        self.name = self.backend.name
        self.postgres = self.backend.dialect.postgres
        self.conn: Executor = self.backend.conn
        self.lock: AbstractContextManager[Any] = self.backend.lock
        self.checkpointer: Checkpointer | None = self.backend.checkpointer
        try:
            with self.tx() as c:
                migrations.apply(c)
        except BaseException:
            self.backend.close()
            raise
        self._board_cache: dict[str, tuple[tuple[Any, ...], list[dict[str, Any]]]] = {}
        self._config: tuple[int | None, str | None, UploadConfig] | None = None  # (data_version, config_version, ..)

    def applied_migrations(self) -> list[str]:
        """Names of the applied migrations, oldest first."""
        with self.lock:
            return migrations.applied(self.conn)

    def tx(self) -> AbstractContextManager[Tx]:
        """One write transaction, serialised across threads and processes (and, on PostgreSQL, machines)."""
        return self.backend.tx()

    def close(self) -> None:
        self.backend.close()

    # ------------------------------------------------------------------ keys
    def add_key(self, fingerprint: str, public_key: bytes, name: str, role: str = "submitter",
                organisation: str | None = None) -> KeyRow:
        if role not in ROLES:
            raise ConfigError(f"key role must be one of {', '.join(ROLES)}, got {role!r}")
        with self.tx() as c:
            if organisation is not None and c.execute("SELECT 1 FROM organisations WHERE name = ?",
                                                      [organisation]).fetchone() is None:
                raise NotFoundError(f"organisation {organisation!r} is not registered"
                                    f" (dynadesk-server orgs add {organisation!r})")
            row = c.execute("SELECT revoked_at FROM keys WHERE fingerprint = ?", [fingerprint]).fetchone()
            if row is not None:
                state = "revoked" if row[0] else "registered"
                raise AlreadyExistsError(f"key {fingerprint} is already {state}"
                                         + (" (a revoked key cannot be re-added)" if row[0] else ""))
            c.execute("INSERT INTO keys(fingerprint, public_key, name, added_at, role, organisation)"
                      " VALUES (?,?,?,?,?,?)", [fingerprint, public_key, name, utc_now_text(), role, organisation])
            self._config = None
        return self.get_key(fingerprint)

    def forget_config(self) -> None:
        """Drop this process's cached keys and datasets (after a change made outside these methods)."""
        self._config = None

    def revoke_key(self, fingerprint: str, reason: str = "") -> KeyRow:
        with self.tx() as c:
            cur = c.execute("UPDATE keys SET revoked_at = ?, revoke_reason = ? WHERE fingerprint = ?"
                            " AND revoked_at IS NULL", [utc_now_text(), reason, fingerprint])
            self._config = None
            known = c.execute("SELECT 1 FROM keys WHERE fingerprint = ?", [fingerprint]).fetchone()
            if cur.rowcount == 0 and known is None:
                raise NotFoundError(f"no key with fingerprint {fingerprint} is registered")
        return self.get_key(fingerprint)

    def get_key(self, fingerprint: str) -> KeyRow:
        with self.lock:
            row = self.conn.execute(f"SELECT {_KEY_COLS} FROM keys WHERE fingerprint = ?", [fingerprint]).fetchone()
        if row is None:
            raise NotFoundError(f"no key with fingerprint {fingerprint} is registered")
        return KeyRow(row[0], bytes(row[1]), *row[2:])

    def list_keys(self) -> list[KeyRow]:
        with self.lock:
            rows = self.conn.execute(f"SELECT {_KEY_COLS} FROM keys ORDER BY added_at, fingerprint").fetchall()
        return [KeyRow(r[0], bytes(r[1]), *r[2:]) for r in rows]

    # ------------------------------------------------------------------ organisations
    def add_organisation(self, name: str) -> None:
        """Register an organisation keys can belong to (``keys add --org``)."""
        if not name.strip() or len(name) > 200:
            raise ConfigError("an organisation name must have 1 to 200 characters")
        with self.tx() as c:
            if c.execute("SELECT 1 FROM organisations WHERE name = ?", [name]).fetchone():
                raise AlreadyExistsError(f"organisation {name!r} is already registered")
            c.execute("INSERT INTO organisations(name, added_at) VALUES (?, ?)", [name, utc_now_text()])

    def organisations(self) -> list[dict[str, Any]]:
        with self.lock:
            rows = self.conn.execute("SELECT name, added_at FROM organisations ORDER BY name").fetchall()
        return [{"name": r[0], "added_at": r[1]} for r in rows]

    # ------------------------------------------------------------------ datasets
    def add_dataset(self, task: str, name: str, split: str, digest: str, size: int,
                    replace: bool = False) -> dict[str, Any]:
        """Accept a dataset; a new digest for an accepted name becomes its next version (the old one is kept,
        so bundles scored on it stay attached to it). Returns ``{"version", "previous_digest"}``."""
        with self.tx() as c:
            row = c.execute("SELECT digest, version FROM board_datasets WHERE task = ? AND name = ?",
                            [task, name]).fetchone()
            if row is not None and not replace:
                raise AlreadyExistsError(f"task '{task}' already accepts a dataset named '{name}' (use --replace)")
            if row is not None and row[0] == digest:
                return {"version": row[1], "previous_digest": None}
            version = 1 if row is None else row[1] + 1
            now = utc_now_text()
            c.execute("INSERT INTO board_datasets(task, name, split, digest, size, added_at, version)"
                      " VALUES (?,?,?,?,?,?,?) ON CONFLICT(task, name) DO UPDATE SET split = excluded.split,"
                      " digest = excluded.digest, size = excluded.size, added_at = excluded.added_at,"
                      " version = excluded.version", [task, name, split, digest, size, now, version])
            c.execute("INSERT INTO dataset_versions(task, name, version, split, digest, size, added_at)"
                      " VALUES (?,?,?,?,?,?,?) ON CONFLICT(task, name, version) DO UPDATE SET split = excluded.split,"
                      " digest = excluded.digest, size = excluded.size, added_at = excluded.added_at",
                      [task, name, version, split, digest, size, now])
            self._config = None
        return {"version": version, "previous_digest": row[0] if row else None}

    def remove_dataset(self, task: str, name: str) -> None:
        with self.tx() as c:
            self._config = None
            if c.execute("DELETE FROM board_datasets WHERE task = ? AND name = ?", [task, name]).rowcount == 0:
                raise NotFoundError(f"task '{task}' has no dataset named '{name}'")

    def datasets(self, task: str | None = None) -> list[dict[str, Any]]:
        with self.lock:
            rows = self.conn.execute("SELECT task, name, split, digest, size, added_at, version FROM board_datasets"
                                     f" WHERE {_ANY_TASK} ORDER BY task, name", [task, task]).fetchall()
        return [dict(zip(("task", "name", "split", "digest", "size", "added_at", "version"), r)) for r in rows]

    def dataset_versions(self, task: str | None = None) -> list[dict[str, Any]]:
        """Every digest each dataset name has had, oldest version first."""
        cols = ("task", "name", "version", "split", "digest", "size", "added_at")
        with self.lock:
            rows = self.conn.execute(f"SELECT {', '.join(cols)} FROM dataset_versions WHERE {_ANY_TASK}"
                                     " ORDER BY task, name, version", [task, task]).fetchall()
        return [dict(zip(cols, r)) for r in rows]

    def upload_config(self, revalidate: bool = True) -> UploadConfig:
        """Keys and datasets for checking an upload, cached until any of them changes in any process.
        ``revalidate=False``: the cached copy without asking the database whether it changed (on PostgreSQL that
        question is a round trip), for a caller whose answer the upload's own check repeats (``verified_signer``)."""
        if not revalidate:
            cached = self._config
            if cached is not None:
                return cached[2]
        return self.upload_state("")[0]

    def upload_state(self, fingerprint: str) -> tuple[UploadConfig, int]:
        """:meth:`upload_config` and :meth:`key_stored_bytes` of ``fingerprint`` together: on PostgreSQL the
        cache's check and the key's usage are one round trip (an upload's first read), not two."""
        with self.lock:
            version = self.backend.data_version()
            cached = self._config
            if cached is not None and version is not None and cached[0] == version:
                return cached[2], self.key_stored_bytes(fingerprint)
            row = self.conn.execute("SELECT (SELECT value FROM meta WHERE key = 'config_version'),"
                                    " (SELECT stored_bytes FROM key_usage WHERE fingerprint = ?)",
                                    [fingerprint]).fetchone()
            config_version = str(row[0]) if row and row[0] is not None else None
            used = int(row[1]) if row and row[1] is not None else 0
            if cached is not None and config_version is not None and cached[1] == config_version:
                self._config = (version, config_version, cached[2])  # others committed uploads only
                return cached[2], used
            keys = {k.fingerprint: k for k in self.list_keys()}
            datasets: dict[str, dict[tuple[str, str], dict[str, Any]]] = {}
            for d in self.datasets():
                datasets.setdefault(d["task"], {})[(d["task"], d["name"])] = d
            superseded = {(v["task"], v["name"], v["digest"]): v for v in self.dataset_versions()}
            config = UploadConfig(keys, datasets, superseded)
            self._config = (version, config_version, config)
            return config, used

    # ------------------------------------------------------------------ bundles + log
    def accept(self, bundle: CheckedBundle, entry_hash_fn: EntryHash) -> dict[str, Any]:
        """Store a verified bundle, append it to the log and update the board, atomically.

        ``entry_hash_fn(seq, bundle_id, bundle_sha256, received_at, prev_hash) -> hex`` is the
        log's hash rule (kept in the format's translog so clients verify with the same code).
        """
        with self.tx() as c:
            out = self._accept(c, entry_hash_fn, bundle)
        if self.checkpointer is not None:
            self.checkpointer.committed()
        return out

    def accept_many(self, bundles: list[CheckedBundle], entry_hash_fn: EntryHash) -> list[dict[str, Any]]:
        """Several verified bundles in one transaction (bulk import, benchmarks): all or none."""
        with self.tx() as c:
            out = [self._accept(c, entry_hash_fn, b) for b in bundles]
        if self.checkpointer is not None:
            self.checkpointer.committed(len(bundles))
        return out

    def import_bundles(self, bundles: Sequence[CheckedBundle], entry_hash_fn: EntryHash) -> int:
        """Store already-checked bundles in bulk, in one transaction, with their log entries (one chain, as
        uploads make it), board rows and key usage. Rows go in with PostgreSQL's COPY or one SQLite
        ``executemany``, not statement by statement: a benchmark's million bundles load in minutes. Nothing here
        checks a bundle (the caller has); a bundle already stored fails the whole batch."""
        if not bundles:
            return 0
        received = utc_now_text()
        with self.tx() as c:
            last = c.execute("SELECT seq, entry_hash FROM log ORDER BY seq DESC LIMIT 1").fetchone()
            seq, prev = (int(last[0]), str(last[1])) if last else (0, "0" * 64)
            log_rows, bundle_rows = [], []
            board: dict[tuple[str, str, str], CheckedBundle] = {}
            usage: dict[str, list[int]] = {}
            for b in bundles:
                seq += 1
                entry = entry_hash_fn(seq, b.bundle_id, b.bundle_sha256, received, prev)
                log_rows.append((seq, b.bundle_id, b.bundle_sha256, received, prev, entry, "bundle"))
                prev = entry
                bundle_rows.append((seq, b.bundle_id, b.task, b.model_name, b.model_digest, b.key_fingerprint,
                                    b.created_at, received, b.raw, b.created_us, b.results_key or None,
                                    b.claim_key or None, b.predictions_digest or None))
                key = (b.task, b.model_name, b.key_fingerprint)
                if key not in board or b.created_us >= board[key].created_us:
                    board[key] = b
                used = usage.setdefault(b.key_fingerprint, [0, 0])
                used[0] += 1
                used[1] += len(b.raw)
            c.bulk_insert("log", ("seq", "bundle_id", "bundle_sha256", "received_at", "prev_hash", "entry_hash",
                                  "kind"), log_rows)
            c.bulk_insert("bundles", ("seq", "id", "task", "model_name", "model_digest", "key_fingerprint",
                                      "created_at", "received_at", "raw", "created_us", "results_key", "claim_key",
                                      "predictions_digest"), bundle_rows)
            for b in board.values():
                self._upsert_board(c, b)
            for fp, (n, size) in usage.items():
                c.execute("INSERT INTO key_usage(fingerprint, bundles, stored_bytes) VALUES (?, ?, ?)"
                          " ON CONFLICT(fingerprint) DO UPDATE SET bundles = key_usage.bundles + excluded.bundles,"
                          " stored_bytes = key_usage.stored_bytes + excluded.stored_bytes", [fp, n, size])
        if self.checkpointer is not None:
            self.checkpointer.committed(len(bundles))
        return len(bundles)

    @staticmethod
    def _append_log(c: Tx, entry_hash_fn: EntryHash, doc_id: str, sha256: str,
                    kind: str) -> tuple[int, str, str]:
        """Append one log entry; ``(seq, entry_hash, received_at)``."""
        last = c.execute("SELECT seq, entry_hash FROM log ORDER BY seq DESC LIMIT 1").fetchone()
        (seq, entry, received), insert = ServerDB._log_entry(entry_hash_fn, doc_id, sha256, kind, last)
        c.execute(*insert)
        return seq, entry, received

    @staticmethod
    def _log_entry(entry_hash_fn: EntryHash, doc_id: str, sha256: str, kind: str, last: Any
                   ) -> tuple[tuple[int, str, str], tuple[str, list[Any]]]:
        """The next log entry after ``last`` (the head's seq and entry hash; None or (None, None) when the log is
        empty): ``((seq, entry_hash, received_at), its INSERT)``."""
        received = utc_now_text()
        seq, prev = (int(last[0]) + 1, str(last[1])) if last and last[0] is not None else (1, "0" * 64)
        entry = entry_hash_fn(seq, doc_id, sha256, received, prev)
        return (seq, entry, received), ("INSERT INTO log(seq, bundle_id, bundle_sha256, received_at, prev_hash,"
                                        " entry_hash, kind) VALUES (?,?,?,?,?,?,?)",
                                        [seq, doc_id, sha256, received, prev, entry, kind])

    @classmethod
    def _accept(cls, c: Tx, entry_hash_fn: EntryHash, b: CheckedBundle) -> dict[str, Any]:
        """One upload's statements: a read (stored already? the log's head), then every write at once
        (:meth:`Tx.write_all`: on PostgreSQL one statement)."""
        bundle_id = b.bundle_id
        dup, *head = c.execute("SELECT (SELECT received_at FROM bundles WHERE id = ?), head.seq, head.entry_hash"
                               " FROM (SELECT 1 AS one) AS one LEFT JOIN (SELECT seq, entry_hash FROM log"
                               " ORDER BY seq DESC LIMIT 1) AS head ON 1 = 1", [bundle_id]).fetchone()
        if dup:
            raise ReplayError(f"bundle {bundle_id} was already accepted at {dup}")
        (seq, entry, received), log_insert = cls._log_entry(entry_hash_fn, bundle_id, b.bundle_sha256, "bundle",
                                                            head)
        writes = [log_insert,
                  ("INSERT INTO bundles(seq, id, task, model_name, model_digest, key_fingerprint, created_at,"
                   " received_at, raw, created_us, results_key, claim_key, predictions_digest)"
                   " VALUES (?,?,?,?,?,?,?,?,?,?,?,?,?)",
                   [seq, bundle_id, b.task, b.model_name, b.model_digest, b.key_fingerprint, b.created_at, received,
                    b.raw, b.created_us, b.results_key or None, b.claim_key or None, b.predictions_digest or None]),
                  ("INSERT INTO key_usage(fingerprint, bundles, stored_bytes) VALUES (?, 1, ?) ON CONFLICT(fingerprint)"
                   " DO UPDATE SET bundles = key_usage.bundles + 1,"
                   " stored_bytes = key_usage.stored_bytes + excluded.stored_bytes", [b.key_fingerprint, len(b.raw)])]
        if b.stats is not None:  # intervals, outcomes and shared resamples, worked out once (board_stats)
            writes.append(("INSERT INTO bundle_intervals(bundle_id, intervals, outcomes, resampled) VALUES (?,?,?,?)",
                           [bundle_id, json.dumps(b.stats["intervals"]), json.dumps(b.stats["outcomes"]),
                            json.dumps(b.stats["resampled"])]))
        writes.append(cls._board_upsert(b))
        c.write_all(writes)
        return {"bundle_id": bundle_id, "seq": seq, "entry_hash": entry, "received_at": received}

    @staticmethod
    def _board_upsert(b: CheckedBundle) -> tuple[str, list[Any]]:
        # A row belongs to (task, model, submitter key): no other key's upload can touch it. Within it, the
        # bundle created latest (as a time, not as text) wins, whatever order the uploads arrive in.
        return ("INSERT INTO board(task, model_name, key_fingerprint, bundle_id, created_at, model_digest,"
                " metrics, created_us, datasets) VALUES (?,?,?,?,?,?,?,?,?)"
                " ON CONFLICT(task, model_name, key_fingerprint) DO UPDATE SET"
                " bundle_id = excluded.bundle_id, created_at = excluded.created_at,"
                " model_digest = excluded.model_digest, metrics = excluded.metrics,"
                " created_us = excluded.created_us, datasets = excluded.datasets"
                " WHERE excluded.created_us >= board.created_us",
                [b.task, b.model_name, b.key_fingerprint, b.bundle_id, b.created_at, b.model_digest,
                 json.dumps(b.metrics), b.created_us, json.dumps(b.datasets)])

    @classmethod
    def _upsert_board(cls, c: Tx, b: CheckedBundle) -> None:
        c.execute(*cls._board_upsert(b))

    def accept_attestation(self, a: CheckedAttestation, entry_hash_fn: EntryHash) -> dict[str, Any]:
        """Store a verified attestation and append it to the log, atomically."""
        with self.tx() as c:
            if c.execute("SELECT 1 FROM attestations WHERE id = ?", [a.attestation_id]).fetchone():
                raise ReplayError(f"attestation {a.attestation_id} was already accepted")
            if c.execute("SELECT 1 FROM attestations a JOIN bundles b ON b.id = a.bundle_id"
                         " WHERE a.auditor_fingerprint = ? AND (a.bundle_id = ? OR b.claim_key ="
                         " (SELECT claim_key FROM bundles WHERE id = ?))",
                         [a.auditor_fingerprint, a.bundle_id, a.bundle_id]).fetchone():
                raise AttestationError(f"auditor {a.auditor_fingerprint} has already attested bundle {a.bundle_id}"
                                       " or the same results (the same claim: every signed field but the time) in"
                                       " another bundle")
            seq, entry, received = self._append_log(c, entry_hash_fn, a.attestation_id, a.sha256, "attestation")
            c.execute("INSERT INTO attestations(id, seq, bundle_id, auditor_fingerprint, verdict, summary, created_at,"
                      " received_at, raw) VALUES (?,?,?,?,?,?,?,?,?)",
                      [a.attestation_id, seq, a.bundle_id, a.auditor_fingerprint, a.verdict, json.dumps(a.summary),
                       a.created_at, received, a.raw])
        if self.checkpointer is not None:
            self.checkpointer.committed()
        return {"attestation_id": a.attestation_id, "seq": seq, "entry_hash": entry, "received_at": received}

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

    def key_stored_bytes(self, fingerprint: str) -> int:
        """Bytes of every bundle this key has stored (its quota's use): one row that every upload adds to."""
        with self.lock:
            row = self.conn.execute("SELECT stored_bytes FROM key_usage WHERE fingerprint = ?",
                                    [fingerprint]).fetchone()
        return int(row[0]) if row else 0

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

    def log_head(self) -> tuple[int, str]:
        with self.lock:
            row = self.conn.execute("SELECT seq, entry_hash FROM log ORDER BY seq DESC LIMIT 1").fetchone()
        return (row[0], row[1]) if row else (0, "0" * 64)

    def log_entry_of(self, doc_id: str) -> dict[str, Any] | None:
        """The transparency-log entry of one bundle or attestation (the board's model page shows it)."""
        cols = ("seq", "bundle_id", "bundle_sha256", "received_at", "prev_hash", "entry_hash", "kind")
        with self.lock:
            row = self.conn.execute(f"SELECT {', '.join(cols)} FROM log WHERE bundle_id = ?", [doc_id]).fetchone()
        return dict(zip(cols, row)) if row else None
