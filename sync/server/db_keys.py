"""Keys, organisations and accepted datasets: the tables an admin changes (``dynadesk-server keys|orgs|datasets``)
and every upload reads, through a per-process cache revalidated by ``meta.config_version`` (see
:mod:`dynadesk.sync.server.db`)."""

from __future__ import annotations

from typing import Any

from dynadesk.errors import AlreadyExistsError, ConfigError, NotFoundError
from dynadesk.sync.format.timestamps import utc_now_text
from dynadesk.sync.server.db_core import _ANY_TASK, _KEY_COLS, DBCore
from dynadesk.sync.server.records import ROLES, KeyRow, UploadConfig


class KeyTables(DBCore):
    """The admin-managed tables and the upload configuration cached from them."""

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
                return cached[1]
        return self.upload_state("")[0]

    def upload_state(self, fingerprint: str) -> tuple[UploadConfig, int]:
        """:meth:`upload_config` and :meth:`key_stored_bytes` of ``fingerprint`` together: on PostgreSQL the
        cache's check and the key's usage are one round trip (an upload's first read), not two."""
        with self.lock:
            # one statement per upload: the triggers bump meta.config_version on every change to the keys or the
            # datasets, so SQLite's PRAGMA data_version (changed by every other process's upload as well, and then
            # followed by this very query anyway) no longer comes first
            cached = self._config
            row = self.conn.execute("SELECT (SELECT value FROM meta WHERE key = 'config_version'),"
                                    " (SELECT stored_bytes FROM key_usage WHERE fingerprint = ?)",
                                    [fingerprint]).fetchone()
            config_version = str(row[0]) if row and row[0] is not None else None
            used = int(row[1]) if row and row[1] is not None else 0
            if cached is not None and cached[0] == config_version:
                return cached[1], used
            keys = {k.fingerprint: k for k in self.list_keys()}
            datasets: dict[str, dict[tuple[str, str], dict[str, Any]]] = {}
            for d in self.datasets():
                datasets.setdefault(d["task"], {})[(d["task"], d["name"])] = d
            superseded = {(v["task"], v["name"], v["digest"]): v for v in self.dataset_versions()}
            config = UploadConfig(keys, datasets, superseded)
            if config_version is not None:  # a store without the counter (never after m002) is read every time
                self._config = (config_version, config)
            return config, used


    def key_stored_bytes(self, fingerprint: str) -> int:
        """Bytes of every bundle this key has stored (its quota's use): one row that every upload adds to."""
        with self.lock:
            row = self.conn.execute("SELECT stored_bytes FROM key_usage WHERE fingerprint = ?",
                                    [fingerprint]).fetchone()
        return int(row[0]) if row else 0
