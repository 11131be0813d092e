"""Signing key, score bundles and the sync queue over :mod:`dynadesk.sync`.

Creating a bundle hashes the run's predictions and syncing talks to the
network, so both run on a worker; the queue and key queries are quick.
"""

from __future__ import annotations

from pathlib import Path

from PySide6.QtCore import QObject, Signal

from dynadesk.errors import DynaDeskError
from dynadesk.gui.services.workspace import WorkspaceService


class BundlesService(QObject):
    keyChanged = Signal()
    queueChanged = Signal()
    created = Signal(object)  # Bundle
    createFailed = Signal(str)
    synced = Signal(object)  # SyncReport
    syncFailed = Signal(str)

    def __init__(self, ws: WorkspaceService, parent: QObject | None = None):
        super().__init__(parent)
        self._ws = ws
        self.syncing = False
        ws.opened.connect(lambda _h: (self.keyChanged.emit(), self.queueChanged.emit()))  # type: ignore[func-returns-value]

    # ---------------------------------------------------------------- keys
    def key_info(self):
        """The workspace key, or None when there is none yet (other key errors are raised)."""
        from dynadesk.sync.format.keys import PRIVATE_NAME, PUBLIC_NAME, key_info

        kd = self._ws.workspace.keys_dir
        if not (kd / PRIVATE_NAME).exists() and not (kd / PUBLIC_NAME).exists():
            return None
        return key_info(kd)

    def generate_key(self, passphrase: str | None = None, force: bool = False):
        from dynadesk.sync.format.keys import generate_key

        info = generate_key(self._ws.workspace.keys_dir, passphrase or None, force=force)
        self.keyChanged.emit()
        return info

    # -------------------------------------------------------------- bundles
    def bundles(self):
        return self._ws.store.bundles.list()

    def runs_to_bundle(self):
        """Succeeded runs, newest first (only they can be bundled)."""
        return self._ws.store.evaluations.list(status="succeeded")

    def create(self, run_id: int, passphrase: str | None = None, out: str | None = None) -> None:
        ws = self._ws

        def job(store):
            from dynadesk.sync.client.create import create_bundle

            return create_bundle(ws.workspace, store, run_id, passphrase or None, out=out or None)

        ws.run_with_store(job, on_result=self._on_created, on_error=self.createFailed.emit)

    def _on_created(self, bundle) -> None:
        self.queueChanged.emit()
        self.created.emit(bundle)

    def requeue(self, bundle_id: str) -> None:
        self._ws.store.bundles.requeue(bundle_id)
        self.queueChanged.emit()

    def sync(self, server: str | None) -> None:
        if self.syncing:
            return
        self.syncing = True

        def job(store):
            from dynadesk.sync.client.upload import sync_queue

            return sync_queue(store, server or None)

        self._ws.run_with_store(job, on_result=self._on_synced, on_error=self._on_sync_failed,
                                on_done=self._sync_done)

    def _sync_done(self) -> None:
        self.syncing = False
        self.queueChanged.emit()

    def _on_synced(self, report) -> None:
        self.synced.emit(report)

    def _on_sync_failed(self, message: str) -> None:
        self.syncFailed.emit(message)

    # ---------------------------------------------------------------- audit
    @staticmethod
    def verify_file(path: str | Path):
        """Parse and verify a bundle file: returns the Bundle, raises a BundleError naming the problem."""
        from dynadesk.sync.format.envelope import parse_bundle, verify_bundle

        p = Path(path)
        try:
            raw = p.read_bytes()
        except OSError as exc:
            raise DynaDeskError(f"cannot read {p}: {exc}") from exc
        bundle = parse_bundle(raw, str(p))
        verify_bundle(bundle)
        return bundle
