"""Issue 50 item 2: a run's timed windows cost about what one test set's do, whatever its number of test sets.

A fast model's windows are clock-bound: each lasts ``min_seconds`` (its sample cycled), 2 modes x 3 trials per
test set, so the demo's majority baseline spent 11.5 of its 15.3 s on 4 test sets in windows. The run's
``min_seconds`` is now shared among its test sets (never below pyperf's 0.1 s); real local runs of a constant
model, one on four sets and one on a single set, each window's seconds on the host's clock. A slow model's
batch-1 windows are sized by their samples, so those and the warm-up are shared alike (:class:`RunShare`),
never leaving p90 thin.
"""

from __future__ import annotations

from support.eval import add_test_set, run_request
from support.gui import majority_model

from dynadesk.evaluator.measurement import MIN_TAIL
from dynadesk.models.registry import register_model
from dynadesk.orchestration.evaluate import evaluate
from dynadesk.orchestration.loadgen_fresh import (
    MIN_WINDOW_S,
    run_share,
    window_seconds,
)
from dynadesk.workspace import Workspace

RUN_MIN_S = 0.4


def _windows(rec, mode: str) -> tuple[list[float], set[float]]:
    """Every trial window's seconds of one mode and the protocol's least window duration(s) of a run. A batched
    window's seconds are its span (first issue to last answer); a batch-1 window's the sum of its queries'."""
    seconds, least = [], set()
    for d in rec.profile["measurement"]["datasets"].values():
        seconds += [t["seconds"] for t in d[mode]["trials"]]
        least.add(d[mode]["protocol"]["window_seconds"])
    return seconds, least


def test_the_run_min_seconds_is_shared_among_its_test_sets(home, store, tmp_path):
    register_model(store, majority_model(tmp_path / "majority"), "sentiment", name="constant")
    names = [f"set{i}-test" for i in range(4)]
    for i, name in enumerate(names):
        add_test_set(store, name, 24, seed=i, perturbed=False)
    ws = Workspace(home)
    four = evaluate(store, ws, run_request("constant", names, batch_size=4, latency_samples=40, warmup=6,
                                           min_seconds=RUN_MIN_S))
    one = evaluate(store, ws, run_request("constant", names[:1], batch_size=4, latency_samples=40, warmup=6,
                                          min_seconds=RUN_MIN_S))
    assert four.status == one.status == "succeeded", (four.error, one.error)

    batched, least = _windows(four, "batched")
    batch1, _ = _windows(four, "batch1")
    assert least == {RUN_MIN_S / 4} and len(batched) >= 4 * 3 and len(batch1) >= 4 * 3
    # each window lasts its share (a constant model's are clock-bound), not the run's whole min_seconds: before,
    # 4 sets x 2 modes x 3 trials of 0.4 s (8.8 s measured); now about what one set's 6 windows took
    assert min(batched) >= RUN_MIN_S / 4 and sum(batched + batch1) < 4 * 2 * 3 * RUN_MIN_S / 2
    batched, least = _windows(one, "batched")
    assert least == {RUN_MIN_S} and min(batched) >= RUN_MIN_S
    # the samples and the warm-up shared too: each set's batch-1 windows ask 40 / 4, raised to the 17 that keep p90
    # out of too_few_samples (3 trials); the first set warms up with all 6 queries, the others with 2
    sets = list(four.profile["measurement"]["datasets"].values())
    assert [d["batch1"]["protocol"]["asked_per_window"] for d in sets] == [17] * 4
    assert [d["batch1"]["protocol"]["warmup"] for d in sets] == [6, 2, 2, 2]
    assert all("p90" not in d["latency"]["too_few_samples"] for d in sets)
    alone = one.profile["measurement"]["datasets"]["set0-test"]
    assert alone["batch1"]["protocol"]["asked_per_window"] == 40 and alone["batch1"]["protocol"]["warmup"] == 6


def test_a_window_never_lasts_less_than_pyperfs_least_nor_more_than_asked():
    assert window_seconds(0.5, 1) == 0.5 and window_seconds(0.5, 4) == 0.125
    assert window_seconds(0.5, 40) == MIN_WINDOW_S  # shared, but never below the timer's noise
    assert window_seconds(0.05, 4) == 0.05 and window_seconds(0.0, 4) == 0.0  # a shorter minimum asked: kept


def test_a_slow_models_samples_and_warm_up_are_shared_but_p90_never_thin():
    one, four = run_share(0.5, 64, 8, 3, 1), run_share(0.5, 64, 8, 3, 4)
    assert (one.latency_per_window, one.warmup(1)) == (64, 8)  # one set: unchanged
    assert (four.latency_per_window, four.warmup(0), four.warmup(3)) == (17, 8, 2)
    for trials in (1, 2, 3, 5):  # never fewer than MIN_TAIL samples above p90 over a set's trials
        share = run_share(0.5, 500, 8, trials, 1000)
        assert share.latency_per_window * trials * 0.1 >= MIN_TAIL > (share.latency_per_window - 1) * trials * 0.1
    assert run_share(0.5, 12, 1, 3, 4).latency_per_window == 12 and run_share(0.5, 12, 1, 3, 4).warmup(2) == 1
