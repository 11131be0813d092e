"""Background WAL checkpointing for the server database, off the upload path.

With SQLite's automatic checkpoint, every ~1000 WAL pages one unlucky commit copies
the WAL into the database file and fsyncs both (tens of milliseconds on a busy disk),
which is where most upload wall time went. The server instead turns the automatic
checkpoint off on its serving connection and runs ``PRAGMA wal_checkpoint(PASSIVE)``
from this thread on its own connection: a passive checkpoint never blocks readers or
writers, and SQLite drops the GIL while it copies and fsyncs. A second, short pass under
the writers' file lock copies what was committed meanwhile, so the WAL can start over
(it stays around ``EVERY_COMMITS`` commits long instead of growing). Durability is unchanged:
a commit is in the WAL (which survives a killed process) before it is acknowledged,
whoever later copies it into the main file.
"""

from __future__ import annotations

import fcntl
import os
import sqlite3
import threading
from pathlib import Path

EVERY_COMMITS = 200  # checkpoint after this many commits (~8 MB of WAL at ~10 4-KiB pages each) ...
MAX_DELAY_S = 1.0    # ... or this long after the first commit not yet checkpointed
IDLE_EXIT_S = 30.0   # the thread ends after this long without commits; the next commit starts a new one
WAL_SIZE_LIMIT = 16 << 20  # journal_size_limit: a reset WAL file is truncated to at most this


class Checkpointer:
    """A daemon thread that checkpoints ``path``'s WAL after commits reported with :meth:`committed`.

    The thread runs only while commits come in (it ends when idle), so an app that is dropped without
    a shutdown (tests) does not leave a thread behind for good."""

    def __init__(self, path: Path, every: int = EVERY_COMMITS, max_delay: float = MAX_DELAY_S,
                 idle_exit: float = IDLE_EXIT_S):
        self.path, self.every, self.max_delay, self.idle_exit = path, every, max_delay, idle_exit
        self.pending = 0  # commits since the last checkpoint (approximate under threads; only a trigger)
        self.checkpoints = 0
        self._stop = threading.Event()
        self._wake = threading.Event()
        self._lock = threading.Lock()
        self._thread: threading.Thread | None = None

    def committed(self, n: int = 1) -> None:
        """Called after each commit; starts the thread if needed, wakes it once enough have piled up."""
        with self._lock:
            self.pending += n
            if self._thread is None and not self._stop.is_set():
                self._thread = threading.Thread(target=self._run, name=f"wal-checkpoint {self.path.name}",
                                                daemon=True)
                self._thread.start()
        if self.pending >= self.every:
            self._wake.set()

    def _checkpoint(self, conn: sqlite3.Connection) -> None:
        """Copy the WAL without blocking anyone, then finish the few frames committed meanwhile while
        holding the writers' file lock. Without that second step a steady stream of uploads keeps the
        newest frames un-copied, SQLite can never start the WAL over, and the file grows without bound."""
        self.pending = 0
        try:
            conn.execute("PRAGMA wal_checkpoint(PASSIVE)").fetchall()
            fcntl.flock(self._lock_fd, fcntl.LOCK_EX)
            try:
                conn.execute("PRAGMA wal_checkpoint(PASSIVE)").fetchall()
            finally:
                fcntl.flock(self._lock_fd, fcntl.LOCK_UN)
            self.checkpoints += 1
        except sqlite3.Error:
            pass  # busy (another worker is checkpointing) or closing: the next round catches up

    def _run(self) -> None:
        try:
            self._lock_fd = os.open(str(self.path) + ".lock", os.O_RDWR | os.O_CREAT, 0o600)
        except OSError:
            with self._lock:
                self._thread = None
            return
        try:
            conn = sqlite3.connect(str(self.path), timeout=30, check_same_thread=False, isolation_level=None)
            conn.execute("PRAGMA busy_timeout=30000")
            conn.execute(f"PRAGMA journal_size_limit={WAL_SIZE_LIMIT}")
        except sqlite3.Error:
            os.close(self._lock_fd)
            with self._lock:
                self._thread = None  # the next commit tries again
            return
        idle = 0.0
        try:
            while not self._stop.is_set():
                self._wake.wait(self.max_delay)
                self._wake.clear()
                if self.pending:
                    self._checkpoint(conn)
                    idle = 0.0
                    continue
                idle += self.max_delay
                if idle >= self.idle_exit:
                    with self._lock:
                        if not self.pending:
                            self._thread = None
                            return
            if self.pending:
                self._checkpoint(conn)
        finally:
            conn.close()
            os.close(self._lock_fd)

    def stop(self) -> None:
        """Checkpoint what is left and end the thread (a later commit starts a new one)."""
        with self._lock:
            self._stop.set()
            thread = self._thread
        self._wake.set()
        if thread is not None:
            thread.join(timeout=60)
        with self._lock:
            self._thread = None
            self._stop.clear()
