"""Accepting verified documents: a bundle (its row, its log entry, key usage and board row in one transaction),
a bulk import, an attestation. The checks happen before (:mod:`dynadesk.sync.server.ingest`); here the writes."""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import Any

from dynadesk.errors import AttestationError, ReplayError
from dynadesk.sync.format.timestamps import utc_now_text
from dynadesk.sync.server.backend import Tx
from dynadesk.sync.server.db_core import DBCore
from dynadesk.sync.server.records import CheckedAttestation, CheckedBundle, EntryHash


class IngestTables(DBCore):
    """The write side of bundles, attestations and the board table."""

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

