"""A write the workspace refuses reaches the app's banner as one line with the fix, not a traceback."""

from __future__ import annotations

import sqlite3

import pytest

pytestmark = pytest.mark.qt


def test_a_read_only_database_fails_a_worker_with_one_line(require_qt, tmp_path):
    from dynadesk.gui.workers import Worker

    db = tmp_path / "dynadesk.db"
    sqlite3.connect(db).execute("CREATE TABLE t (a)").connection.commit()

    def write(_ctx):
        conn = sqlite3.connect(f"file:{db}?mode=ro", uri=True)  # what a read-only workspace's database does
        try:
            conn.execute("INSERT INTO t VALUES (1)")
        finally:
            conn.close()

    messages: list[str] = []
    worker = Worker(write)
    worker.signals.failed.connect(messages.append)
    worker.run()  # on this thread: the signal is delivered at once
    assert len(messages) == 1 and "\n" not in messages[0] and "Traceback" not in messages[0]
    assert "is read-only" in messages[0] and "--home" in messages[0]
