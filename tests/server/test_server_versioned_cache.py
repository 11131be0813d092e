"""The server's per-task caches (the operator's settings, the current rate edition) are one VersionedCache: a value
is read once per board version, read again when the version moves, and dropped when this process changes it. On a
real server database: a pin made through a second connection (another process's commit) is seen at once."""

from __future__ import annotations

from dynadesk.sync.server.db import ServerDB
from dynadesk.sync.server.operator_view import OperatorView
from dynadesk.sync.server.versioned_cache import VersionedCache


def test_a_value_is_read_once_per_version_and_again_after_it_moves_or_is_forgotten():
    cache: VersionedCache[str, str | None] = VersionedCache()
    reads: list[str] = []

    def read(value: str | None):
        def go() -> str | None:
            reads.append(str(value))
            return value
        return go

    assert cache.get("nli", 1, read(None)) is None
    assert cache.get("nli", 1, read("never read")) is None  # a kept None is a value, not a miss
    assert cache.get("nli", 2, read("b")) == "b"
    assert cache.get("sentiment", 2, read("c")) == "c"
    cache.forget("nli")
    assert cache.get("nli", 2, read("d")) == "d"
    assert cache.get("sentiment", 2, read("never read")) == "c"
    cache.forget()
    assert cache.get("sentiment", 2, read("e")) == "e"
    assert reads == ["None", "b", "c", "d", "e"]


def test_the_operator_view_sees_a_default_class_set_through_another_connection(tmp_path):
    path = str(tmp_path / "server.db")
    served, admin = ServerDB(path), ServerDB(path)
    try:
        view = OperatorView(served)
        assert view.settings("sentiment").default_class is None
        assert view.settings("sentiment") is view.settings("sentiment")  # kept while nothing changed
        OperatorView(admin).set_default_class("sentiment", "cpu-x86")
        assert view.settings("sentiment").default_class == "cpu-x86"
    finally:
        served.close()
        admin.close()
