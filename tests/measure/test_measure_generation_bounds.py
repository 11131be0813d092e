"""Issue 45: a generative run's tokens/s and first-token time are the worker's own figures (counted inside the
host's windows; the host times whole answers), now bounded by what the host measured.

Seen on the old code: a worker row claiming 1000x its tokens/s, or a first token in a thousandth of the time, was
stored as given (nothing compared it). Now no answer has more than the manifest's ``max_new_tokens``, so the
batched windows cannot have produced tokens faster than that many per example the host saw answered per second,
and a first token comes no sooner than a batch-1 answer's host time over that many tokens (a slack of 4 on both).
The honest figures of real generative runs stay inside (tests/models/test_models_generative.py runs them).
"""

from __future__ import annotations

import pytest

from dynadesk.orchestration.bounds import GENERATION_SLACK, BoundExceeded, check_measured, host_figures


def _observed(max_new_tokens: int | None) -> dict:
    """One set: batched windows of 40 examples in 2 s (20 examples/s), batch-1 p50 of 400 ms."""
    trial = {"queries": 40, "seconds": 2.0}
    lat = {"p50_ms": 400.0, "p90_ms": 450.0, "p99_ms": 500.0, "too_few_samples": [], "trial_spread": {}}
    measured = {"median": 20.0, "noise": {"reasons": []}, "noisy": False, "spread": 0.0, "trials": [trial] * 3}
    return {"loadgen": {"finished": True, "problems": [], "answers": {}, "max_new_tokens": max_new_tokens,
                        "datasets": {"s": {"batch1": dict(measured, median=2.5), "batched": measured,
                                           "latency": lat}}},
            "memory": {}}


def _rows(observed: dict, tokens_per_second: float, first_token_ms: float) -> list[dict]:
    rows = [{"dataset": d, "metric": m, "value": v} for (d, m), v in host_figures(observed, ["s"]).items()]
    for where in ("s", ""):
        rows += [{"dataset": where, "metric": "tokens_per_second", "value": tokens_per_second},
                 {"dataset": where, "metric": "time_to_first_token_ms", "value": first_token_ms}]
    return rows


def test_an_honest_generation_run_is_inside_the_host_bounds_and_they_are_recorded():
    observed = _observed(8)  # 20 examples/s x 8 tokens: at most 160 tokens/s; 400 ms / 8 tokens: 50 ms a token
    report = check_measured(_rows(observed, 120.0, 60.0), observed, ["s"])
    assert report["generation"]["tokens_per_second_ceiling"] == {"s": 160.0 * GENERATION_SLACK,
                                                                 "": 160.0 * GENERATION_SLACK}
    assert report["generation"]["time_to_first_token_ms_floor"]["s"] == 50.0 / GENERATION_SLACK
    assert {"tokens_per_second", "time_to_first_token_ms"} <= set(report["bounded"])


@pytest.mark.parametrize("tokens_per_second, first_token_ms, named", [
    (120_000.0, 60.0, "measured 'tokens_per_second' on 's': the worker reports 120000.0, above the 640.0"),
    (120.0, 0.06, "measured 'time_to_first_token_ms' on 's': the worker reports 0.06, below the 12.5"),
])
def test_forged_generation_figures_are_refused_naming_the_host_bound(tokens_per_second, first_token_ms, named):
    observed = _observed(8)
    with pytest.raises(BoundExceeded) as caught:
        check_measured(_rows(observed, tokens_per_second, first_token_ms), observed, ["s"])
    assert named in str(caught.value) and "(whole run)" in str(caught.value)


def test_a_model_that_does_not_generate_has_no_generation_bounds():
    observed = _observed(None)  # a classifier: no max_new_tokens, no generation rows
    rows = [r for r in _rows(observed, 1.0, 1.0) if r["metric"] not in ("tokens_per_second", "time_to_first_token_ms")]
    assert "generation" not in check_measured(rows, observed, ["s"])
