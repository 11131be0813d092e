"""All SQL of the workspace database lives in this package (sqlite-utils).

:class:`Store` opens one SQLite file with WAL and foreign keys on, applies every
migration set in a fixed order, and exposes one repository per area
(``store.datasets``, ``store.models``, ...). Each area module holds its own
``Migrations`` set and the only SQL that touches its tables. Multi-step writes
go through :meth:`Store.atomic`, a single transaction.
"""

from __future__ import annotations

import sqlite3
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from types import ModuleType
from typing import TYPE_CHECKING

from sqlite_utils import Database

from dynadesk.errors import StoreError
from dynadesk.store import core as _core
from dynadesk.store import datasets as _datasets
from dynadesk.store.datasets import DatasetRepo

if TYPE_CHECKING:
    from dynadesk.store.annotation import AnnotationRepo
    from dynadesk.store.assists import AssistRepo
    from dynadesk.store.bundles import BundleRepo
    from dynadesk.store.evaluations import EvaluationRepo
    from dynadesk.store.hub import HubRepo
    from dynadesk.store.models import ModelRepo
    from dynadesk.store.tasks import TaskRepo

# Order matters: later sets may reference tables of earlier ones.
MIGRATION_SETS = [_core.migrations, _datasets.migrations]


def _area_modules() -> list[ModuleType]:
    """The area modules in migration order (imported here, since they import this package)."""
    from dynadesk.store import (
        annotation,
        annotation_meta,
        assists,
        bundles,
        evaluations,
        hub,
        models,
        queue_jobs,
        run_owner,
        tasks,
    )

    return [models, evaluations, annotation, bundles, tasks, hub, queue_jobs, assists, run_owner, annotation_meta]


if TYPE_CHECKING:
    from dynadesk.store.annotation import AnnotationRepo
    from dynadesk.store.bundles import BundleRepo
    from dynadesk.store.evaluations import EvaluationRepo
    from dynadesk.store.models import ModelRepo


class Store:
    # set by the area modules' attach()
    models: ModelRepo
    evaluations: EvaluationRepo
    annotation: AnnotationRepo
    bundles: BundleRepo
    tasks: TaskRepo
    hub: HubRepo
    assists: AssistRepo

    def __init__(self, db: Database, path: Path | None):
        self.db = db
        self.path = path
        self.datasets = DatasetRepo(self)
        for mod in _area_modules():
            mod.attach(self)

    @classmethod
    def open(cls, path: str | Path) -> Store:
        path = Path(path)
        try:
            _core.make_private(path)
            conn = sqlite3.connect(str(path), timeout=30, check_same_thread=False)
            db = Database(conn)
            db.execute("PRAGMA journal_mode=WAL")
            db.execute("PRAGMA foreign_keys=ON")
            db.execute("PRAGMA synchronous=NORMAL")
            db.execute("PRAGMA busy_timeout=30000")
            sets = list(MIGRATION_SETS) + [m.migrations for m in _area_modules()]
            for mset in sets:
                mset.apply(db)
        except (sqlite3.DatabaseError, OSError) as exc:
            raise StoreError(f"cannot open workspace database {path}: {exc}") from exc
        return cls(db, path)

    @contextmanager
    def atomic(self) -> Iterator[Database]:
        """One transaction for a multi-step write; rolled back on any error. A full disk is a
        :class:`StoreError` naming the database (SQLite rolls the transaction back, so nothing is half-written)."""
        with _core.disk_full_is_store_error(self.path), self.db.atomic():
            yield self.db

    def integrity_check(self) -> str:
        return str(self.db.execute("PRAGMA integrity_check").fetchone()[0])

    def get_meta(self, key: str) -> str | None:
        return _core.get_meta(self.db, key)

    def set_meta(self, key: str, value: str) -> None:
        _core.set_meta(self.db, key, value)

    def close(self) -> None:
        from dynadesk.store import tasks

        tasks.detach(self)
        self.db.close()
