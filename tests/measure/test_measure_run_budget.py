"""Issue 50 item 2: a run's timed windows cost about what one test set's do, whatever its number of test sets.

A fast model's windows are clock-bound: each lasts ``min_seconds`` (its sample cycled), 2 modes x 3 trials per
test set, so the demo's majority baseline spent 11.5 of its 15.3 s on 4 test sets in windows. The run's
``min_seconds`` is now shared among its test sets (never below pyperf's 0.1 s); real local runs of a constant
model, one on four sets and one on a single set, each window's seconds on the host's clock.
"""

from __future__ import annotations

from support.eval import add_test_set, run_request
from support.gui import majority_model

from dynadesk.models.registry import register_model
from dynadesk.orchestration.evaluate import evaluate
from dynadesk.orchestration.loadgen_fresh import MIN_WINDOW_S, window_seconds
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
    four = evaluate(store, ws, run_request("constant", names, batch_size=4, latency_samples=8, warmup=1,
                                           min_seconds=RUN_MIN_S))
    one = evaluate(store, ws, run_request("constant", names[:1], batch_size=4, latency_samples=8, warmup=1,
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


def test_a_window_never_lasts_less_than_pyperfs_least_nor_more_than_asked():
    assert window_seconds(0.5, 1) == 0.5 and window_seconds(0.5, 4) == 0.125
    assert window_seconds(0.5, 40) == MIN_WINDOW_S  # shared, but never below the timer's noise
    assert window_seconds(0.05, 4) == 0.05 and window_seconds(0.0, 4) == 0.0  # a shorter minimum asked: kept
