"""The lead's view of a hub (the desktop app's Hub page, ``dynadesk hub status``): who is connected,
examples and votes per person, MER and vMER per round and target model. Reads only; no web stack."""

from __future__ import annotations

from dataclasses import asdict, dataclass, field
from datetime import timedelta
from typing import TYPE_CHECKING, Any

from dynadesk.annotation.stats import round_stats
from dynadesk.hub.identity import iso, now_utc

if TYPE_CHECKING:
    from dynadesk.store import Store

CONNECTED_WITHIN_S = 90  # the page checks in every 20 s; a person seen this recently is "connected"


@dataclass
class PersonRow:
    name: str
    role: str
    connected: bool
    last_seen: str | None
    sessions: int  # live (neither expired nor revoked)
    examples: int
    votes: int
    revoked: bool


@dataclass
class TargetRow:
    task: str
    round: int
    status: str
    model: str
    collected: int
    fooled: int
    verified_fooled: int
    mer: float | None
    vmer: float | None


@dataclass
class Overview:
    at: str
    connected: int
    people: list[PersonRow] = field(default_factory=list)
    targets: list[TargetRow] = field(default_factory=list)

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


def overview(store: Store) -> Overview:
    now = now_utc()
    at, recent = iso(now), iso(now - timedelta(seconds=CONNECTED_WITHIN_S))
    live = store.hub.sessions(live_at=at)
    work = store.hub.work_per_person()
    people = []
    for p in store.hub.people():
        mine = [s for s in live if s.name == p.name]
        seen = max((s.last_seen for s in mine), default=None)
        w = work.get(p.name, {"examples": 0, "votes": 0})
        people.append(PersonRow(p.name, p.role, seen is not None and seen >= recent, seen, len(mine),
                                w["examples"], w["votes"], p.revoked_at is not None))
    targets = []
    for rnd in store.annotation.list_rounds():
        s = round_stats(store, rnd.task, rnd.number)
        targets += [TargetRow(rnd.task, rnd.number, rnd.status, m.model, m.collected, m.fooled, m.verified_fooled,
                              m.mer, m.vmer) for m in s.by_model]
    return Overview(at, sum(p.connected for p in people), people, targets)
