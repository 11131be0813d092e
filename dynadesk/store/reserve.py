"""Space kept for a run's final state: a preallocated reserve file beside the workspace database.

Why: a run whose worker fills the disk must still end ``failed`` (or ``cancelled``, ``interrupted``), never stay
``running``; but writing that state is itself a write to the full disk. Clearing the run's half-written outputs
frees room only when the worker had written enough, which depends on timing (a busy machine fills the disk earlier
in the run). So the room is kept in advance: :func:`keep_reserve` preallocates ``RESERVE_BYTES`` before a run
starts, and :func:`write_final_state` gives it back when the final write finds the disk full, writes the state,
then tries to keep the reserve again. Best effort at every step: a disk too full to hold the reserve at the start
leaves the run as before (its own error names the full disk).
"""

from __future__ import annotations

import contextlib
import os
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING

from dynadesk.errors import StoreError

if TYPE_CHECKING:
    from dynadesk.store import Store

RESERVE_NAME = ".dynadesk-state-reserve"
RESERVE_BYTES = 4 << 20  # a final state with its 1 MiB log, its WAL frames and checkpoint, several times over

__all__ = ["RESERVE_BYTES", "RESERVE_NAME", "keep_reserve", "reserve_path", "write_final_state"]


def reserve_path(store: Store) -> Path:
    """Where the reserve of this workspace database is kept (beside it: the same file system)."""
    return Path(str(store.path)).with_name(RESERVE_NAME)


def keep_reserve(store: Store) -> bool:
    """Make sure the reserve exists at full size (real blocks, not a sparse file); False when there is no room
    (a partly allocated reserve is removed, never left holding the last free blocks)."""
    if store.path is None:
        return False
    path = reserve_path(store)
    with contextlib.suppress(OSError):
        if path.stat().st_size >= RESERVE_BYTES:
            return True
    try:
        fd = os.open(path, os.O_WRONLY | os.O_CREAT, 0o600)
        try:
            os.posix_fallocate(fd, 0, RESERVE_BYTES)
        finally:
            os.close(fd)
        return True
    except OSError:
        with contextlib.suppress(OSError):
            path.unlink()
        return False


def _release(store: Store) -> bool:
    try:
        reserve_path(store).unlink()
        return True
    except OSError:
        return False


def write_final_state(store: Store, *writes: Callable[[], None]) -> None:
    """Write a run's final state: ``writes[0]``; on a full disk (:class:`StoreError`) the reserve is given back
    and each write is tried again in turn (later ones smaller: without the log); the reserve is kept again
    afterwards. Raises the last :class:`StoreError` when no write could be made."""
    try:
        writes[0]()
        return
    except StoreError as exc:
        if "full" not in str(exc):
            raise
        last = exc
    _release(store)
    try:
        for write in writes:
            try:
                write()
                return
            except StoreError as exc:
                last = exc
        raise last
    finally:
        keep_reserve(store)
