"""The log is the truth: every log entry names a stored document with its exact bytes, and the
``board`` table is only a cache of what the stored bundles give (issue 32).

:func:`check_documents` re-reads every entry's bundle or attestation and checks its SHA-256 and id;
:func:`derive_board` recomputes each board row from the bundles (per task, model and key: the bundle
created latest, a later arrival winning a tie, exactly as an upload updates it); :func:`check_board`
compares that with the table, and ``dynadesk-server board rebuild`` writes it back. So an edited
``board`` table is caught by ``log verify`` and repaired from the bundles. No SQL here (db.py).
"""

from __future__ import annotations

import hashlib
import json
from typing import Any

from dynadesk.errors import DynaDeskError, LogIntegrityError
from dynadesk.sync.format.attestation import parse_attestation
from dynadesk.sync.format.envelope import parse_bundle
from dynadesk.sync.format.rate_edition import parse_edition
from dynadesk.sync.format.snapshot import parse_snapshot
from dynadesk.sync.rules.board import board_metrics
from dynadesk.sync.server.db import ServerDB

_PAGE = 2000
BoardKey = tuple[str, str, str]


def check_documents(db: ServerDB) -> int:
    """Every log entry's document is stored, hashes to the entry's SHA-256 and has the entry's id; the count."""
    seq = n = 0
    while page := db.stored_documents(seq, _PAGE):
        for seq, kind, doc_id, sha, raw in page:
            where = f"log entry {seq} ({kind} {doc_id[:16]})"
            if raw is None:
                raise LogIntegrityError(f"{where}: no stored {kind} has this id at this position")
            if hashlib.sha256(raw).hexdigest() != sha:
                raise LogIntegrityError(f"{where}: the stored bytes do not hash to the entry's {sha[:16]}...")
            try:
                parsed_id = (parse_attestation(raw) if kind == "attestation" else parse_snapshot(raw)
                             if kind == "snapshot" else parse_edition(raw) if kind == "rates"
                             else parse_bundle(raw)).id
            except DynaDeskError as exc:
                raise LogIntegrityError(f"{where}: the stored document does not parse: {exc}") from exc
            if parsed_id != doc_id:
                raise LogIntegrityError(f"{where}: the stored document's id is {parsed_id[:16]}")
            n += 1
    return n


def derive_board(db: ServerDB) -> dict[BoardKey, tuple[Any, ...]]:
    """The board rows the stored bundles give: key -> (bundle_id, created_at, model_digest, metrics, datasets,
    created_us), metrics and datasets as the JSON text an upload stores."""
    rows: dict[BoardKey, tuple[Any, ...]] = {}
    seq = 0
    while page := db.bundles_in_order(seq, _PAGE):
        for seq, raw, created_us in page:
            b = parse_bundle(raw, f"stored bundle {seq}")
            key = (b.task, b.model_name, b.key_fingerprint)
            old = rows.get(key)
            if old is None or created_us >= old[5]:
                p = b.payload
                rows[key] = (b.id, p.created_at, p.model.digest, json.dumps(board_metrics(p.metric_rows())),
                             json.dumps({d.name: d.digest for d in p.datasets}), created_us)
    return rows


def board_differences(db: ServerDB) -> list[str]:
    """Each board table row that is not what its bundles give (or is missing, or has no bundle)."""
    derived = derive_board(db)
    stored = {(r[0], r[1], r[2]): r[3:] for r in db.stored_board()}
    out = []
    for key in sorted(set(derived) | set(stored)):
        name = f"board row ({key[0]}, {key[1]!r}, {key[2][:20]})"
        if key not in stored:
            out.append(f"{name} is missing")
        elif key not in derived:
            out.append(f"{name} has no stored bundle")
        else:
            want, have = derived[key], stored[key]
            if (want[0], want[1], want[2]) != tuple(have[:3]) or json.loads(want[3]) != json.loads(have[3]) \
                    or json.loads(want[4]) != json.loads(have[4]):
                out.append(f"{name} differs from its bundles (stored bundle {str(have[0])[:16]},"
                           f" the bundles give {want[0][:16]})")
    return out


def check_board(db: ServerDB) -> int:
    """Raise :class:`LogIntegrityError` naming the rows unless the board table is what the bundles give."""
    diffs = board_differences(db)
    if diffs:
        raise LogIntegrityError("; ".join(diffs[:5]) + (f" (and {len(diffs) - 5} more)" if len(diffs) > 5 else "")
                                + ": run 'dynadesk-server board rebuild' to derive the board from the bundles")
    return len(db.stored_board())


def rebuild_board(db: ServerDB) -> int:
    """Replace the board table with the rows the stored bundles give; the number of rows."""
    rows = [(*key, *v) for key, v in sorted(derive_board(db).items())]
    db.replace_board(rows)
    return len(rows)
