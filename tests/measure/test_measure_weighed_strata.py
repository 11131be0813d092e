"""Issue 50 item 2: a run on several test sets shares its batched sweeps too, each strata trial weighed by the
padded tokens of its batches.

A slow model's batched windows swept each set's whole half three times: MiniLM on the demo's 4 test sets spent
16.5 s there, beyond its loading and its pass (24.6 s in all). Strata of a few batches instead carried their content
into the figure (0.03-0.26 of spread between trials from their lengths alone, medians 1.05-1.15x the pass). Now a
set whose half would sweep in over ``SWEEP_MAX_S / sets`` takes strata, and each trial's examples per second is
multiplied by how much more its batches' padded tokens cost per example than the half's (the host counts the
model's own tokens): its pace on the half's mix of lengths. A stand-in model answers over the host's real socket in
a time set by its query's padded tokens, counted with the tiny model's real tokenizer; the host counts them in its
own bounded child from the same file.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from support.eval import LABELS
from support.loadgen_stand_in import run_to_end
from support.tiny_models import make_tiny_classifier

from dynadesk.audit.hardware import weighed_lines
from dynadesk.evaluator.measurement import SPREAD
from dynadesk.orchestration.loadgen import LoadGen
from dynadesk.orchestration.loadgen_fresh import (
    LENGTH_FACTOR_BOUND,
    SWEEP_MAX_S,
    Fresh,
    TokenPace,
    length_factor,
    run_share,
    split_modes,
    window_share,
)

BATCH = 4
SETS = 4
PER_TOKEN_S = 0.0012  # seconds per padded token of a query: a half of 8 batches sweeps in ~1.65 s (over 4 s / 4)
MAX_LENGTH = 48
WORDS = "good bad film plot actor scene long short dull bright".split()


def _texts(seed: int, n: int = 64) -> list[str]:
    """``n`` texts of 2-39 words, truncated at ``MAX_LENGTH`` tokens: most of a half's batches pad to it, so a
    trial on its shortest and longest batches costs 0.71 of its mix per example (real sets: 0.86-1.15)."""
    return [" ".join(WORDS[(i + j + seed) % 10] for j in range(2 + (i * 7 + seed) % 38)) + f" {seed} {i}"
            for i in range(n)]


@pytest.fixture(scope="module")
def tiny(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return make_tiny_classifier(tmp_path_factory.mktemp("weighed") / "tiny", LABELS, task="sentiment",
                                max_length=MAX_LENGTH)


def _counter(tiny: Path):
    from tokenizers import Tokenizer

    tokenizer = Tokenizer.from_file(str(tiny / "tokenizer.json"))
    tokenizer.no_padding()
    tokenizer.enable_truncation(MAX_LENGTH)
    return lambda text: len(tokenizer.encode(text).ids)


def _cost_s(lengths: list[int]) -> float:
    return PER_TOKEN_S * len(lengths) * max(lengths)


def test_a_runs_sets_take_weighed_strata_that_read_each_halfs_sweep_pace(tiny: Path, tmp_path: Path) -> None:
    from dynadesk.evaluator.schema import DatasetSpec, Settings, Spec

    sets = {f"set{s}": _texts(s) for s in range(SETS)}
    (tmp_path / "data").mkdir()
    for i, texts in enumerate(sets.values()):
        rows = [json.dumps({"id": f"e{j}", "statement": t, "label": LABELS[0]}) + "\n" for j, t in enumerate(texts)]
        (tmp_path / "data" / f"d{i:03d}.jsonl").write_text("".join(rows))
    manifest = json.loads((tiny / "dynadesk-model.json").read_text())
    spec = Spec(task={"inputs": [{"name": "statement"}]}, model={"manifest": manifest},
                datasets=[DatasetSpec(name, f"d{i:03d}.jsonl", "0" * 64, len(t))
                          for i, (name, t) in enumerate(sets.items())],
                settings=Settings(batch_size=BATCH, latency_samples=4, batched_queries=2 * BATCH, warmup=2, trials=3,
                                  min_seconds=0.05, noise_retries=0))
    (tmp_path / "spec").mkdir()
    spec.write(tmp_path / "spec" / "spec.json")
    (tmp_path / "out").mkdir()
    count = _counter(tiny)
    lg = LoadGen(tmp_path / "spec" / "spec.json", tmp_path / "data", tmp_path / "out", tiny).start()
    # the model's side: each query's time its padded tokens', counted with the same tokenizer file
    report = run_to_end(lg, lambda texts: _cost_s([count(t) for t in texts]), LABELS[0], timeout_s=180)

    windows, sweeps = 0.0, 0.0
    for name, texts in sets.items():
        tokens = [count(t) for t in texts]
        half = split_modes(sorted(range(len(texts)), key=lambda i: tokens[i]), BATCH)[1]
        units = [half[j:j + BATCH] for j in range(0, len(half), BATCH)]
        sweep_s = sum(_cost_s([tokens[i] for i in u]) for u in units)
        assert SWEEP_MAX_S / SETS < sweep_s <= SWEEP_MAX_S  # one set alone sweeps it (below)
        pace = len(half) / sweep_s  # what a sweep of the half reads: the pass's pace over these batches
        batched = report["datasets"][name]["batched"]
        assert batched["protocol"]["sweep_max_s"] == SWEEP_MAX_S / SETS
        assert batched["protocol"]["per_window"] == 2 < len(units)  # strata, not the whole half
        # unweighed, a trial's lengths show in its pace (its examples per second, 1.4x the half's); weighed, each
        # trial reads the half's
        raw = [t["queries"] / t["seconds"] / pace for t in batched["trials"]]
        assert max(abs(r - 1) for r in raw) > 0.2, raw
        for t in batched["trials"]:
            assert 0.9 <= t["value"] / pace <= 1.05, (name, t["value"], pace, t["length_factor"])
        assert batched["spread"] <= SPREAD and batched["attempts"] == 1 and 0.9 <= batched["value"] / pace <= 1.05
        windows += sum(t["seconds"] for t in batched["trials"])
        sweeps += 3 * sweep_s
        assert report["datasets"][name]["batch1"]["trials"][0]["length_factor"] == 1.0  # batch-1: never weighed
        # the run's first set warms up; the later ones' windows are sized by the run's pace so far (no warm-up)
        first = name == next(iter(sets))
        assert (batched["protocol"]["sized_by"], batched["protocol"]["warmup"]) == (("warm-up", 2) if first else
                                                                                   ("pace", 0)), batched["protocol"]
    # three sweeps of each set's half (what a run took before); the strata take 2 of its 8 batches a trial
    assert windows < 0.5 * sweeps, (windows, sweeps)
    # `runs show` says how each set's batched figure was taken (the profile holds the load generator's report)
    lines = weighed_lines({"measurement": {"datasets": report["datasets"]}})
    assert [line.split(":")[0] for line in lines] == [f"batched {name}" for name in sets], lines
    assert all("3 strata trials, weighed by their batches' padded tokens" in line for line in lines), lines


def test_the_pace_so_far_predicts_a_later_sets_mean_batched_query() -> None:
    """Seconds per padded token from the trials so far (each cycling its sample: queries over its examples), times
    a set's mean padded query: what its warm-up read, without its queries. No trial or no tokens: None (warm up)."""
    pace = TokenPace()
    tokens = [10] * 8 + [30] * 8
    units = [list(range(i, i + 4)) for i in range(0, 16, 4)]  # padded costs 40, 40, 120, 120
    assert pace.each(units, tokens) is None
    pace.add(1.6, 16, [units[0], units[2]], tokens)  # 8 examples, 160 tokens a pass, 2 passes in 1.6 s
    pace.add(2.0, 8, [units[1], units[3]], tokens)  # one pass in 2.0 s: 0.0125 s a token
    assert pace.per_token == pytest.approx([0.005, 0.0125])
    assert pace.each(units, tokens) == pytest.approx((0.005 + 0.0125) / 2 * 80)
    assert pace.each(units, None) is None and pace.each([], tokens) is None


