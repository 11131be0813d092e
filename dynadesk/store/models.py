"""SQL for registered models.

A model folder inside the workspace is stored relative to it, so a workspace
copied (``cp -a``) or moved to another path serves its models from there; a
folder outside it is stored absolute (``dynadesk models relocate`` moves it).
Records always carry the absolute path.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from sqlite_utils import Database, Migrations

from dynadesk.errors import AlreadyExistsError, NotFoundError
from dynadesk.store.core import Record, Repo
from dynadesk.store.datasets import now_iso
from dynadesk.store.paths import resolve_stored, stored_path

if TYPE_CHECKING:
    from dynadesk.store import Store

migrations = Migrations("dynadesk.models")


@migrations()
def m001_models(db: Database) -> None:
    db.execute("""
        CREATE TABLE models (
            id INTEGER PRIMARY KEY,
            name TEXT NOT NULL UNIQUE,
            task TEXT NOT NULL,
            kind TEXT NOT NULL,
            path TEXT NOT NULL,
            digest TEXT NOT NULL,
            manifest TEXT NOT NULL DEFAULT '{}',
            has_pickle INTEGER NOT NULL DEFAULT 0,
            info TEXT NOT NULL DEFAULT '{}',
            created_at TEXT NOT NULL
        )""")



@migrations()
def m002_relative_model_paths(db: Database) -> None:
    """Folders inside the workspace, recorded absolute by older versions, become relative to it."""
    home = _database_folder(db)
    if home is None:
        return
    for model_id, path in db.execute("SELECT id, path FROM models").fetchall():
        db.execute("UPDATE models SET path = ? WHERE id = ?", [stored_path(home, path), model_id])


def _database_folder(db: Database) -> Path | None:
    """The folder of the main database file (None for an in-memory database)."""
    for _, name, file in db.execute("PRAGMA database_list").fetchall():
        if name == "main" and file:
            return Path(file).parent
    return None

@dataclass
class ModelRecord(Record):
    id: int
    name: str
    task: str
    kind: str
    path: str
    digest: str
    manifest: dict[str, Any] = field(default_factory=dict)
    has_pickle: bool = False
    info: dict[str, Any] = field(default_factory=dict)  # e.g. dev scores from the zoo build
    created_at: str = ""


@dataclass(frozen=True)
class ModelExtras:
    """What a registration records beside the folder's manifest: whether its weights are pickle files only (then
    it is evaluated only in the sandbox, never loaded on the host) and free ``info`` (the zoo's dev scores, a served
    model's endpoint). One value, so :meth:`ModelRepo.add` takes the checked folder's facts and these notes."""

    has_pickle: bool = False
    info: dict[str, Any] | None = None


def _record(row: dict[str, Any], home: Path | None) -> ModelRecord:
    path = str(resolve_stored(home, row["path"])) if home is not None else row["path"]
    return ModelRecord(id=row["id"], name=row["name"], task=row["task"], kind=row["kind"], path=path,
                       digest=row["digest"], manifest=json.loads(row["manifest"]), has_pickle=bool(row["has_pickle"]),
                       info=json.loads(row["info"]), created_at=row["created_at"])


class ModelRepo(Repo):
    @property
    def _home(self) -> Path | None:
        return Path(self._store.path).parent if self._store.path is not None else None

    def _stored(self, path: str) -> str:
        return stored_path(self._home, path) if self._home is not None else path

    def add(self, name: str, task: str, kind: str, path: str, digest: str, manifest: dict[str, Any],
            extras: ModelExtras | None = None, replace: bool = False) -> ModelRecord:
        """Register (or with ``replace`` re-register) a checked folder; ``extras``: none when not given."""
        has_pickle, info = (extras.has_pickle, extras.info) if extras is not None else (False, None)
        with self._store.atomic() as db:
            row = db.execute("SELECT id FROM models WHERE name = ?", [name]).fetchone()
            path = self._stored(path)
            if row and not replace:
                raise AlreadyExistsError(f"a model named '{name}' is already registered (use --name or --replace)")
            if row:
                db.execute("UPDATE models SET task=?, kind=?, path=?, digest=?, manifest=?, has_pickle=?, info=?"
                           " WHERE id=?", [task, kind, path, digest, json.dumps(manifest), int(has_pickle),
                                           json.dumps(info or {}), row[0]])
            else:
                db.execute("INSERT INTO models(name, task, kind, path, digest, manifest, has_pickle, info, created_at)"
                           " VALUES (?,?,?,?,?,?,?,?,?)", [name, task, kind, path, digest, json.dumps(manifest),
                                                           int(has_pickle), json.dumps(info or {}), now_iso()])
        return self.get(name)

    def set_path(self, name: str, path: str) -> ModelRecord:
        """Point a registration at another folder (the caller checked its digest)."""
        self.get(name)
        self.db.execute("UPDATE models SET path = ? WHERE name = ?", [self._stored(path), name])
        return self.get(name)

    def set_info(self, name: str, info: dict[str, Any]) -> None:
        self.db.execute("UPDATE models SET info = ? WHERE name = ?", [json.dumps(info), name])

    def get(self, name: str) -> ModelRecord:
        rows = list(self.db.query("SELECT * FROM models WHERE name = ?", [name]))
        if not rows:
            raise NotFoundError(f"no model named '{name}' (see 'dynadesk models list')")
        return _record(rows[0], self._home)

    def get_by_id(self, model_id: int) -> ModelRecord:
        rows = list(self.db.query("SELECT * FROM models WHERE id = ?", [model_id]))
        if not rows:
            raise NotFoundError(f"no model with id {model_id}")
        return _record(rows[0], self._home)

    def exists(self, name: str) -> bool:
        return self.db.execute("SELECT 1 FROM models WHERE name = ?", [name]).fetchone() is not None

    def list(self, task: str | None = None) -> list[ModelRecord]:
        rows = self.db.query("SELECT * FROM models WHERE (? IS NULL OR task = ?) ORDER BY task, name", [task, task])
        return [_record(r, self._home) for r in rows]

    def remove(self, name: str) -> None:
        with self._store.atomic() as db:
            model = self.get(name)
            db.execute("DELETE FROM models WHERE id = ?", [model.id])


def attach(store: Store) -> None:
    store.models = ModelRepo(store)
