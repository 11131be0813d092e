"""The host's folders of one run in the system's temporary folder (the load generator's socket, the sandbox's
data), named after the process that made them, so that a later run removes those a killed process left.

A run removes its folders when it ends (:meth:`~dynadesk.orchestration.loadgen.LoadGen.close`); a process killed
outright (``kill -9``, an out-of-memory kill, a power cut's reboot aside) never gets there. This suite's own
kill tests left 85 pairs in a day. Where the system's temporary folder is another file system than the workspace
(a tmpfs ``/tmp``, common), the sandbox's data folder holds *copies* of the run's data files (a hard link cannot
cross file systems), so each killed run kept its test sets in memory until the next reboot. Each folder's name
carries its maker's process id; a folder whose maker is gone (no such process, or one started after the folder
was last changed: the id was reused) is removed the next time any run makes its own.
"""

from __future__ import annotations

import os
import re
import shutil
import stat
import tempfile
from pathlib import Path

import psutil

KINDS = ("lg", "data")  # the load generator's socket folder, the sandbox's data folder
_NAME = re.compile(r"^dynadesk-(?:lg|data)-(\d+)-[A-Za-z0-9_]+$")
REUSE_SLACK_S = 1.0  # a process's start time is rounded (clock ticks): "started after" means by more than this


def make_run_dir(kind: str) -> Path:
    """A new folder of ``kind`` (:data:`KINDS`) for this process's run, after removing those killed runs left."""
    if kind not in KINDS:
        raise ValueError(f"unknown run folder kind {kind!r}")
    sweep_stale_run_dirs()
    return Path(tempfile.mkdtemp(prefix=f"dynadesk-{kind}-{os.getpid()}-"))  # short: a socket path has 108 bytes


def sweep_stale_run_dirs(root: Path | None = None) -> list[Path]:
    """Remove the run folders under ``root`` (the system's temporary folder) whose maker is gone; the removed.
    Only this user's folders of this module's names are looked at; one that cannot be read or removed is left."""
    folder = Path(root) if root is not None else Path(tempfile.gettempdir())
    try:
        names = os.listdir(folder)
    except OSError:
        return []
    removed = []
    for name in names:
        match = _NAME.match(name)
        if match is None:
            continue
        path = folder / name
        try:
            info = os.lstat(path)
        except OSError:
            continue
        if not stat.S_ISDIR(info.st_mode) or info.st_uid != os.getuid():
            continue
        if _maker_alive(int(match.group(1)), info.st_mtime):
            continue
        shutil.rmtree(path, ignore_errors=True)
        if not path.exists():
            removed.append(path)
    return removed


def _maker_alive(pid: int, changed: float) -> bool:
    """Whether process ``pid`` runs and started before the folder was last changed (else the id was reused)."""
    try:
        started = psutil.Process(pid).create_time()
    except psutil.NoSuchProcess:
        return False
    except psutil.Error:
        return True  # cannot tell: keep the folder
    return started <= changed + REUSE_SLACK_S
