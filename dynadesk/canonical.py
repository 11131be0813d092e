"""Canonical JSON (RFC 8785, JCS) and content digests.

Every digest the project records (datasets, predictions, bundles) is sha256
over JCS bytes, so two machines that hold the same content agree on the digest
whatever their dict order, float formatting or Unicode escaping.
"""

from __future__ import annotations

import hashlib
import os
from typing import Any

import rfc8785


def canonical_bytes(obj: Any) -> bytes:
    """RFC 8785 canonical serialisation (UTF-8 bytes)."""
    return rfc8785.dumps(obj)


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
