"""SQL for datasets and their examples."""

from __future__ import annotations

import builtins
import json
from collections.abc import Iterator
from datetime import UTC, datetime
from typing import Any

from sqlite_utils import Database, Migrations

from dynadesk.datasets import DatasetOrigin, DatasetSummary
from dynadesk.errors import AlreadyExistsError, NotFoundError
from dynadesk.names import check_name
from dynadesk.store.core import Repo

migrations = Migrations("dynadesk.datasets")


def now_iso() -> str:
    return datetime.now(UTC).isoformat(timespec="milliseconds")


@migrations()
def m001_datasets(db: Database) -> None:
    db.execute("""
        CREATE TABLE datasets (
            id INTEGER PRIMARY KEY,
            name TEXT NOT NULL UNIQUE,
            task TEXT NOT NULL,
            split TEXT NOT NULL,
            digest TEXT NOT NULL,
            size INTEGER NOT NULL,
            label_counts TEXT NOT NULL DEFAULT '{}',
            source TEXT NOT NULL DEFAULT '',
            derived_from INTEGER REFERENCES datasets(id) ON DELETE CASCADE,
            derivation TEXT,
            created_at TEXT NOT NULL
        )""")
    db.execute("""
        CREATE TABLE examples (
            dataset_id INTEGER NOT NULL REFERENCES datasets(id) ON DELETE CASCADE,
            position INTEGER NOT NULL,
            example_id TEXT NOT NULL,
            data TEXT NOT NULL,
            PRIMARY KEY (dataset_id, example_id)
        )""")
    db.execute("CREATE UNIQUE INDEX examples_order ON examples(dataset_id, position)")
    db.execute("CREATE INDEX datasets_task ON datasets(task)")


@migrations()
def m002_unanswerable_left_out(db: Database) -> None:
    """How many unanswerable questions an import left out (SQuAD 2.0 without --squad-v2): such a dataset is
    answerable-only, and the dataset record, its bundles and the board say so."""
    db.execute("ALTER TABLE datasets ADD COLUMN unanswerable_left_out INTEGER NOT NULL DEFAULT 0")


def _summary(row: dict[str, Any], parent_name: str | None = None) -> DatasetSummary:
    return DatasetSummary(
        name=row["name"], task=row["task"], split=row["split"], size=row["size"], digest=row["digest"],
        label_counts=json.loads(row["label_counts"] or "{}"), source=row["source"],
        derived_from=parent_name, derivation=json.loads(row["derivation"]) if row["derivation"] else None,
        created_at=row["created_at"], unanswerable_left_out=int(row.get("unanswerable_left_out") or 0),
    )


class DatasetRepo(Repo):
    def add(self, name: str, task: str, split: str, examples: list[dict[str, Any]], digest: str,
            label_counts: dict[str, int], origin: DatasetOrigin | None = None,
            replace: bool = False) -> DatasetSummary:
        """Store a dataset and all its examples in one transaction (``origin``: where it came from, nothing known
        when not given; its ``unanswerable_left_out`` makes it answerable-only)."""
        check_name(name, "dataset name")
        origin = origin or DatasetOrigin()
        source, derived_from, derivation = origin.source, origin.derived_from, origin.derivation
        unanswerable_left_out = origin.unanswerable_left_out
        with self._store.atomic() as db:
            existing = db.execute("SELECT id FROM datasets WHERE name = ?", [name]).fetchone()
            if existing:
                if not replace:
                    raise AlreadyExistsError(f"a dataset named '{name}' already exists (use another name or --replace)")
                db.execute("DELETE FROM datasets WHERE id = ?", [existing[0]])
            parent_id = None
            if derived_from is not None:
                parent_id = self._id(derived_from)
            cur = db.execute(
                "INSERT INTO datasets(name, task, split, digest, size, label_counts, source, derived_from,"
                " derivation, created_at, unanswerable_left_out) VALUES (?,?,?,?,?,?,?,?,?,?,?)",
                [name, task, split, digest, len(examples), json.dumps(label_counts), source, parent_id,
                 json.dumps(derivation) if derivation is not None else None, now_iso(), int(unanswerable_left_out)])
            ds_id = cur.lastrowid
            db.conn.executemany(
                "INSERT INTO examples(dataset_id, position, example_id, data) VALUES (?,?,?,?)",
                ((ds_id, i, ex["id"], json.dumps(ex, ensure_ascii=False)) for i, ex in enumerate(examples)))
        return self.get(name)

    def _id(self, name: str) -> int:
        row = self.db.execute("SELECT id FROM datasets WHERE name = ?", [name]).fetchone()
        if not row:
            raise NotFoundError(f"no dataset named '{name}'")
        return int(row[0])

    def get(self, name: str) -> DatasetSummary:
        rows = list(self.db.query(
            "SELECT d.*, p.name AS parent_name FROM datasets d LEFT JOIN datasets p ON p.id = d.derived_from"
            " WHERE d.name = ?", [name]))
        if not rows:
            raise NotFoundError(f"no dataset named '{name}'")
        return _summary(rows[0], rows[0]["parent_name"])

    def exists(self, name: str) -> bool:
        return self.db.execute("SELECT 1 FROM datasets WHERE name = ?", [name]).fetchone() is not None

    def list(self, task: str | None = None, include_derived: bool = True) -> list[DatasetSummary]:
        sql = ("SELECT d.*, p.name AS parent_name FROM datasets d LEFT JOIN datasets p ON p.id = d.derived_from"
               " WHERE (? IS NULL OR d.task = ?)")
        if not include_derived:
            sql += " AND d.derived_from IS NULL"
        sql += " ORDER BY d.task, d.name"
        return [_summary(r, r["parent_name"]) for r in self.db.query(sql, [task, task])]

    def derived(self, name: str) -> builtins.list[DatasetSummary]:
        parent = self._id(name)
        rows = self.db.query("SELECT d.*, ? AS parent_name FROM datasets d WHERE d.derived_from = ? ORDER BY d.name",
                             [name, parent])
        return [_summary(r, r["parent_name"]) for r in rows]

    def examples(self, name: str) -> builtins.list[dict[str, Any]]:
        return list(self.iter_examples(name))

    def iter_examples(self, name: str) -> Iterator[dict[str, Any]]:
        ds_id = self._id(name)
        for (data,) in self.db.execute("SELECT data FROM examples WHERE dataset_id = ? ORDER BY position", [ds_id]):
            yield json.loads(data)

    def remove(self, name: str) -> None:
        with self._store.atomic() as db:
            db.execute("DELETE FROM datasets WHERE id = ?", [self._id(name)])