def test_the_sweep_is_shared_among_a_runs_sets() -> None:
    one, four = run_share(0.5, 64, 8, 3, 1), run_share(0.5, 64, 8, 3, SETS)
    assert one.sweep_for(True) == one.sweep_for(False) == SWEEP_MAX_S  # one set: unchanged
    assert four.sweep_for(True) == SWEEP_MAX_S / SETS and four.sweep_for(False) == SWEEP_MAX_S  # by characters: whole
    pool = Fresh(list(range(64)), 4, set())  # 16 units
    each = 2.0 / 16  # a half that sweeps in 2 s
    assert window_share(pool, each, 2, 3, True, 0.125, one.sweep_for(True)) == (16, False, True)
    assert window_share(pool, each, 2, 3, True, 0.125, four.sweep_for(True)) == (2, True, False)


def test_a_trials_length_factor_is_its_padded_cost_per_example_against_the_halfs_and_bounded() -> None:
    tokens = [10] * 8 + [20] * 8 + [40] * 8  # 24 examples, units of 4
    half = [list(range(i, i + 4)) for i in range(0, 24, 4)]
    assert length_factor(half, half, tokens) == 1.0
    mean = (10 + 20 + 40) / 3
    assert length_factor([half[0], half[5]], half, tokens) == pytest.approx((10 + 40) / 2 / mean)
    # a unit padded to one long example costs its whole width
    mixed = [[0, 1, 2, 16]]
    assert length_factor(mixed, half, tokens) == LENGTH_FACTOR_BOUND  # 40 / mean: 1.71
    # the lengths come from the submitter's tokenizer: a factor never raises a pace by more than the bound; one
    # below one only lowers it (an honest trial on the half's shortest and longest batches: 0.71 in the test above)
    shaped = [1] * 20 + [10_000] * 4  # a graph whose time ignores them would read its sampled long batch's pace x4
    assert length_factor([half[5]], half, shaped) == LENGTH_FACTOR_BOUND
    assert length_factor([half[0]], half, shaped) == pytest.approx(1 / ((5 * 4 + 4 * 10_000) / 24))
    assert length_factor([], half, tokens) == 1.0
