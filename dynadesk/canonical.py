"""Canonical JSON (RFC 8785, JCS) and content digests.

Every digest the project records (datasets, predictions, bundles) is sha256
over JCS bytes, so two machines that hold the same content agree on the digest
whatever their dict order, float formatting or Unicode escaping.
"""

from __future__ import annotations

import hashlib
import os
from typing import Any

from dynadesk.sync.format.canonical import canonical_bytes  # the one canonical form (the bundle format's)

__all__ = ["canonical_bytes", "digest", "file_sha256", "sha256_hex"]


def sha256_hex(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def digest(obj: Any) -> str:
    """``sha256:<hex>`` of the canonical form of ``obj``."""
    return "sha256:" + sha256_hex(canonical_bytes(obj))


def file_sha256(path: str | os.PathLike[str], chunk: int = 1 << 20) -> str:
    h = hashlib.sha256()
    with open(path, "rb") as fh:
        while True:
            block = fh.read(chunk)
            if not block:
                break
            h.update(block)
    return h.hexdigest()
