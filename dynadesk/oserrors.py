"""One line for the errors a person fixes outside DynaDesk: a read-only workspace, a folder they may not write.

SQLite says "attempt to write a readonly database" and the OS says "Permission denied" or "Read-only file
system"; shown raw, each came with a 40-line traceback (the CLI) or a boxed one (the app's banner) on every
write. :func:`write_problem` turns them into one line naming what could not be written and the next step;
anything else is left to the caller (None).
"""

from __future__ import annotations

import errno
from pathlib import Path

_READ_ONLY = ("readonly database", "read-only database", "attempt to write a readonly")
_DENIED = {errno.EACCES, errno.EPERM, errno.EROFS}


def write_problem(exc: BaseException, home: Path | None = None) -> str | None:
    """A one-line reason and next step for a write the workspace refused, or None for any other error."""
    where = f"the workspace at {home}" if home is not None else "the workspace"
    fix = (f"make it writable (chmod -R u+w {home})" if home is not None else "make it writable (chmod -R u+w)") \
        + " or use a writable workspace (--home, $DYNADESK_HOME)"
    sqlite_error = type(exc).__module__ == "sqlite3" and type(exc).__name__ == "OperationalError"  # SQL stays in store
    if sqlite_error and any(s in str(exc).lower() for s in _READ_ONLY):
        return f"{where} is read-only (its database refused a write: {exc}); {fix}"
    if isinstance(exc, OSError) and exc.errno in _DENIED:
        target = f" {exc.filename}" if exc.filename else ""
        what = "is on a read-only file system" if exc.errno == errno.EROFS else "may not be written by you"
        if exc.filename and home is not None and not _inside(Path(str(exc.filename)), home):
            fix = "choose a path you may write, or make that folder writable"  # an output path, not the workspace
        return f"cannot write{target}: it {what} ({exc.strerror}); {fix}"
    return None


def _inside(path: Path, home: Path) -> bool:
    try:
        path.resolve().relative_to(home.resolve())
    except ValueError:
        return False
    return True
