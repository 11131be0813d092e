"""The operator's say over the public board (issue 32): each task's default hardware class and the rows
pinned as exchange-rate references. The SQL over ``board_defaults`` and ``reference_pins`` (migration
``m006_default_view``) lives here, beside :mod:`dynadesk.sync.server.db`.

A board query reads :meth:`OperatorView.settings` on every request, so it is cached until the
database changes in any process (the same check as ``db.board_rows``: both tables bump
``meta.config_version``, so PostgreSQL notices too).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from dynadesk.errors import ConfigError, NotFoundError
from dynadesk.sync.format.timestamps import utc_now_text
from dynadesk.sync.server.db import ServerDB
from dynadesk.sync.server.versioned_cache import VersionedCache

MAX_CLASS_CHARS = 256  # as an attestation's hardware_class


@dataclass(frozen=True)
class ViewSettings:
    """One task's operator settings: the default class (None: chosen automatically) and pinned bundle ids."""

    default_class: str | None = None
    default_set_at: str | None = None
    pins: dict[str, str] = field(default_factory=dict)  # bundle id -> the operator's note


class OperatorView:
    """Read and change the operator's settings of one server database."""

    def __init__(self, db: ServerDB):
        self.db = db
        self._cache: VersionedCache[str, ViewSettings] = VersionedCache()

    # ------------------------------------------------------------------ default hardware class
    def set_default_class(self, task: str, hardware_class: str | None) -> None:
        """Set (or, with None, unset) the class a task's board opens on."""
        if hardware_class is not None and not (0 < len(hardware_class) <= MAX_CLASS_CHARS
                                               and hardware_class.strip() == hardware_class):
            raise ConfigError(f"a hardware class has 1 to {MAX_CLASS_CHARS} characters and no surrounding spaces,"
                              f" got {hardware_class!r:.80}")
        with self.db.tx() as c:
            if hardware_class is None:
                if c.execute("DELETE FROM board_defaults WHERE task = ?", [task]).rowcount == 0:
                    raise NotFoundError(f"task '{task}' has no default class set by the operator")
            else:
                c.execute("INSERT INTO board_defaults(task, hardware_class, set_at) VALUES (?,?,?)"
                          " ON CONFLICT(task) DO UPDATE SET hardware_class = excluded.hardware_class,"
                          " set_at = excluded.set_at", [task, hardware_class, utc_now_text()])
        self._forget()

    def default_classes(self) -> dict[str, dict[str, str]]:
        """task -> {"hardware_class", "set_at"} for every task the operator set."""
        with self.db.lock:
            rows = self.db.conn.execute("SELECT task, hardware_class, set_at FROM board_defaults ORDER BY task"
                                        ).fetchall()
        return {str(r[0]): {"hardware_class": str(r[1]), "set_at": str(r[2])} for r in rows}

    # ------------------------------------------------------------------ pinned reference rows
    def pin(self, bundle_id: str, note: str = "") -> dict[str, Any]:
        """Pin an accepted bundle's row as an exchange-rate reference of its task's board."""
        if len(note) > 500:
            raise ConfigError("a pin's note has at most 500 characters")
        with self.db.tx() as c:
            row = c.execute("SELECT task, model_name FROM bundles WHERE id = ?", [bundle_id]).fetchone()
            if row is None:
                raise NotFoundError(f"no accepted bundle with id {bundle_id} (pin a bundle id from /api/bundles)")
            c.execute("INSERT INTO reference_pins(bundle_id, task, note, pinned_at) VALUES (?,?,?,?)"
                      " ON CONFLICT(bundle_id) DO UPDATE SET note = excluded.note",
                      [bundle_id, row[0], note, utc_now_text()])
        self._forget()
        return {"bundle_id": bundle_id, "task": str(row[0]), "model": str(row[1]), "note": note}

    def unpin(self, bundle_id: str) -> None:
        with self.db.tx() as c:
            if c.execute("DELETE FROM reference_pins WHERE bundle_id = ?", [bundle_id]).rowcount == 0:
                raise NotFoundError(f"bundle {bundle_id} is not pinned as a reference row")
        self._forget()

    def pins(self, task: str | None = None) -> list[dict[str, Any]]:
        """Pinned rows (oldest first) with their model and submitter key; a pin outlives a row its key replaced,
        but then sets no rate (the board's row is the newer bundle)."""
        cols = ("bundle_id", "task", "note", "pinned_at", "model", "key_fingerprint")
        with self.db.lock:
            rows = self.db.conn.execute(
                "SELECT p.bundle_id, p.task, p.note, p.pinned_at, b.model_name, b.key_fingerprint"
                " FROM reference_pins p JOIN bundles b ON b.id = p.bundle_id"
                " WHERE CAST(? AS TEXT) IS NULL OR p.task = ? ORDER BY p.pinned_at, p.bundle_id",
                [task, task]).fetchall()
        return [dict(zip(cols, r)) for r in rows]

    # ------------------------------------------------------------------ what a board query reads
    def settings(self, task: str) -> ViewSettings:
        """The task's settings, cached until the database changes."""
        return self._cache.get(task, self.db.board_version(), lambda: self._read_settings(task))

    def _read_settings(self, task: str) -> ViewSettings:
        with self.db.lock:
            row = self.db.conn.execute("SELECT hardware_class, set_at FROM board_defaults WHERE task = ?",
                                       [task]).fetchone()
            pins = self.db.conn.execute("SELECT bundle_id, note FROM reference_pins WHERE task = ?",
                                        [task]).fetchall()
        return ViewSettings(str(row[0]) if row else None, str(row[1]) if row else None,
                            {str(p[0]): str(p[1]) for p in pins})

    def _forget(self) -> None:
        self._cache.forget()
