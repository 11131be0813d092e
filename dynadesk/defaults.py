"""The defaults the command line, the app and the library share (one source, no imports).

Changing a value here changes ``dynadesk eval``'s defaults, the app's Evaluate page and
Settings page, and what :class:`~dynadesk.orchestration.request.RunRequest` assumes.
"""

from __future__ import annotations

import os

BATCH_SIZE = 32  # examples per batch in the evaluator's batched pass
TIMEOUT_S = 3600.0  # wall-clock limit of one evaluation run
MEMORY_GIB = 4.0  # memory limit of one evaluation run
MAX_DEFAULT_CPUS = 4  # the CPU limit defaults to the machine's cores, at most this many
SERVER_PORT = 8000  # `dynadesk-server serve`'s port
SERVER_URL = f"http://127.0.0.1:{SERVER_PORT}"  # the app's leaderboard URL until one is set


def cpus() -> float:
    """The default CPU limit: this machine's cores, at most :data:`MAX_DEFAULT_CPUS`."""
    return float(min(os.cpu_count() or 1, MAX_DEFAULT_CPUS))
