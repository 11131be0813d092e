"""The open workspace (folder + database) shared by every service."""

from __future__ import annotations

from pathlib import Path

from PySide6.QtCore import QObject, Signal

from dynadesk.workspace import Workspace, resolve_home


class WorkspaceService(QObject):
    """Owns the UI thread's store; workers open their own connection via :meth:`open_store`."""

    opened = Signal(str)  # the workspace home

    def __init__(self, home: str | Path | None = None, parent: QObject | None = None):
        super().__init__(parent)
        self.workspace: Workspace = Workspace(resolve_home(home)).ensure()
        self.store = self.workspace.open_store()

    @property
    def home(self) -> Path:
        return self.workspace.home

    def open_store(self):
        """A fresh connection for a worker thread (SQLite connections are not shared across threads)."""
        return self.workspace.open_store()

    def run_with_store(self, fn, *args, on_result=None, on_error=None, on_done=None, **kwargs):
        """Run ``fn(store, *args, **kwargs)`` on a pool thread with its own connection.

        ``on_result(value)`` / ``on_error(message)`` are called on the UI thread. Returns the worker.
        """
        from dynadesk.gui.workers import Worker, start

        def job(_ctx):
            store = self.open_store()
            try:
                return fn(store, *args, **kwargs)
            finally:
                store.close()

        worker = Worker(job)
        if on_result is not None:
            worker.signals.finished.connect(on_result)
        if on_error is not None:
            worker.signals.failed.connect(on_error)
        if on_done is not None:
            worker.signals.done.connect(on_done)
        return start(worker)

    def switch(self, home: str | Path) -> None:
        """Open another workspace; every service refreshes on ``opened``."""
        ws = Workspace(resolve_home(home)).ensure()
        store = ws.open_store()
        old = self.store
        self.workspace, self.store = ws, store
        old.close()
        self.opened.emit(str(ws.home))

    def close(self) -> None:
        self.store.close()
