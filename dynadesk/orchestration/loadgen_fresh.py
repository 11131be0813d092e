"""Timed queries on inputs the model has not seen (issue 45, the replay hole), for :mod:`.loadgen`.

A model's code may keep every answer it gives, keyed by the input, and answer an input it has seen before at
once. The prediction pass now runs after the timed windows and the data reach the sandbox only then, so what
such a cache can hold at a timed query is what the host itself issued before it. Hence:

* :func:`host_order`: the host orders a set by its inputs' length, in the model's tokens where the host can
  count them as the pass does (:mod:`.token_order`), else in characters (the sandbox cannot tell it the order:
  it has not seen the data);
* :func:`split_modes` and :class:`Fresh`: batch-1 and batched windows draw from disjoint halves of that order
  (a batch-1 answer cannot serve a batched query), the halves made of whole batches of it (the pass's own
  batches: halves of alternate examples padded each batch over twice the span of lengths), each example issued
  once while unseen ones remain in its half, in equal shares for the trials of an attempt; an attempt with fewer
  unseen units than trials (a small set, a noise retry) asks its half again;
* :func:`warm_up_examples`: the warm-up asks inputs of the same lengths made of words drawn at random from
  the set (it warms the model and sizes the windows): inputs no timed query repeats or resembles;
* :func:`split_lead`, :func:`spread_reserve` and :func:`interleave`: a window issues every other unit of its
  sample (the lead: the sample is length-sorted, so a lead of its first half repeated its shorter units); where
  it must cycle to last ``min_seconds`` (a fast model, a small set) the other half goes at random places over
  the passes the window is expected to make, among repeats; the first-time answers compared are
  those, never the lead's: the first queries of a window also carry its start (a worker's threads woken, a
  loaded machine's scheduler), which made an honest model's three first-time answers 23x slower than its
  repeats in a CI run;
* :func:`replay_check`: within each attempt (one load: a retry follows a noisy attempt, so its repeats beside
  the noisy attempt's first-time answers compared the machine's two loads: an honest run on a loaded 2-core
  machine was voided, 167 ms per first-time answer in its noisy attempt against 7.5 ms per repeat in its quiet
  retries), an example asked again is compared with the examples asked for the first time among repeats:
  answered ``REPLAY_RATIO`` times faster per example (and ``REPLAY_MIN_GAP_S`` sooner) voids the windows;
* :func:`unjudged_replays`: a retry whose share had no unseen examples left (a small set) holds repeats only and
  cannot be judged so; one whose repeats came ``REPLAY_RATIO`` times faster than the computed answers before it
  (the last judged attempt's repeats, else the first-time answers so far) is left out of the figure (the
  worker reports the noise that makes a retry: a model could compute in the judged attempt, force a retry, and
  replay in it), and the figure is the computed attempt's, still flagged noisy.

What is left: a model that memorised the test set itself (its answers shipped in its folder) answers unseen
queries from that table; that is a leak of the test set, which no timing can show (docs/measurement.md).
"""

from __future__ import annotations

import json
import math
import random
from collections.abc import Collection, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, NamedTuple

from dynadesk.evaluator.measurement import MIN_TAIL, SPREAD, median

# an example asked again answered this many times faster than first-time ones: a cache. An honest tiny model on a
# loaded 2-core machine was 4x faster on its repeats (warm primitives per input shape, a worker woken for the
# second query of a window and not the first), a replaying one 993x
REPLAY_RATIO = 10.0
REPLAY_MIN_GAP_S = 0.001  # ... and this much sooner per example (a model of a few microseconds varies more)
# queries of each kind a measurement needs before the two are compared: with 3 first-time answers two slow ones
# decide the median, and three CI runs of honest tiny models (3 first-time answers, ~4 ms, one scheduler tick on
# a loaded machine, against 0.2 ms repeats) were voided; 5 needs three
REPLAY_MIN_QUERIES = 5
# first-time answers a retry that cannot be judged alone is compared with, at least: one per trial. Leaving an
# honest retry out costs its figure (the computed attempt's stands, flagged noisy), never the run
REFERENCE_MIN_QUERIES = 3

