"""One retry rule for throughput, shared by the worker's own timing (``measurement.measure``) and the host's load
generator: an attempt whose trials spread more than ``SPREAD`` is noisy (the spread named as a reason) and is tried
again until the retry budget is spent; the figure is the last attempt's median, earlier attempts' reasons kept."""

from __future__ import annotations

import time

from dynadesk.evaluator.measurement import RETRY_BUDGET_S, SPREAD, close_attempt, throughput_result


def trials(*values: float) -> list[dict]:
    return [{"queries": 10, "seconds": 10 / v, "value": v} for v in values]


def test_a_spread_attempt_is_retried_a_quiet_one_ends_and_the_last_one_is_the_figure():
    attempts: list[dict] = []
    now = time.perf_counter()
    wide = {"reasons": []}
    assert close_attempt(attempts, trials(100.0, 200.0, 150.0), wide, [1.0], [[1.0]], now) is False
    assert wide["spread"] > SPREAD and wide["reasons"] == [f"trials spread {wide['spread']:.1%}"]
    other = {"reasons": ["steal 9%"]}  # noise the worker saw is a reason by itself
    assert close_attempt(attempts, trials(100.0, 101.0), other, [1.0], [[1.0]], now) is False
    assert other["reasons"] == ["steal 9%"]
    quiet = {"reasons": []}
    assert close_attempt(attempts, trials(100.0, 102.0, 101.0), quiet, [2.0, 3.0], [[2.0], [3.0]], now) is True
    out = throughput_result(attempts, {"trials": 3})
    assert out["value"] == out["median"] == 101.0 and out["noisy"] is False and out["attempts"] == 3
    assert out["earlier_attempts"] == [wide["reasons"], ["steal 9%"]]
    assert out["per_call_ms"] == [2.0, 3.0] and out["protocol"] == {"trials": 3}


def test_a_noisy_attempt_ends_the_measurement_once_the_retry_budget_is_spent():
    attempts: list[dict] = []
    long_ago = time.perf_counter() - RETRY_BUDGET_S - 1
    noise = {"reasons": []}
    assert close_attempt(attempts, trials(50.0, 150.0), noise, [], [], long_ago) is True
    out = throughput_result(attempts, {})
    assert out["noisy"] is True and out["spread"] == noise["spread"] and out["earlier_attempts"] == []
