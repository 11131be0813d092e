"""A benchmark's scratch folder, removed when its process exits.

The benches made theirs with ``tempfile.mkdtemp`` and left them: ``make bench`` left ~180 MB in ``/tmp`` each
time (bench_models' training workspace 175 MB of it; 4.1 GB after a day of runs on this machine). A run's
folder is removed at exit, also after a failure; ``DYNADESK_BENCH_KEEP=1`` keeps them to look into.
"""

from __future__ import annotations

import atexit
import os
import shutil
import tempfile
from pathlib import Path


def scratch_dir(prefix: str) -> Path:
    """A new folder under the temporary directory, removed when this process exits (unless
    ``DYNADESK_BENCH_KEEP`` is set)."""
    folder = Path(tempfile.mkdtemp(prefix=prefix))
    if not os.environ.get("DYNADESK_BENCH_KEEP"):
        atexit.register(shutil.rmtree, folder, ignore_errors=True)
    return folder
