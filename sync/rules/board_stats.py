"""Each bundle's intervals and shared resamples: worked out once at ingest, stored, then kept in memory.

A bundle's signed ``payload.intervals`` and ``payload.outcomes`` (the host's bootstrap, issue 36) never change,
so the server works out, at ingest, each test set's task metric on the board's shared resamples
(:class:`dynadesk.scoring.bootstrap.Resampled`) and stores it with the intervals and outcomes
(``bundle_intervals``). A board query then marks ties and rank intervals with a few subtractions and one sort
(:class:`dynadesk.sync.rules.board.BoardIntervals`), never a bootstrap. Bundles stored before this table existed are
worked out from their stored bytes on first use and kept in memory. No SQL here (db.py).
"""

from __future__ import annotations

import json
import threading
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any, Protocol

from dynadesk.scoring.bootstrap import Resampled, resampled_rows
from dynadesk.sync.format.parts import Interval, Outcome
from dynadesk.sync.format.payload import Payload
from dynadesk.sync.rules.board_facts import payload_of


class StatsSource(Protocol):
    """What the cache reads from the server's database (``ServerDB``); the board's rules need no server."""

    def bundle_stats(self, bundle_ids: list[str]) -> dict[str, tuple[str, str]]: ...

    def bundle_raw(self, bundle_id: str) -> bytes: ...


def _by_dataset(items: tuple[Interval, ...] | tuple[Outcome, ...] | None) -> dict[str, dict[str, Any]]:
    return {x.dataset: {k: v for k, v in x.to_json().items() if k != "dataset"} for x in items or ()}


def bundle_stats(payload: Payload) -> dict[str, Any] | None:
    """``{"intervals", "outcomes", "resampled"}`` (JSON-safe) of a bundle's payload; None when it carries neither
    intervals nor outcomes (a bundle made before them)."""
    intervals, outcomes = _by_dataset(payload.intervals), _by_dataset(payload.outcomes)
    if not intervals and not outcomes:
        return None
    return {"intervals": intervals, "outcomes": outcomes,
            "resampled": {name: r.to_json() for name, r in resampled_rows(outcomes).items()}}


@dataclass(frozen=True)
class RowStats:
    """What a board row shows and tests with: its signed intervals and its shared resamples, by dataset."""

    intervals: dict[str, dict[str, Any]]
    resampled: dict[str, Resampled]

    @classmethod
    def from_stored(cls, intervals: str, resampled: str) -> RowStats:
        return cls(json.loads(intervals), {k: Resampled.from_json(v) for k, v in json.loads(resampled).items()})


EMPTY = RowStats({}, {})


class StatsCache:
    """Bundle id -> :class:`RowStats`: read from ``bundle_intervals`` (or worked out from the stored bytes of an
    older bundle) once, then kept (a bundle never changes)."""

    def __init__(self, db: StatsSource):
        self.db = db
        self._by_id: dict[str, RowStats] = {}
        self._lock = threading.Lock()

    def of(self, bundle_ids: Iterable[str]) -> dict[str, RowStats]:
        ids = list(bundle_ids)
        with self._lock:
            missing = [i for i in ids if i not in self._by_id]
        if missing:
            stored = self.db.bundle_stats(missing)
            found = {}
            for bundle_id in missing:
                if bundle_id in stored:
                    found[bundle_id] = RowStats.from_stored(*stored[bundle_id])
                    continue
                stats = bundle_stats(payload_of(self.db.bundle_raw(bundle_id)))
                found[bundle_id] = EMPTY if stats is None else RowStats.from_stored(
                    json.dumps(stats["intervals"]), json.dumps(stats["resampled"]))
            with self._lock:
                self._by_id.update(found)
        with self._lock:
            return {i: self._by_id[i] for i in ids}