# what a timed query was, for replay_check: examples asked for the first time after the window's lead (among
# repeats where the window cycles), asked for the first time in the lead (not compared: the window's start), or
# asked again
FIRST, LEAD, AGAIN = "first", "lead", "again"


class Service(NamedTuple):
    """One timed query as :func:`replay_check` reads it: its measurement's attempt (0: the first), its kind
    (:func:`query_kind`) and its seconds per example on the host's clock."""

    attempt: int
    kind: str
    seconds: float


def read_examples(path: Path) -> list[dict[str, Any]]:
    """A data file the host wrote, as the worker reads it (non-blank lines)."""
    with open(path, encoding="utf-8") as fh:
        return [json.loads(line) for line in fh if line.strip()]

MAX_WINDOW_S = 2.0  # a window's sample is sized from the warm-up to take about this long at most
# ... but a batched window sweeps its mode's whole half where that should take this long at most: three such
# sweeps cost less than three windows of strata and the retry their spread forced (below, window_share)
SWEEP_MAX_S = 2 * MAX_WINDOW_S
# pyperf's least value duration (its min_time): a window shorter than this is timer and scheduler noise
MIN_WINDOW_S = 0.1
WARM_UP_DRAWS = 20  # draws of a warm-up input that equal a real one, before it takes one word more
MAX_PASSES = 10_000  # passes over its lead a window's reserve is spread over, at most


def host_order(examples: Sequence[dict[str, Any]], inputs: Sequence[str],
               tokens: Sequence[int] | None = None) -> list[int]:
    """Example indices by their length (stable, a pure function of the data): ``tokens`` (each example's count
    in the model's tokens, :func:`.token_order.token_lengths`: the pass's order) when given, else the total
    length of their input fields in characters (the batch order the worker uses without a tokenizer)."""
    if tokens is not None:
        return sorted(range(len(examples)), key=lambda i: tokens[i])
    return sorted(range(len(examples)), key=lambda i: sum(len(str(examples[i].get(k, ""))) for k in inputs))


MIN_SPLIT_BATCHES = 8  # a set split by whole batches: each mode's half spans its lengths in four or more


def strata(n: int, k: int, phase: float) -> list[int]:
    """``min(k, n)`` positions in ``range(n)``, one in each of ``k`` equal strata, at ``phase`` (0-1) within it.

    At 0.5, each stratum's centre; a centre between two positions goes down, then up, in turn (ABBA). Truncating
    took the upper one of every stratum two units wide (8 units, 4 strata: 1, 3, 5, 7), so a batched retry on a
    set of 16 batches timed the longer batch of each pair and stored 0.74x the pass (MiniLM, loaded)."""
    k = min(k, n)
    if phase != 0.5:
        return sorted({min(n - 1, int((i + phase) * n / k)) for i in range(k)})
    out = []
    for i in range(k):
        centre = (i + 0.5) * n / k - 0.5
        low = math.floor(centre)
        up = centre - low > 0.5 or (centre - low == 0.5 and i % 2 == 1)
        out.append(min(n - 1, low + 1 if up else low))
    return sorted(set(out))


