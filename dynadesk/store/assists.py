"""SQL of the generative annotation assistant's use: one row per example written from a draft it proposed.

Kept in its own table beside ``annotated_examples`` (a row per assisted example, removed with it), so an example
without a row was written without the assistant, and the examples' signed fields are unchanged.
"""

from __future__ import annotations

import builtins
from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from sqlite_utils import Database, Migrations

from dynadesk.store.core import Repo
from dynadesk.store.datasets import now_iso

if TYPE_CHECKING:
    from dynadesk.store import Store

migrations = Migrations("dynadesk.assists")


@migrations()
def m001_example_assists(db: Database) -> None:
    db.execute("""
        CREATE TABLE example_assists (
            example_uid TEXT PRIMARY KEY REFERENCES annotated_examples(uid) ON DELETE CASCADE,
            model_name TEXT NOT NULL,
            field TEXT NOT NULL,
            draft TEXT NOT NULL,
            similarity REAL NOT NULL CHECK (similarity >= 0 AND similarity <= 1),
            created_at TEXT NOT NULL
        )""")


@dataclass(frozen=True)
class Assist:
    """The assistant's part in one example: the model, the field it drafted, its draft and how much of it was kept
    (``similarity`` 1.0: submitted unedited)."""

    example_uid: str
    model_name: str
    field: str
    draft: str
    similarity: float
    created_at: str

    @property
    def edited(self) -> bool:
        return self.similarity < 1.0

    def to_dict(self) -> dict[str, Any]:
        return {"model": self.model_name, "field": self.field, "draft": self.draft, "similarity": self.similarity,
                "edited": self.edited}


class AssistRepo(Repo):
    def record(self, example_uid: str, model_name: str, field: str, draft: str, similarity: float) -> Assist:
        row = Assist(example_uid, model_name, field, draft, float(similarity), now_iso())
        self.db.execute("INSERT INTO example_assists(example_uid, model_name, field, draft, similarity, created_at)"
                        " VALUES (?, ?, ?, ?, ?, ?)",
                        [row.example_uid, row.model_name, row.field, row.draft, row.similarity, row.created_at])
        return row

    def of(self, example_uids: Sequence[str]) -> dict[str, Assist]:
        """The assisted ones among ``example_uids`` (a few hundred at a time: SQLite's variable limit)."""
        out: dict[str, Assist] = {}
        uids = list(example_uids)
        for start in range(0, len(uids), 500):
            chunk = uids[start:start + 500]
            rows = self.db.execute(
                "SELECT example_uid, model_name, field, draft, similarity, created_at FROM example_assists WHERE "
                f"example_uid IN ({', '.join('?' * len(chunk))})", chunk).fetchall()
            out.update({r[0]: Assist(*r) for r in rows})
        return out

    def all(self) -> builtins.list[dict[str, Any]]:
        rows = self.db.execute("SELECT example_uid, model_name, field, draft, similarity, created_at "
                               "FROM example_assists ORDER BY created_at").fetchall()
        return [{"example_uid": r[0], **Assist(*r).to_dict()} for r in rows]


def attach(store: Store) -> None:
    store.assists = AssistRepo(store)
