"""The worker's malloc settings: fixed, so that peak memory is the model's and not the allocator's history.

glibc moves its mmap threshold while a process runs: once a large block (a freed activation tensor)
was mmapped, later blocks up to that size come from the heap, where blocks freed early stay resident,
pinned by small live objects, and a later peak counts them. Three identical Docker runs of one model
peaked at 0.742, 0.744 and 0.549 GiB that way (docs/measurement.md).

So the worker runs in phases. While it loads the model and predicts (where ``memory`` is
measured) the threshold is fixed at :data:`MEMORY_MMAP_THRESHOLD_BYTES`: every block at or above it
is an mmap of its own, returned on free, and the peak follows the live tensors. That costs speed
(page faults on every large block), so for the timed windows (between loading and the prediction pass,
issue 45's replay hole) :func:`timing_phase` fixes the threshold at glibc's largest, where its moving
threshold settles in a long run, with the matching trim threshold: timing sees the allocator a
long-running process has, without its history. :func:`memory_phase` then restores the memory settings
and returns what the windows freed before the pass.
The worker calls :func:`fix_malloc` first thing, before torch loads, on every runner: the settings are
the worker's, not the launcher's environment.
"""

from __future__ import annotations

import ctypes
import ctypes.util
import os
from typing import Any

MEMORY_MMAP_THRESHOLD_BYTES = 1 << 20
"""While loading and predicting, blocks of at least this size are mmapped (glibc starts at 128 KiB)."""

TIMING_MMAP_THRESHOLD_BYTES = 32 << 20
"""For the timed windows: glibc's largest dynamic mmap threshold on 64-bit (``DEFAULT_MMAP_THRESHOLD_MAX``)."""

TIMING_TRIM_THRESHOLD_BYTES = 2 * TIMING_MMAP_THRESHOLD_BYTES
"""glibc sets the trim threshold to twice the mmap threshold whenever it moves the latter."""

_M_TRIM_THRESHOLD, _M_MMAP_THRESHOLD = -1, -3  # glibc malloc.h
DEFAULT_TRIM_THRESHOLD_BYTES = 128 * 1024  # glibc's M_TRIM_THRESHOLD before anything moved it

_state: dict[str, Any] = {"fixed": False, "reason": "fix_malloc() was not called (the worker was not started "
                                                     "by python -m dynadesk.evaluator)"}
_mallopt: Any = None


def environment_overrides() -> list[str]:
    """Allocator settings this process inherited (``MALLOC_*``, ``GLIBC_TUNABLES``): they change what memory
    measures, so a worker started with any of them does not claim the fixed definition."""
    return sorted(k for k in os.environ if k.startswith("MALLOC_") or k == "GLIBC_TUNABLES")


def fix_malloc(threshold: int = MEMORY_MMAP_THRESHOLD_BYTES) -> dict[str, Any]:
    """Fix glibc's mmap threshold for this process; returns (and remembers) what was set, or why not."""
    global _state, _mallopt
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
        _mallopt = mallopt
        _state = {"fixed": True, "glibc": glibc, "mmap_threshold_bytes": int(threshold)}
    return dict(_state)


def timing_phase() -> dict[str, Any]:
    """Switch a fixed allocator to the timing settings (nothing where :func:`fix_malloc` did not fix it)."""
    global _state
    if _state["fixed"] and _mallopt is not None:
        ok = (_mallopt(_M_MMAP_THRESHOLD, TIMING_MMAP_THRESHOLD_BYTES) == 1
              and _mallopt(_M_TRIM_THRESHOLD, TIMING_TRIM_THRESHOLD_BYTES) == 1)
        _state = {**_state, "timing_mmap_threshold_bytes": TIMING_MMAP_THRESHOLD_BYTES if ok else None,
                  "timing_trim_threshold_bytes": TIMING_TRIM_THRESHOLD_BYTES if ok else None}
    return dict(_state)


def memory_phase() -> dict[str, Any]:
    """Back to the memory settings after the timed windows (nothing where :func:`fix_malloc` did not fix it),
    giving back to the system what the windows freed (``malloc_trim``), so the pass's peak is its own."""
    global _state
    if _state["fixed"] and _mallopt is not None:
        ok = (_mallopt(_M_MMAP_THRESHOLD, int(_state["mmap_threshold_bytes"])) == 1
              and _mallopt(_M_TRIM_THRESHOLD, DEFAULT_TRIM_THRESHOLD_BYTES) == 1)
        try:
            libc = ctypes.CDLL(ctypes.util.find_library("c") or None)
            libc.malloc_trim(0)
        except (OSError, AttributeError):
            ok = False
        _state = {**_state, "memory_phase_restored": ok}
    return dict(_state)


def malloc_settings() -> dict[str, Any]:
    """What :func:`fix_malloc` (and :func:`timing_phase`) set in this process, or why not."""
    return dict(_state)
