"""The canonical form (RFC 8785, JCS) and a fast test that bytes are already in it.

Re-serialising every upload with the pure-Python ``rfc8785`` costs about a
millisecond per bundle, most of the server's budget. For the common case the
C ``json`` encoder produces the same bytes as JCS; this module uses it only
where that is provably so, and falls back to :func:`canonical_bytes`
otherwise. JCS and ``json.dumps(sort_keys=True, separators=(",", ":"),
ensure_ascii=False)`` differ only in:

* number text: JCS writes ECMAScript shortest form ("70", "1e-7", "1e+21"), Python
  writes ``repr`` ("70.0", "1e-07"). A float literal in plain notation, not ending in
  "0", with 1e-4 <= |x| < 1e16 (where ``repr`` uses plain notation too), whose ``repr``
  reproduces it is already the ECMAScript form; anything else (exponents, "x.0",
  "-0", integers beyond 2**53) takes the slow path;
* key order for characters outside the Basic Multilingual Plane (UTF-16 vs code
  points): any 4-byte UTF-8 sequence (lead byte >= 0xF0) takes the slow path.

Whenever the fast bytes differ from the input, rfc8785 decides. String escaping
(``\\"``, ``\\\\``, ``\\b\\f\\n\\r\\t``, ``\\u00xx`` for other controls,
nothing else) is the same in both. ``tests/sync/test_sync_jcs.py`` checks the
equivalence against ``rfc8785`` with hypothesis.
"""

from __future__ import annotations

import json
import re
from typing import Any

import rfc8785

from dynadesk.errors import BundleFormatError

_PLAIN_FLOAT = re.compile(r"^-?(0|[1-9]\d*)\.\d*[1-9]$")
_MAX_SAFE = 2 ** 53
_FOUR_BYTE_UTF8 = re.compile(rb"[\xf0-\xff]")


def canonical_bytes(obj: Any) -> bytes:
    """RFC 8785 bytes of ``obj``; :class:`BundleFormatError` when JCS cannot express it (huge integers, NaN)."""
    try:
        return rfc8785.dumps(obj)
    except (rfc8785.CanonicalizationError, TypeError, ValueError) as exc:
        raise BundleFormatError(f"cannot be expressed in RFC 8785 canonical JSON ({exc})") from None


class _Flags:
    __slots__ = ("slow",)

    def __init__(self) -> None:
        self.slow = False


def loads_checked(raw: bytes) -> tuple[Any, bool]:
    """``json.loads`` plus whether ``raw`` is exactly the RFC 8785 form of the result.

    Raises ``ValueError``/``UnicodeDecodeError``/``RecursionError`` like ``json.loads`` would.
    """
    flags = _Flags()

    def parse_float(text: str) -> float:
        value = float(text)
        if not _PLAIN_FLOAT.match(text) or not 1e-4 <= abs(value) < 1e16:  # where repr switches to exponents
            flags.slow = True
        return value

    def parse_int(text: str) -> int:
        value = int(text)
        if abs(value) >= _MAX_SAFE or text == "-0":
            flags.slow = True
        return value

    doc = json.loads(raw.decode("utf-8"), parse_float=parse_float, parse_int=parse_int)
    if not flags.slow and (raw.isascii() or not _FOUR_BYTE_UTF8.search(raw)):  # isascii: C, ~50x faster
        try:
            fast = json.dumps(doc, sort_keys=True, separators=(",", ":"), ensure_ascii=False,
                              allow_nan=False).encode("utf-8")
        except (ValueError, UnicodeEncodeError):
            fast = None
        if fast == raw:
            return doc, True
    try:
        return doc, canonical_bytes(doc) == raw
    except BundleFormatError:  # rfc8785 refuses some values (huge ints, lone surrogates)
        return doc, False
