"""Rate limits of the hub's writing routes: a token bucket per key (a session, or an address for sign-in)."""

from __future__ import annotations

import math
from dataclasses import dataclass

from dynadesk.errors import RateLimitedError, ValidationError
from dynadesk.ratelimit import TokenBuckets


@dataclass(frozen=True)
class Rate:
    count: int
    seconds: float

    def __str__(self) -> str:
        return f"{self.count} per {self.seconds:g} s"


def parse_rate(text: str, option: str) -> Rate:
    """``"30/60"``: 30 requests per 60 seconds (a burst of 30, refilled evenly)."""
    try:
        count, seconds = text.split("/")
        rate = Rate(int(count), float(seconds))
    except ValueError:
        raise ValidationError(f"{option} must look like COUNT/SECONDS (e.g. 30/60), not {text!r}") from None
    if rate.count < 1 or not math.isfinite(rate.seconds) or rate.seconds <= 0:
        raise ValidationError(f"{option}: COUNT must be >= 1 and SECONDS > 0, not {text!r}")
    return rate


class Limiter:
    """Token buckets by key; :meth:`charge` raises :class:`RateLimitedError` with the seconds to wait."""

    def __init__(self, rate: Rate, what: str):
        self.rate = rate
        self.what = what
        self._buckets = TokenBuckets(rate.count, rate.count / rate.seconds)

    def charge(self, key: str) -> None:
        wait = self._buckets.spend(key)
        if wait:
            raise RateLimitedError(f"too many {self.what} (at most {self.rate}); try again in {wait} s", wait)
