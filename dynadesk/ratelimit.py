"""Token buckets by key, the one rate-limit mechanism of the board server and the LAN hub.

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

MAX_TRACKED = 10_000


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
