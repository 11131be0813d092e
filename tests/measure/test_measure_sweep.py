"""Issue 50 item 2: a batched window sweeps its mode's whole half where that fits, so a set's tail counts as in
the pass.

MiniLM on 512 texts, quiet: the longest batch was 4x the others; one unit from each of four strata weighed it once
in four (the pass: once in eight) and the stored figure read 0.70x the pass; the first attempt's trials, two
unseen units each, spread 46 % by their samples alone and every run took its batched measurement twice. A stand-in
model here answers over the host's real socket in a time set by its query's padded size (examples x the longest
input's words), with one batch ten times longer than the rest.
"""

from __future__ import annotations

import json
from pathlib import Path

from support.loadgen_stand_in import run_to_end

from dynadesk.evaluator.measurement import SPREAD
from dynadesk.orchestration.loadgen import LoadGen
from dynadesk.orchestration.loadgen_fresh import (
    SWEEP_MAX_S,
    Fresh,
    hold_to_first_sweep,
    split_modes,
    window_share,
)

PER_WORD_S = 0.0004  # seconds per padded word of a query
BATCH = 4
WORDS = "good bad film plot actor scene long short dull bright".split()


def _texts(n: int) -> list[str]:
    """``n`` texts of 2-6 words, the last batch's 40 words (the set's tail), each text unique."""
    out = [" ".join(WORDS[(i + j) % 10] for j in range(2 + i % 5)) + f" {i}" for i in range(n - BATCH)]
    return out + [" ".join(WORDS[(i + j) % 10] for j in range(40)) + f" {i}" for i in range(BATCH)]


def _cost_s(texts: list[str]) -> float:
    return PER_WORD_S * len(texts) * max(len(t.split()) for t in texts)


def _loadgen(tmp_path: Path, texts: list[str], retries: int = 0) -> LoadGen:
    from dynadesk.evaluator.schema import DatasetSpec, Settings, Spec

    (tmp_path / "data").mkdir(parents=True)
    (tmp_path / "data" / "d000.jsonl").write_text(
        "".join(json.dumps({"id": f"e{i}", "statement": t, "label": "a"}) + "\n" for i, t in enumerate(texts)))
    spec = Spec(task={"inputs": [{"name": "statement"}]}, model={"manifest": {}},
                datasets=[DatasetSpec("s", "d000.jsonl", "0" * 64, len(texts))],
                settings=Settings(batch_size=BATCH, latency_samples=4, batched_queries=8, warmup=2, trials=3,
                                  min_seconds=0.05, noise_retries=retries))
    (tmp_path / "spec").mkdir()
    spec.write(tmp_path / "spec" / "spec.json")
    (tmp_path / "out").mkdir()
    return LoadGen(tmp_path / "spec" / "spec.json", tmp_path / "data", tmp_path / "out").start()


def _batched_figure(lg: LoadGen, repeat_factor: float = 1.0) -> dict:
    """Run the stand-in against the host's load generator to the end; the set's stored batched measurement. Each
    query sleeps its padded size (divided by ``repeat_factor`` when every input was asked before: a partial
    cache)."""
    seen: set[str] = set()

    def seconds_for(texts: list[str]) -> float:
        took = _cost_s(texts) / (repeat_factor if seen.issuperset(texts) else 1.0)
        seen.update(texts)
        return took

    return run_to_end(lg, seconds_for, "a")["datasets"]["s"]["batched"]


def test_a_batched_sweep_weighs_the_sets_tail_as_the_pass_does(tmp_path):
    texts = _texts(64)
    batched = _batched_figure(_loadgen(tmp_path, texts))
    # the pass's pace over the batched half: the host's own split of the character order into the pass's batches
    order = sorted(range(len(texts)), key=lambda i: len(texts[i]))
    half = split_modes(order, BATCH)[1]
    units = [[texts[i] for i in half[j:j + BATCH]] for j in range(0, len(half), BATCH)]
    assert any(len(u[0].split()) > 40 for u in units)  # the tail's batch is in the batched half
    pace = len(half) / sum(_cost_s(u) for u in units)
    assert batched["protocol"]["per_window"] == len(units) == 8
    assert 0.85 <= batched["value"] / pace <= 1.05, (batched["value"], pace, [t["value"] for t in batched["trials"]])
    assert batched["attempts"] == 1 and batched["spread"] <= SPREAD  # the same units in every trial: no retry