def split_modes(order: Sequence[int], batch_size: int) -> tuple[list[int], list[int]]:
    """(batch-1's share, batched's share) of ``order``: of each pair of its consecutive batches, one to each mode,
    the first and the second in turn (ABBA: a trend in length cancels; a set's last, lone batch is split by
    alternate examples). The same in every run, so a run and its audit time the same batches: drawing them per
    run put the longest batch in the batched half or not, and three paired rounds read 0.70-1.35x the pass.
    The submitter knows the halves, as it knew the alternate examples before; the data it does not. A set of
    fewer than :data:`MIN_SPLIT_BATCHES` batches splits its examples alternately: halves of one or two batches
    each held a narrow band of lengths (48 examples, batches of 32: batch-1 timed the 32 shortest or the 16
    longest, and two runs' p50 latencies differed by half)."""
    batches = [list(order[i:i + batch_size]) for i in range(0, len(order), batch_size)]
    if len(batches) < MIN_SPLIT_BATCHES:
        return list(order[0::2]) or list(order), list(order[1::2]) or list(order)  # one example: shared
    one: list[int] = []
    many: list[int] = []
    for j in range(0, len(batches), 2):
        pair = batches[j:j + 2]
        if len(pair) == 1:
            one += pair[0][0::2]
            many += pair[0][1::2]
            continue
        first, second = pair if (j // 2) % 2 == 0 else pair[::-1]
        many += first
        one += second
    return one, many  # each still in the set's order: its batches were taken in turn


class Fresh:
    """One mode's share of a test set (:func:`split_modes`): its units, preferring examples not yet issued."""

    def __init__(self, share: Sequence[int], size: int, issued: set[int]):
        self.order = list(share)
        self.size = size
        self.issued = issued  # the set's examples issued so far, by either mode

    def units(self) -> list[list[int]]:
        """Units (``size`` examples, length-sorted) of the examples not yet issued; empty once all were."""
        fresh = [i for i in self.order if i not in self.issued]
        return [fresh[i:i + self.size] for i in range(0, len(fresh), self.size)]

    def all_units(self) -> list[list[int]]:
        """Every unit of this share (the first attempt of a set too small to have any unseen left)."""
        return [self.order[i:i + self.size] for i in range(0, len(self.order), self.size)]

    def share(self, k: int, trials: int) -> int:
        """How many units each of ``trials`` may take (at most ``k``) so that all find unseen ones, in equal
        shares (at least one)."""
        return max(1, min(k, len(self.units()) // max(1, trials)))

    def is_fresh(self, unit: Sequence[int]) -> bool:
        return not any(i in self.issued for i in unit)

    def mark(self, unit: Sequence[int]) -> None:
        self.issued.update(unit)


def window_share(pool: Fresh, each: float, per_window: int, trials: int, batched: bool,
                 min_seconds: float, sweep_max_s: float = SWEEP_MAX_S) -> tuple[int, bool, bool]:
    """(units each trial's window takes, whether from the unseen ones, whether it is its mode's whole half) for
    a measurement whose warm-up query took ``each`` seconds.

    A batched window sweeps its mode's whole half where one sweep should last from ``min_seconds`` to
    ``sweep_max_s`` (``SWEEP_MAX_S``, shared among a run's test sets where strata trials are weighed by their
    lengths: :attr:`RunShare.sweep_max_s`; a faster model's window cycles its sample, and there the lead and the
    fill below keep the tiny model's loaded figure at the pass: sweeps cycled read 0.84x, five loaded rounds): the same
    units in every trial (the trials' spread is then the machine's, not their samples'), each asked again after
    the first trial (:func:`hold_to_first_sweep` bounds what a cache gains there). One unit from each of
    ``per_window`` strata missed a set's tail: MiniLM on 512 texts, quiet, 8 batched units, the first attempt's
    trials took two unseen units each (the one holding the longest batch 137 examples/s, the others 246 and 252:
    spread 46 %, retried in every run), the retry's strata [0, 3, 4, 7] weighed the longest batch once in four
    where the pass weighs it once in eight: stored 160 against the pass's 229 examples/s, in 10.7 s of windows
    against 3.4 for three sweeps. Otherwise ``per_window`` strata, fewer when a window would pass
    ``MAX_WINDOW_S`` (a slow model, a loaded machine; never the first few: the protocol before this one timed
    only the shortest batches under load), drawn from the unseen units in equal shares while each trial finds
    some (a small set or a retry asks its share again, and :func:`replay_check` compares the examples asked
    again with their first answers)."""
    whole = len(pool.all_units())
    if batched and min_seconds <= each * whole <= sweep_max_s and each > 0:
        return whole, False, True
    k = max(1, min(per_window, int(MAX_WINDOW_S / each) if each > 0 else per_window))
    fresh = len(pool.units()) >= trials
    return (pool.share(k, trials) if fresh else k), fresh, False


def window_seconds(min_seconds: float, test_sets: int) -> float:
    """A timed window's least duration: the run's ``min_seconds`` shared among its ``test_sets`` (never below
    ``MIN_WINDOW_S``, nor above ``min_seconds``), so a run's windows cost about what one test set's do.

    A fast model's windows are clock-bound (each cycles its sample until the window has lasted): per set,
    2 modes x 3 trials x 0.5 s. The demo's majority baseline on its 4 test sets spent 11.5 of its 15.3 s in
    windows; with each window an eighth of a second: 2.9 of 6.0 s, the same medians (within 4 %) and spreads,
    no retries (two runs each, quiet). A slow model's windows are sized by their samples, not this."""
    if test_sets <= 1:
        return min_seconds
    return max(min(min_seconds, MIN_WINDOW_S), min_seconds / test_sets)


# the highest latency percentile a test set's batch-1 windows must never leave thin (measurement.MIN_TAIL samples
# above it): p99 needs 500 samples, more than a run's default 3 x 64; p90 needs 50
UNTHIN_PERCENTILE = 90
LATER_WARMUP = 2  # warm-up queries, at least, of each test set after a run's first (they size its windows)


@dataclass(frozen=True)
class RunShare:
    """A run's timed-window budget, shared among its test sets so that a run's windows cost about what one test
    set's do (issue 50 item 2: the fixed time per run), as :func:`window_seconds` shares ``min_seconds``.

    A fast model's windows are clock-bound (``window_s``). A slow model's batch-1 windows are sized by their
    sample, so that is shared too: ``latency_samples`` divided among the sets, never fewer than keep p90 out of
    ``too_few_samples`` (``ceil(MIN_TAIL / 0.1 / trials)``: 17 for 3 trials); and each set after the first warms
    up with ``warmup`` divided among the sets (at least ``LATER_WARMUP``: the model is warm by then, and the
    warm-up only sizes the set's windows). MiniLM on the demo's 4 test sets spent 8-11 s in batch-1 windows.
    A batched sweep of a set's whole half is shared alike (``sweep_max_s``: a set whose half sweeps in over
    ``SWEEP_MAX_S / sets`` takes strata of its batches instead) where the host counts the model's tokens, so each
    strata trial is weighed by its batches' padded lengths (:func:`length_factor`): unweighed, strata of 4 MiniLM
    batches read the demo's sets with 0.03-0.26 of spread from their content alone (the same batches timed in
    process), where the sweeps' was the machine's; weighed, 0.05-0.13, medians 0.98-1.03x the sweep. A set
    ordered by characters keeps the whole ``SWEEP_MAX_S``. A run on one test set is unchanged. Each value is in
    the set's ``protocol``; an audit re-measures the same sets, so it shares alike."""

    sets: int
    window_s: float  # a window's least seconds (:func:`window_seconds`)
    latency_per_window: int  # batch-1 queries a window asks
    first_warmup: int  # the first test set's warm-up queries
    later_warmup: int  # every other set's
    sweep_max_s: float  # the longest batched sweep of a set's half, where strata trials are weighed by length

    def warmup(self, index: int) -> int:
        """Warm-up queries of the run's ``index``-th test set (0: the first)."""
        return self.first_warmup if index == 0 else self.later_warmup

    def sweep_for(self, weighed: bool) -> float:
        """The longest batched sweep of a test set's half: shared among the sets where its strata trials would be
        weighed by their lengths (the host counted its tokens), else the whole ``SWEEP_MAX_S``."""
        return self.sweep_max_s if weighed else SWEEP_MAX_S


def run_share(min_seconds: float, latency_samples: int, warmup: int, trials: int, test_sets: int) -> RunShare:
    """The :class:`RunShare` of a run's settings over its ``test_sets``."""
    sets = max(1, test_sets)
    unthin = math.ceil(MIN_TAIL / (1 - UNTHIN_PERCENTILE / 100) / max(1, trials) - 1e-9)
    return RunShare(sets, window_seconds(min_seconds, sets),
                    min(latency_samples, max(math.ceil(latency_samples / sets), unthin)), warmup,
                    min(warmup, max(LATER_WARMUP, math.ceil(warmup / sets))), SWEEP_MAX_S / sets)


# a strata trial's length factor never raises its pace by more than this: the lengths come from the submitter's
# tokenizer, and a graph whose time does not follow them (an ONNX export padding every input to its longest) would
# otherwise gain up to 4 / 3 with lengths shaped for the strata; honest sets read 0.71-1.15 (the demo's MiniLM
# sets 0.86-1.15). A factor below one only lowers a figure, so it is not bounded
LENGTH_FACTOR_BOUND = 1.25


def padded_cost(unit: Sequence[int], tokens: Sequence[int]) -> int:
    """What a batch of ``unit`` costs the model in token positions: each example padded to the batch's longest
    (the pass pads so; attention and the matmuls scale with it). A call's fixed cost is left out: it weighs
    little in a trial of 4 batches, but a short batch alone runs at 0.29-0.44x the pace this predicts (MiniLM)."""
    return len(unit) * max(tokens[i] for i in unit)


def length_factor(sample: Sequence[Sequence[int]], half: Sequence[Sequence[int]], tokens: Sequence[int]) -> float:
    """How much more a strata trial's examples cost than its mode's whole half's, per example, in padded tokens
    (:func:`padded_cost`), at most ``LENGTH_FACTOR_BOUND``: the trial's examples per second times this is its pace
    on the half's mix of lengths, the figure a whole sweep gives. Strata of 4 batches otherwise carried their
    content into the trials' spread (0.03-0.26 on the demo's sets, MiniLM) and the median (1.05-1.15x the pass);
    weighed, 0.05-0.13 and 0.98-1.03x the sweep, the same batches timed in process."""
    def per_example(units: Sequence[Sequence[int]]) -> float:
        return sum(padded_cost(u, tokens) for u in units) / max(1, sum(len(u) for u in units))

    whole = per_example(half)
    if whole <= 0 or not sample:
        return 1.0
    return min(LENGTH_FACTOR_BOUND, per_example(sample) / whole)


def hold_to_first_sweep(attempt: dict[str, Any], first: float) -> None:
    """A sweep attempt (:func:`window_share`) whose median passes ``first`` (the pace of the measurement's first
    sweep, the one that asked its half unseen) over ``1 - SPREAD`` stores ``first``: every later sweep, in that
    attempt and in its retries, asks the same examples again, and a model answering them from a cache would
    otherwise carry the median. The retries too: the first attempt's held spread forces one, and a cache 3x
    faster on repeats stored 3x in a quiet retry, whose repeats the replay rules judge only at 10x (the bound is
    not the figure either: 1.33x for a slow stand-in caching its repeats). An honest quiet attempt never gets
    there (a median above the bound puts its trials' spread over ``SPREAD``); an honest retry after a loaded
    first sweep is held low and says so in its noise. What is left: a cache gaining under ``SPREAD``."""
    if attempt["median"] > first / (1 - SPREAD):
        attempt["noise"]["reasons"].append(f"the sweeps asking the first sweep's examples again ran "
                                           f"{attempt['median'] / first:.2f}x its pace: held to it")
        attempt["median"] = first


def vocabulary(examples: Sequence[dict[str, Any]], inputs: Sequence[str]) -> list[str]:
    """Every word of a set's text inputs (with repeats: drawn from, it keeps their frequencies)."""
    return [w for ex in examples for key in inputs if isinstance(ex.get(key), str) for w in ex[key].split()]


def warm_up_examples(examples: Sequence[dict[str, Any]], inputs: Sequence[str], words: Sequence[str],
                     rng: random.Random, taken: Collection[str] = ()) -> list[dict[str, Any]]:
    """``examples`` with each text input replaced by as many words drawn at random from the set's ``words``:
    warm-up inputs of the same lengths and vocabulary that no timed query repeats or resembles (the words of an
    example shuffled would let a cache keyed by its bag of words answer the example itself from the warm-up).
    A draw equal to one of ``taken`` (the set's own inputs) is drawn again, and after ``WARM_UP_DRAWS`` gets
    one word more: on a set of two-word texts a draw was a real example now and then (a cache could keep its
    answer, and a CI run counted it as a timed query)."""
    out = []
    for ex in examples:
        copy = dict(ex)
        for key in inputs:
            if isinstance(copy.get(key), str) and words:
                n = len(copy[key].split())
                for draw in range(WARM_UP_DRAWS + 1):
                    salad = " ".join(rng.choice(words) for _ in range(n + (draw == WARM_UP_DRAWS)))
                    if salad not in taken:
                        break
                copy[key] = salad if n else copy[key]
        out.append(copy)
    return out


def split_lead(sample: Sequence[list[int]]) -> tuple[list[list[int]], list[list[int]]]:
    """A window's (length-sorted) sample as (lead, reserve): every other unit from the first (at least one), and
    the rest; both span the sample's lengths, so a window that repeats its lead times the sample's widths."""
    return list(sample[0::2]), list(sample[1::2])


def passes_ahead(spent: float, min_seconds: float) -> int:
    """How many more passes over the lead a window that spent ``spent`` seconds on it needs to last
    ``min_seconds`` (at least one, at most ``MAX_PASSES``): where the reserve may go."""
    if spent <= 0:
        return 1
    return max(1, min(MAX_PASSES, math.ceil((min_seconds - spent) / spent)))


def spread_reserve(reserve: Sequence[list[int]], passes: int, rng: random.Random) -> list[list[list[int]]]:
    """Each reserve unit assigned to one of ``passes`` passes at random: the first-time queries fall anywhere in
    the window, as the repeats do."""
    out: list[list[list[int]]] = [[] for _ in range(passes)]
    for unit in reserve:
        out[rng.randrange(passes)].append(unit)
    return out


def interleave(lead: Sequence[list[int]], reserve: Sequence[list[int]], rng: random.Random) -> list[list[int]]:
    """The lead again with each reserve unit at a random place among it: a first-time query is then asked where
    repeats are, so whatever a window's position costs falls on both kinds alike. The model cannot use the
    places: it can only tell an input it has seen, which is what the comparison looks for."""
    out = list(lead)
    for unit in reserve:
        out.insert(rng.randint(0, len(out)), unit)
    return out


def query_kind(fresh: bool, passes: int) -> str:
    """:data:`FIRST`, :data:`LEAD` or :data:`AGAIN` for a query of a window's ``passes``-th pass."""
    return AGAIN if not fresh else (LEAD if passes == 1 else FIRST)


def _kinds(services: Sequence[Service], attempt: int) -> tuple[list[float], list[float]]:
    """The first-time and asked-again seconds per example of one attempt."""
    mine = [x for x in services if x.attempt == attempt]
    return [x.seconds for x in mine if x.kind == FIRST], [x.seconds for x in mine if x.kind == AGAIN]


def _judged(first: Sequence[float], again: Sequence[float]) -> bool:
    return len(first) >= REPLAY_MIN_QUERIES and len(again) >= REPLAY_MIN_QUERIES


def _faster(slow_s: float, fast_s: float) -> bool:
    return slow_s > REPLAY_RATIO * fast_s and slow_s - fast_s > REPLAY_MIN_GAP_S


def replay_check(name: str, mode: str, services: Sequence[Service]) -> str | None:
    """Why the windows of ``name`` (``mode``) look answered from a cache, or None: an attempt with enough
    queries of both kinds whose examples asked again came much faster than its first-time ones. The lead's
    first-time answers are not compared (:func:`split_lead`), nor two attempts' (two loads of the machine)."""
    for attempt in sorted({x.attempt for x in services}):
        first, again = _kinds(services, attempt)
        if not _judged(first, again):
            continue
        first_s, again_s = median(first), median(again)
        if _faster(first_s, again_s):
            return (f"the timed windows of '{name}' ({mode}) were answered {first_s / max(again_s, 1e-9):.0f}x "
                    f"faster when asked again ({1000 * again_s:.3f} ms per example against {1000 * first_s:.3f} ms "
                    f"the first time, {len(again)} and {len(first)} queries, attempt {attempt + 1}): answers "
                    "replayed from a cache, not computed")
    return None


def unjudged_replays(services: Sequence[Service]) -> dict[int, str]:
    """The attempts left out of the figure, with why: those too short of first-time queries or repeats of their
    own to be judged (a retry on a share with no unseen examples left; windows that did not cycle) whose repeats
    came ``REPLAY_RATIO`` times faster than the computed answers before them: the repeats of the last judged
    attempt, or where none was judged, the first-time answers so far, the leads' included, a window's first
    among them (at least ``REFERENCE_MIN_QUERIES``: a slow model's window of one unit has no other; with FIRST
    ones alone and 5 needed, a retry that answered every unit from a cache kept 7,662 examples/s). A
    machine's load moved an honest tiny model's repeats 1.6-2.3x between attempts here; a cache gains 100x or
    more. What it is compared with was computed, so a model that replays only in a retry it forced (the worker
    reports the noise that makes one) keeps the figure of its computed attempt."""
    out: dict[int, str] = {}
    judged_again: float | None = None
    first_so_far: list[float] = []  # a lead's too: a slow model's windows hold one FIRST query each
    for attempt in sorted({x.attempt for x in services}):
        first, again = _kinds(services, attempt)
        before = list(first_so_far)  # the attempts before this one: the first is never left out
        first_so_far += [x.seconds for x in services if x.attempt == attempt and x.kind in (FIRST, LEAD)]
        if _judged(first, again):
            judged_again = median(again)
            continue
        reference, what = (judged_again, "repeats of the last attempt judged") if judged_again is not None else \
            ((median(before), "first-time answers") if len(before) >= REFERENCE_MIN_QUERIES else (None, ""))
        if reference is not None and again and _faster(reference, median(again)):
            out[attempt] = (f"attempt {attempt + 1} was answered {reference / max(median(again), 1e-9):.0f}x faster on "
                            f"examples asked before than the {what} ({1000 * median(again):.3f} against "
                            f"{1000 * reference:.3f} ms per example): left out, its figure may be a cache's")
    return out


def trial_phase(trial: int, trials: int, unit_size: int) -> float:
    """Where in each stratum a trial's window takes its unit (:func:`strata`): batch-1 windows rotate with the
    trial (their strata are narrow, and the trials together time more of the set's lengths for the percentiles);
    batched windows take each stratum's middle in every trial: rotating put the trials on systematically shorter,
    middle and longer inputs (a demo run's MiniLM trials fell with their phase in every set, 277, 240, 190
    examples/s, read as noise: retried, stored noisy, its audit compared no throughput)."""
    return 0.5 if unit_size > 1 else (trial + 0.5) / trials


class TokenPace:
    """A run's batched trials so far, as seconds per padded token on the host's clock (:func:`padded_cost`): what
    sizes a later token-ordered set's batched windows in place of its warm-up queries.

    A warm-up only sizes its windows once the model is warm (the run's first set warmed it), and each later set's
    batched one cost 0.31-0.43 s of a 4-set MiniLM run (two full batches). The batches' padded tokens predict a
    set's mean query from the run's earlier ones as well as two queries of it do: a batch costs about its padded
    tokens, and it is the same model at the same load. The model controls this figure as it controls a warm-up's
    time; either only sizes the windows, whose seconds are timed again."""

    def __init__(self) -> None:
        self.per_token: list[float] = []

    def add(self, seconds: float, queries: int, sample: Sequence[Sequence[int]], tokens: Sequence[int]) -> None:
        """One batched trial: ``queries`` examples answered in ``seconds``, cycling ``sample``'s units."""
        cost, examples = sum(padded_cost(u, tokens) for u in sample), sum(len(u) for u in sample)
        if cost > 0 and queries > 0 and seconds > 0:
            self.per_token.append(seconds * examples / queries / cost)

    def each(self, units: Sequence[Sequence[int]], tokens: Sequence[int] | None) -> float | None:
        """The predicted mean seconds of one of ``units`` (a batched query), or None (no trial yet, no tokens)."""
        if not self.per_token or not units or tokens is None:
            return None
        return median(self.per_token) * sum(padded_cost(u, tokens) for u in units) / len(units)
