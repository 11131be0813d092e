"""A per-key cache of what was read from the server database, good while the board's version is unchanged.

The operator's settings (:class:`~dynadesk.sync.server.operator_view.OperatorView`) and the current rate edition
(:class:`~dynadesk.sync.server.rate_editions.RateBook`) are read on every board query, and both change only when
the database does: each keeps its values here, stamped with ``ServerDB.board_version()`` when read, and reads again
once that version moves (another process's commit included). One lock guards the map; the read itself runs outside
it, so a slow read never holds up another key."""

from __future__ import annotations

import threading
from collections.abc import Callable, Hashable
from typing import Any, Generic, TypeVar

K = TypeVar("K", bound=Hashable)
V = TypeVar("V")

__all__ = ["VersionedCache"]


class VersionedCache(Generic[K, V]):
    """Values by key, each with the board version it was read at."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._values: dict[K, tuple[Any, V]] = {}

    def get(self, key: K, version: Any, read: Callable[[], V]) -> V:
        """``key``'s value as read at ``version``: the kept one when it was read at that version, else ``read()``,
        kept for the next call."""
        with self._lock:
            cached = self._values.get(key)
        if cached is not None and cached[0] == version:
            return cached[1]
        value = read()
        with self._lock:
            self._values[key] = (version, value)
        return value

    def forget(self, key: K | None = None) -> None:
        """Drop ``key``'s value (every value when None): this process just changed what it was read from."""
        with self._lock:
            if key is None:
                self._values.clear()
            else:
                self._values.pop(key, None)