def test_a_partial_cache_on_the_sweeps_repeats_gains_nothing_in_the_attempt_or_its_retries(tmp_path):
    """The next attacker: repeats answered 3x faster (under the replay rules' 10x), so the first attempt's
    trials spread, it is held, and its retries (all repeats, quiet) would store 3x."""
    texts = _texts(64)
    batched = _batched_figure(_loadgen(tmp_path, texts, retries=2), repeat_factor=3.0)
    half = split_modes(sorted(range(len(texts)), key=lambda i: len(texts[i])), BATCH)[1]
    pace = len(half) / sum(_cost_s([texts[i] for i in half[j:j + BATCH]]) for j in range(0, len(half), BATCH))
    assert batched["value"] <= 1.05 * pace and batched["noisy"], (batched["value"], pace, batched["noise"])
    assert "held to it" in " ".join(batched["noise"]["reasons"])


def test_the_whole_half_is_swept_only_where_it_fits_and_never_at_batch_1():
    pool = Fresh(list(range(64)), 4, set())  # 16 units
    assert window_share(pool, SWEEP_MAX_S / 16, 2, 3, True, 0.5) == (16, False, True)
    assert window_share(pool, 0.5 / 16, 2, 3, True, 0.5) == (16, False, True)
    assert window_share(pool, SWEEP_MAX_S / 15, 2, 3, True, 0.5) == (2, True, False)  # strata, unseen shares
    assert window_share(pool, 0.4 / 16, 2, 3, True, 0.5) == (2, True, False)  # a fast model's windows cycle
    assert window_share(Fresh(list(range(64)), 1, set()), 0.01, 4, 3, False, 0.5) == (4, True, False)
    seen = Fresh(list(range(64)), 4, set(range(64)))  # a retry: nothing unseen left, its share asked again
    assert window_share(seen, 1.0, 2, 3, True, 0.5) == (2, False, False)


def _attempt(values: list[float]) -> dict:
    return {"median": sorted(values)[1], "trials": [{"value": v} for v in values], "noise": {"reasons": []}}


def test_a_cache_answering_the_sweeps_asked_again_gains_nothing_and_an_honest_attempt_keeps_its_median():
    honest = _attempt([100.0, 110.0, 95.0])
    hold_to_first_sweep(honest, 100.0)
    assert honest["median"] == 100.0 and honest["noise"]["reasons"] == []
    cached = _attempt([100.0, 900.0, 950.0])  # computed the first sweep, answered the repeats from a cache
    hold_to_first_sweep(cached, 100.0)
    assert cached["median"] == 100.0 and "held to it" in cached["noise"]["reasons"][0]
    retry = _attempt([300.0, 290.0, 310.0])  # a retry of repeats only, 3x the first sweep's pace
    hold_to_first_sweep(retry, 100.0)
    assert retry["median"] == 100.0


def test_a_warm_up_input_is_never_one_of_the_sets_own_inputs():
    """A CI run's replay test counted a warm-up query as a timed one: on two-word texts a draw of the set's words
    was a real example ("actor 14"), an answer a cache could keep for it."""
    import random

    from dynadesk.orchestration.loadgen_fresh import warm_up_examples

    words = ["a", "b"]
    taken = {"a b", "b a", "a a", "b b"}  # every two-word draw is a real input
    for seed in range(20):
        (salad,) = warm_up_examples([{"s": "a b"}], ["s"], words, random.Random(seed), taken)
        assert salad["s"] not in taken and len(salad["s"].split()) == 3
    free = {"a b"}
    drawn = {warm_up_examples([{"s": "a b"}], ["s"], words, random.Random(s), free)[0]["s"] for s in range(50)}
    assert drawn == {"b a", "a a", "b b"}  # the same length wherever a draw is free
