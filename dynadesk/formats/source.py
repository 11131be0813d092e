"""How a data file's bytes are opened: gzip and a UTF-8 byte-order mark are read transparently.

Labs keep large splits gzip'd (``train.jsonl.gz``, ``dev.tsv.gz``) and spreadsheet tools write a BOM at the
start of a CSV; every reader opens its file through :func:`open_source`, so neither is a reason to refuse a
file, and neither changes the line numbers a refusal names (the BOM is not a line; gzip is undone first).
A gzip member is recognised by its magic bytes, not by its name, so a renamed file reads the same.
"""

from __future__ import annotations

import gzip
import io
import zlib
from pathlib import Path

from dynadesk.errors import ValidationError

GZIP_MAGIC = b"\x1f\x8b"
BOM = b"\xef\xbb\xbf"
MAX_TEXT_BYTES = 1 << 30  # a whole-file read (a table, a SQuAD document) stops here, gzip'd or not


def is_gzip(path: Path) -> bool:
    with open(path, "rb") as fh:
        return fh.read(2) == GZIP_MAGIC


def open_source(path: Path) -> gzip.GzipFile | io.BufferedReader:
    """The file's bytes (with ``readline``), gunzipped when it is gzip, with a leading UTF-8 BOM skipped."""
    fh: gzip.GzipFile | io.BufferedReader = gzip.open(path, "rb") if is_gzip(path) else open(path, "rb")
    try:
        if fh.peek(3)[:3] == BOM:
            fh.read(3)
    except (OSError, EOFError, zlib.error) as exc:
        fh.close()
        raise ValidationError(f"{path}: a gzip file that cannot be read ({exc}); nothing was imported") from exc
    return fh


def read_source_bytes(path: Path, what: str = "file") -> bytes:
    """The whole file (gunzipped, without a BOM), refused over :data:`MAX_TEXT_BYTES`: a plain file larger than
    that is refused unread (a 3 GB table costs nothing); a gzip one stops reading at the cap."""
    if not is_gzip(path) and path.stat().st_size > MAX_TEXT_BYTES:
        raise ValidationError(f"{path}: {what} over the {MAX_TEXT_BYTES:,}-byte limit; refused unread; "
                              "split it into smaller files")
    with open_source(path) as fh:
        try:
            data = fh.read(MAX_TEXT_BYTES + 1)
        except (OSError, EOFError, zlib.error) as exc:
            raise ValidationError(f"{path}: a gzip file that cannot be read ({exc}); nothing was imported") \
                from exc
    if len(data) > MAX_TEXT_BYTES:
        raise ValidationError(f"{path}: {what} over the {MAX_TEXT_BYTES:,}-byte limit (after gzip); "
                              "split it into smaller files")
    return data


def source_suffix(path: Path) -> str:
    """The suffix that names the format: ``.jsonl`` for ``train.jsonl.gz``."""
    suffixes = [s.lower() for s in path.suffixes]
    if suffixes and suffixes[-1] == ".gz":
        return suffixes[-2] if len(suffixes) > 1 else ""
    return path.suffix.lower()
