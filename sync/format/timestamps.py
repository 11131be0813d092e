"""The one timestamp form of bundles, the server and its log: UTC, ``YYYY-MM-DDTHH:MM:SS.mmmZ``.

Times are compared as times (:func:`parse_utc`), never as text: ``...:00Z`` and ``...:00.5Z``
sort the wrong way round as strings.
"""

from __future__ import annotations

import re
from datetime import UTC, datetime

from dynadesk.errors import BundleFormatError

TIMESTAMP = re.compile(r"^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}(\.\d{1,6})?Z$")


def utc_now_text(now: datetime | None = None) -> str:
    """``now`` (default: the current time) in the format's text form, millisecond precision."""
    now = (now or datetime.now(UTC)).astimezone(UTC)
    return now.strftime("%Y-%m-%dT%H:%M:%S.") + f"{now.microsecond // 1000:03d}Z"


def parse_utc(value: str, where: str = "timestamp") -> datetime:
    """An aware UTC datetime from the format's text form; :class:`BundleFormatError` naming ``where``."""
    if not isinstance(value, str) or not TIMESTAMP.match(value):
        raise BundleFormatError(f"{where}: must be a UTC time like 2026-01-31T12:00:00.000Z, got {value!r:.60}")
    try:
        return datetime.fromisoformat(value)
    except ValueError:
        raise BundleFormatError(f"{where}: is not a valid UTC time ({value!r:.60})") from None


def epoch_us(value: str, where: str = "timestamp") -> int:
    """Microseconds since 1970 (an integer the database can order by)."""
    t = parse_utc(value, where) - datetime(1970, 1, 1, tzinfo=UTC)
    return (t.days * 86400 + t.seconds) * 1_000_000 + t.microseconds
