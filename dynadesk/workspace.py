"""The workspace folder: one SQLite database plus files (data cache, models, runs, keys).

Resolution order: an explicit path (``--home``), then ``DYNADESK_HOME``, then
``~/.local/share/dynadesk``.
"""

from __future__ import annotations

import os
import stat
from dataclasses import dataclass
from pathlib import Path

from dynadesk.errors import StoreError
from dynadesk.store import Store

DEFAULT_HOME = Path("~/.local/share/dynadesk")
PRIVATE_DIR_MODE = 0o700


def resolve_home(explicit: str | os.PathLike[str] | None = None) -> Path:
    if explicit:
        return Path(explicit).expanduser().resolve()
    env = os.environ.get("DYNADESK_HOME")
    if env:
        return Path(env).expanduser().resolve()
    return DEFAULT_HOME.expanduser().resolve()


@dataclass(frozen=True)
class Workspace:
    """Paths inside one workspace; :meth:`open` creates them and opens the store."""

    home: Path

    def __post_init__(self) -> None:
        object.__setattr__(self, "home", Path(self.home).expanduser())

    @property
    def db_path(self) -> Path:
        return self.home / "dynadesk.db"

    @property
    def cache_dir(self) -> Path:
        """Downloaded archives (the pinned data recipe's input)."""
        return self.home / "cache"

    @property
    def models_dir(self) -> Path:
        """Models the workspace builds itself (the demo zoo)."""
        return self.home / "models"

    @property
    def runs_dir(self) -> Path:
        """One folder per evaluation run: spec, predictions, logs."""
        return self.home / "runs"

    @property
    def keys_dir(self) -> Path:
        return self.home / "keys"

    @property
    def bundles_dir(self) -> Path:
        return self.home / "bundles"

    @property
    def images_dir(self) -> Path:
        """Evaluator image build inputs and outputs (wheelhouse, rootfs tarballs)."""
        return self.home / "images"

    def ensure(self) -> Workspace:
        """Create the folders, owner-only (0700): they hold the database, keys, models and runs."""
        try:
            for p in (self.home, self.cache_dir, self.models_dir, self.runs_dir, self.keys_dir, self.bundles_dir,
                      self.images_dir):
                p.mkdir(parents=True, exist_ok=True, mode=PRIVATE_DIR_MODE)
                if stat.S_IMODE(p.stat().st_mode) != PRIVATE_DIR_MODE:
                    p.chmod(PRIVATE_DIR_MODE)
        except OSError as exc:
            raise StoreError(f"cannot create workspace folder {self.home}: {exc}") from exc
        return self

    def open_store(self) -> Store:
        """Create the folders if needed and open the migrated database; runs left ``running`` by a process that
        is gone (killed, the machine stopped) are marked ``interrupted`` on the way (see
        :mod:`dynadesk.store.run_owner`)."""
        from dynadesk.store.run_owner import interrupt_orphans_on_open

        self.ensure()
        store = Store.open(self.db_path)
        interrupt_orphans_on_open(store)
        return store


def open_workspace(home: str | os.PathLike[str] | None = None) -> tuple[Workspace, Store]:
    ws = Workspace(resolve_home(home)).ensure()
    return ws, ws.open_store()
