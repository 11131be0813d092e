"""Rate limits of the hub's writing routes: a token bucket per key (a session, or an address for sign-in), with the
server's :mod:`dynadesk.ratelimit`; here only the hub's option form, ``COUNT/SECONDS``."""

from __future__ import annotations

import math

from dynadesk.errors import ValidationError
from dynadesk.ratelimit import Limiter, Rate

__all__ = ["Limiter", "Rate", "parse_rate"]


def parse_rate(text: str, option: str) -> Rate:
    """``"30/60"``: 30 requests per 60 seconds (a burst of 30, refilled evenly)."""
    try:
        count_text, seconds_text = text.split("/")
        count, seconds = int(count_text), float(seconds_text)
    except ValueError:
        raise ValidationError(f"{option} must look like COUNT/SECONDS (e.g. 30/60), not {text!r}") from None
    if count < 1 or not math.isfinite(seconds) or seconds <= 0:
        raise ValidationError(f"{option}: COUNT must be >= 1 and SECONDS > 0, not {text!r}")
    return Rate.per_window(count, seconds)
