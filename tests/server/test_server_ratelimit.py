"""The token buckets the board server and the LAN hub both limit with (dynadesk/ratelimit.py)."""

from __future__ import annotations

import pytest

from dynadesk.ratelimit import TokenBuckets


def test_a_bucket_refuses_past_its_burst_and_refills_at_its_rate() -> None:
    now = [0.0]
    buckets = TokenBuckets(burst=2, per_second=0.5, clock=lambda: now[0])
    assert buckets.spend("a") == 0 and buckets.spend("a") == 0
    assert buckets.spend("a") == 2  # empty: one token takes 2 s at 0.5/s
    assert buckets.spend("b") == 0  # every key has its own bucket
    now[0] = 2.0
    assert buckets.spend("a") == 0
    assert buckets.spend("a") == 2


def test_asking_spends_nothing_and_a_refusal_spends_nothing() -> None:
    now = [0.0]
    buckets = TokenBuckets(burst=1, per_second=1.0, clock=lambda: now[0])
    for _ in range(5):
        assert buckets.spend("a", cost=0.0) == 0
    assert buckets.spend("a") == 0
    for _ in range(5):
        assert buckets.spend("a") == 1  # refused attempts do not push the wait further out
    now[0] = 1.0
    assert buckets.spend("a") == 0


def test_invented_keys_cost_bounded_memory_and_the_least_recent_go_first() -> None:
    now = [0.0]
    buckets = TokenBuckets(burst=1, per_second=0.001, clock=lambda: now[0], tracked=3)
    assert buckets.spend("kept") == 0
    for i in range(3):
        assert buckets.spend(f"k{i}") == 0
        assert buckets.spend("kept") > 0  # touched each round: stays tracked, stays empty
    assert len(buckets._buckets) == 3
    assert buckets.spend("k0") == 0  # forgotten, so it came back full


@pytest.mark.parametrize(("burst", "rate"), [(0, 1.0), (1, 0.0), (1, float("inf")), (1, float("nan"))])
def test_a_meaningless_bucket_is_refused(burst: int, rate: float) -> None:
    with pytest.raises(ValueError, match="burst >= 1"):
        TokenBuckets(burst, rate)
