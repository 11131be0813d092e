"""Rate limits of the hub's writing routes: a token bucket per key (a session, or an address for sign-in)."""

from __future__ import annotations

import math
import threading
import time
from dataclasses import dataclass

from dynadesk.errors import RateLimitedError, ValidationError


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
        self._buckets: dict[str, tuple[float, float]] = {}
        self._lock = threading.Lock()

    def charge(self, key: str) -> None:
        now = time.monotonic()
        per_token = self.rate.seconds / self.rate.count
        with self._lock:
            tokens, at = self._buckets.get(key, (float(self.rate.count), now))
            tokens = min(float(self.rate.count), tokens + (now - at) / per_token)
            if tokens < 1.0:
                self._buckets[key] = (tokens, now)
                wait = max(1, math.ceil((1.0 - tokens) * per_token))
                raise RateLimitedError(f"too many {self.what} (at most {self.rate}); try again in {wait} s", wait)
            self._buckets[key] = (tokens - 1.0, now)
            if len(self._buckets) > 10_000:  # forget full buckets: they are the default anyway
                self._buckets = {k: v for k, v in self._buckets.items() if v[0] < self.rate.count}
