"""The host's folders of one run in the system's temporary folder (the load generator's socket, the sandbox's
data), named after the process that made them, so that a later run removes those a killed process left.

A run removes its folders when it ends (:meth:`~dynadesk.orchestration.loadgen.LoadGen.close`); a process killed
outright (``kill -9``, an out-of-memory kill, a power cut's reboot aside) never gets there. This suite's own
kill tests left 85 pairs in a day. Where the system's temporary folder is another file system than the workspace
(a tmpfs ``/tmp``, common), the sandbox's data folder holds *copies* of the run's data files (a hard link cannot
cross file systems), so each killed run kept its test sets in memory until the next reboot. Each folder's name
carries its maker's PID namespace and process id; a folder whose maker is gone (no such process, or one started
after the folder was last changed: the id was reused) is removed the next time any run makes its own.

A process id means something only in its PID namespace: two DynaDesk containers (or a container and its host)
sharing one ``/tmp`` see each other's ids as other processes or none, and a sweep by id alone removed a live run's
socket and data (``tests/reliability/test_reliability_run_dirs.py`` runs one in a namespace of its own). So only
folders made in this process's namespace are judged; another namespace's are left to a run there. Nor are any
where ``/proc`` is not this namespace's (a namespace made without its own ``/proc`` mount reads the host's process
table, where its ids mean other processes): a run there removed its own live socket folder.

Earlier versions named their folders without the namespace (``dynadesk-lg-PID-xxxx``) or without either
(``dynadesk-lg-xxxxxxxx``): whose ids they carry, if any, is unknown, so they are judged by age alone. A run ends
by its timeout at the latest (the command line takes at most seven days), so such a folder unchanged for
:data:`EARLIER_STALE_S` belongs to no live run, whoever made it.
"""

from __future__ import annotations

import os
import re
import shutil
import stat
import tempfile
import time
from pathlib import Path

import psutil

KINDS = ("lg", "data")  # the load generator's socket folder, the sandbox's data folder
_NAME = re.compile(r"^dynadesk-(?:lg|data)-(\d+)-(\d+)-[A-Za-z0-9_]+$")  # namespace, process id, mkdtemp's
# earlier versions': a process id and mkdtemp's, or mkdtemp's alone (its characters hold no "-")
_EARLIER_NAME = re.compile(r"^dynadesk-(?:lg|data)-(?:\d+-)?[A-Za-z0-9_]+$")
# the longest run the command line allows (--timeout, 7 days) and a day more: an earlier version's folder unchanged
# for longer was left by a run that has ended
EARLIER_STALE_S = 8 * 86400.0
REUSE_SLACK_S = 1.0  # a process's start time is rounded (clock ticks): "started after" means by more than this


def make_run_dir(kind: str) -> Path:
    """A new folder of ``kind`` (:data:`KINDS`) for this process's run, after removing those killed runs left."""
    if kind not in KINDS:
        raise ValueError(f"unknown run folder kind {kind!r}")
    sweep_stale_run_dirs()
    # short: a socket path has 108 bytes (/tmp/dynadesk-lg-4026531836-123456-abcdefgh/ leaves 64)
    return Path(tempfile.mkdtemp(prefix=f"dynadesk-{kind}-{pid_namespace()}-{os.getpid()}-"))


def pid_namespace() -> int:
    """This process's PID namespace (the inode of ``/proc/self/ns/pid``); 0 where there are none (no ``/proc``:
    macOS), where every process shares the one."""
    try:
        return os.stat("/proc/self/ns/pid").st_ino
    except OSError:
        return 0


def sweep_stale_run_dirs(root: Path | None = None) -> list[Path]:
    """Remove the run folders under ``root`` (the system's temporary folder) whose maker is gone; the removed.
    Only this user's folders of this module's names are looked at: those made in this PID namespace by their maker's
    process, those an earlier version named without a namespace by their age (:data:`EARLIER_STALE_S`); one that
    cannot be read or removed is left."""
    namespace = pid_namespace()
    by_process = _proc_is_ours()
    folder = Path(root) if root is not None else Path(tempfile.gettempdir())
    try:
        names = os.listdir(folder)
    except OSError:
        return []
    removed = []
    now = time.time()
    for name in names:
        match = _NAME.match(name)
        pid = int(match.group(2)) if match and by_process and int(match.group(1)) == namespace else None
        if pid is None and _EARLIER_NAME.match(name) is None:
            continue
        path = folder / name
        try:
            info = os.lstat(path)
        except OSError:
            continue
        if not stat.S_ISDIR(info.st_mode) or info.st_uid != os.getuid():
            continue
        if pid is not None and _maker_alive(pid, info.st_mtime):
            continue
        if pid is None and now - info.st_mtime < EARLIER_STALE_S:
            continue
        shutil.rmtree(path, ignore_errors=True)
        if not path.exists():
            removed.append(path)
    return removed


def _proc_is_ours() -> bool:
    """Whether the process table psutil reads (``/proc``) is this PID namespace's: it names this process by the id
    this process has. Where there is no ``/proc`` (macOS) psutil asks the kernel itself."""
    try:
        return not os.path.isdir("/proc") or os.readlink("/proc/self") == str(os.getpid())
    except OSError:
        return False


def _maker_alive(pid: int, changed: float) -> bool:
    """Whether process ``pid`` runs and started before the folder was last changed (else the id was reused)."""
    try:
        started = psutil.Process(pid).create_time()
    except psutil.NoSuchProcess:
        return False
    except psutil.Error:
        return True  # cannot tell: keep the folder
    return started <= changed + REUSE_SLACK_S
