"""How the store records a folder: relative to the workspace inside it, so a copy uses its own."""

from __future__ import annotations

import os
from pathlib import Path


def stored_path(home: str | os.PathLike[str], folder: str | os.PathLike[str]) -> str:
    """``folder`` relative to ``home`` (POSIX) when it lies inside it, else its absolute path."""
    real_home, real = Path(home).resolve(), Path(folder).resolve()
    if real_home in real.parents:
        return real.relative_to(real_home).as_posix()
    return str(real)


def resolve_stored(home: str | os.PathLike[str], stored: str) -> Path:
    """The absolute folder a :func:`stored_path` value names in the workspace at ``home``."""
    path = Path(stored)
    return path if path.is_absolute() else Path(home).resolve() / path
