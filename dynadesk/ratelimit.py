"""Token buckets by key, the one rate limiter of the board server and the LAN hub: a :class:`Rate`, a
:class:`Limiter` that refuses with :class:`~dynadesk.errors.RateLimitedError` (its wait in seconds), and the buckets.
The server's options say a rate as ``PER_SECOND/BURST``, the hub's as ``COUNT/SECONDS``
(:meth:`Rate.per_window`): two spellings of one value.

Each key's bucket holds ``burst`` tokens and refills at ``per_second``; a request spends one. The
least recently used buckets are forgotten past ``tracked`` keys, so a client inventing keys costs
memory up to that bound and no more (a forgotten bucket comes back full: the default anyway).
"""

from __future__ import annotations

import math
import threading
import time
from collections import OrderedDict
from collections.abc import Callable
from dataclasses import dataclass

from dynadesk.errors import RateLimitedError

__all__ = ["MAX_TRACKED", "Limiter", "Rate", "TokenBuckets"]

MAX_TRACKED = 10_000


@dataclass(frozen=True)
class Rate:
    """``burst`` requests at once, refilled at ``per_second``."""

    per_second: float
    burst: int

    @classmethod
    def per_window(cls, count: int, seconds: float) -> Rate:
        """``count`` requests per ``seconds`` (a burst of ``count``, refilled evenly over the window)."""
        return cls(count / seconds, count)

    def text(self) -> str:
        """``PER_SECOND/BURST``, as the server's options take it."""
        return f"{self.per_second:g}/{self.burst}"

    def __str__(self) -> str:
        return f"at most {self.burst} at once and {self.per_second:g} per second"


class Limiter:
    """Token buckets by who is asking (an address, a key, a session): :meth:`take` spends one request's token or
    raises :class:`RateLimitedError` naming ``what`` (``{who}`` in it is the asker) and the seconds to wait."""

    def __init__(self, rate: Rate, what: str, clock: Callable[[], float] = time.monotonic):
        self.rate, self.what = rate, what
        self._buckets = TokenBuckets(rate.burst, rate.per_second, clock)

    def take(self, who: str) -> None:
        """Spend one token of ``who``'s bucket or raise :class:`RateLimitedError` with the wait."""
        self._spend(who, 1.0)

    def check(self, who: str) -> None:
        """Raise :class:`RateLimitedError` as :meth:`take` would, spending nothing (the upload pool asks this
        before a costly check and takes the token only once the signature has verified)."""
        self._spend(who, 0.0)

    def _spend(self, who: str, cost: float) -> None:
        wait = self._buckets.spend(who, cost)
        if wait:
            raise RateLimitedError(f"too many {self.what.format(who=who)}: {self.rate}; retry in {wait} s", wait)


class TokenBuckets:
    """Thread-safe token buckets; callers turn a refusal into their own error message."""

    def __init__(self, burst: int, per_second: float, clock: Callable[[], float] = time.monotonic,
                 tracked: int = MAX_TRACKED):
        if burst < 1 or not (math.isfinite(per_second) and per_second > 0):
            raise ValueError(f"a token bucket needs burst >= 1 and a rate above 0, got {burst}, {per_second}")
        self.burst, self.per_second, self.clock, self.tracked = burst, per_second, clock, tracked
        self._buckets: OrderedDict[str, tuple[float, float]] = OrderedDict()  # key -> (tokens, at)
        self._lock = threading.Lock()

    def spend(self, key: str, cost: float = 1.0) -> int:
        """Spend ``cost`` tokens of ``key``'s bucket (0 only asks) and return 0, or, when less than one token is
        left, spend nothing and return the whole seconds to wait (at least 1)."""
        now = self.clock()
        with self._lock:
            tokens, at = self._buckets.pop(key, (float(self.burst), now))
            tokens = min(float(self.burst), tokens + (now - at) * self.per_second)
            wait = 0 if tokens >= 1.0 else max(1, math.ceil((1.0 - tokens) / self.per_second))
            self._buckets[key] = (tokens - cost if wait == 0 else tokens, now)
            while len(self._buckets) > self.tracked:
                self._buckets.popitem(last=False)
            return wait
