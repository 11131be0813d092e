"""The worker's malloc settings, fixed at start so that peak memory is the model's, not the allocator's history.

glibc moves its mmap threshold while a process runs: once a large block (a freed activation tensor)
was mmapped, later blocks up to that size come from the heap, whose peak extent then depends on the
order and timing of allocations. Three identical Docker runs of one model peaked at 0.742, 0.744 and
0.549 GiB that way (docs/measurement.md). Fixing the threshold (``mallopt(M_MMAP_THRESHOLD)``, which
also stops glibc adjusting it) makes every block at or above it an mmap of its own, returned to the
system on free, so the peak follows the live tensors. The worker calls :func:`fix_malloc` first thing,
before torch loads, on every runner: the setting is the worker's, not the launcher's environment.
"""

from __future__ import annotations

import ctypes
import ctypes.util
import os
from typing import Any

MMAP_THRESHOLD_BYTES = 1 << 20
"""Blocks of at least this size are mmapped (glibc's starting value is 128 KiB, then it moves up to 32 MiB)."""

_M_MMAP_THRESHOLD = -3  # glibc malloc.h


def environment_overrides() -> list[str]:
    """Allocator settings this process inherited (``MALLOC_*``, ``GLIBC_TUNABLES``): they change what memory
    measures, so a worker started with any of them does not claim the fixed definition."""
    return sorted(k for k in os.environ if k.startswith("MALLOC_") or k == "GLIBC_TUNABLES")

_state: dict[str, Any] = {"fixed": False, "reason": "fix_malloc() was not called (the worker was not started "
                                                     "by python -m dynadesk.evaluator)"}


def fix_malloc(threshold: int = MMAP_THRESHOLD_BYTES) -> dict[str, Any]:
    """Fix glibc's mmap threshold for this process; returns (and remembers) what was set, or why not."""
    global _state
    try:
        libc = ctypes.CDLL(ctypes.util.find_library("c") or None)
        version_fn = libc.gnu_get_libc_version
        mallopt = libc.mallopt
    except (OSError, AttributeError) as exc:  # not glibc (macOS, musl): its allocator's defaults stand
        _state = {"fixed": False, "reason": f"not glibc: {exc}"}
        return dict(_state)
    version_fn.restype = ctypes.c_char_p
    mallopt.argtypes = [ctypes.c_int, ctypes.c_int]
    mallopt.restype = ctypes.c_int
    glibc = (version_fn() or b"").decode()
    overrides = environment_overrides()
    if overrides:
        _state = {"fixed": False, "glibc": glibc,
                  "reason": f"allocator settings in the worker's environment: {', '.join(overrides)}"}
    elif mallopt(_M_MMAP_THRESHOLD, int(threshold)) != 1:
        _state = {"fixed": False, "reason": f"mallopt(M_MMAP_THRESHOLD, {threshold}) failed", "glibc": glibc}
    else:
        _state = {"fixed": True, "glibc": glibc, "mmap_threshold_bytes": int(threshold)}
    return dict(_state)


def malloc_settings() -> dict[str, Any]:
    """What :func:`fix_malloc` set in this process (``fixed`` False, with the reason, where it did not)."""
    return dict(_state)
