"""The one cancel type of long work (an evaluation, a re-run, a queued job, a training, an app worker).

A :class:`CancelToken` is shared between whoever may stop the work (a signal handler, the app's Cancel
button, a broker's cancel request) and the loop doing it, which polls :meth:`CancelToken.cancelled`
or calls :meth:`CancelToken.raise_if_cancelled` between steps. It wraps a :class:`threading.Event`,
so it is safe across threads and a poll loop can :meth:`CancelToken.wait` on it instead of sleeping.
"""

from __future__ import annotations

import threading

from dynadesk.errors import Cancelled

__all__ = ["CancelToken"]


class CancelToken:
    """Asked once, seen by every thread polling it; :meth:`reset` re-arms it for the next job."""

    def __init__(self) -> None:
        self._event = threading.Event()

    def cancel(self) -> None:
        self._event.set()

    def cancelled(self) -> bool:
        return self._event.is_set()

    def reset(self) -> None:
        self._event.clear()

    def wait(self, timeout: float | None = None) -> bool:
        """Sleep up to ``timeout`` seconds, waking at once when cancelled; whether it was."""
        return self._event.wait(timeout)

    def raise_if_cancelled(self, what: str = "the work") -> None:
        if self._event.is_set():
            raise Cancelled(f"{what} was cancelled")

    def __repr__(self) -> str:
        return f"CancelToken(cancelled={self.cancelled()})"
