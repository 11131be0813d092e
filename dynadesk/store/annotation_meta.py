"""SQL for the metadata fields a task file declares for annotation (``metadata.create`` / ``metadata.validate``).

Why a table of its own: the values belong to an example or a vote (by its uid) but are not part of what the
example's HMAC or a signed pack covers (they are a person's notes, like the explanation, and older packs carry
none); keeping them beside the rows, one JSON object per uid, leaves those formats as they are. The values were
checked against the task's declaration (:func:`dynadesk.task_extras.check_metadata`) before they get here.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping
from typing import TYPE_CHECKING

from sqlite_utils import Database, Migrations

from dynadesk.store.datasets import now_iso

if TYPE_CHECKING:
    from dynadesk.store import Store

migrations = Migrations("dynadesk.annotation_meta")

KINDS = ("example", "validation")


@migrations()
def m001_annotation_metadata(db: Database) -> None:
    """One row per example or vote that was given metadata values."""
    db.execute("""
        CREATE TABLE annotation_metadata (
            uid TEXT PRIMARY KEY,
            kind TEXT NOT NULL CHECK (kind IN ('example', 'validation')),
            fields TEXT NOT NULL,
            created_at TEXT NOT NULL
        )""")


def put(db: Database, uid: str, kind: str, fields: Mapping[str, str]) -> None:
    """Store ``fields`` for the example or vote ``uid`` (inside the caller's transaction); nothing for none."""
    if fields:
        db.execute("INSERT OR REPLACE INTO annotation_metadata(uid, kind, fields, created_at) VALUES (?,?,?,?)",
                   [uid, kind, json.dumps(dict(fields), ensure_ascii=False, sort_keys=True), now_iso()])


def of(store: Store, uids: Iterable[str]) -> dict[str, dict[str, str]]:
    """The stored values of each of ``uids`` that has any."""
    wanted = list(dict.fromkeys(uids))
    out: dict[str, dict[str, str]] = {}
    for i in range(0, len(wanted), 500):
        chunk = wanted[i:i + 500]
        marks = ",".join("?" * len(chunk))
        for uid, fields in store.db.execute(
                f"SELECT uid, fields FROM annotation_metadata WHERE uid IN ({marks})", chunk):
            out[str(uid)] = json.loads(fields)
    return out


def attach(store: Store) -> None:
    """Nothing to attach: the functions above take the store or its database."""
