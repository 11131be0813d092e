"""Rank intervals from a board's kept :class:`RankBasis` equal, exactly, the computation they replace (issue 36:
the first read at a new weight setting no slower than a plain read). The reference below is main's
``bootstrap.rank_intervals`` before the basis, kept verbatim as the definition; boards are drawn at random with
the awkward cases in them: ties, equal resamples, rows without outcomes or without a measured value on a test
set, zero dataset weights, other resample counts, subsets and reorderings of the basis rows."""

from __future__ import annotations

import numpy as np
import pytest

from dynadesk.scoring import bootstrap as B
from dynadesk.scoring.dynascore import _ranks_2d
from dynadesk.scoring.rank_basis import RankBasis, first_width, rank_bounds


def _reference(dynascores, perf, resampled, dataset_weights, perf_weight):
    """main's rank_intervals (before the basis), verbatim."""
    n = len(dynascores)
    if n < 2 or not any(resampled):
        return None
    width = next(v.values.shape[0] for r in resampled for v in r.values())
    shifts = np.zeros((n, width))
    for i in range(n):
        values = {d: v for d, v in perf[i].items() if d}
        weights = {d: float(dataset_weights.get(d, 1.0)) for d in values}
        total = sum(weights.values())
        if not total:
            continue
        for name, r in resampled[i].items():
            if name in values and r.values.shape[0] == width and weights[name]:
                shifts[i] += weights[name] / total * (r.values - values[name])
    ranks = _ranks_2d(np.asarray(dynascores, dtype=float)[:, None] + perf_weight * shifts)
    lows = np.percentile(ranks, 2.5, axis=1, method="lower")
    highs = np.percentile(ranks, 97.5, axis=1, method="higher")
    return [[int(lo), int(hi)] for lo, hi in zip(lows, highs)]


SETS = ("a", "b", "c")


def _board(rng: np.random.Generator, n: int, width: int = 200):
    """A random board: dynascores with ties, measured perf per test set, shared resamples (some rows without,
    some test sets missing, one row at another resample count, two rows with identical resamples)."""
    scores = np.round(rng.normal(50, 8, n), int(rng.integers(0, 3)))
    scores[1] = scores[0]
    perf, resampled = [], []
    for _ in range(n):
        sets = [d for d in SETS if rng.random() < 0.8]
        rng.shuffle(sets)
        values = {d: float(np.round(rng.uniform(40, 90), 1)) for d in sets}
        if rng.random() < 0.5:
            values[""] = float(np.mean(list(values.values()) or [0.0]))
        perf.append(values)
        rows = {}
        if rng.random() < 0.9:
            for d in [*sets, "z"] if rng.random() < 0.2 else sets:
                w = width if rng.random() < 0.95 else width // 2
                rows[d] = B.Resampled("accuracy", "sha256:" + d, values.get(d, 50.0),
                                      np.round(rng.normal(values.get(d, 50.0), 3, w), 2))
        resampled.append(rows)
    resampled[1] = dict(resampled[0])
    perf[1] = dict(perf[0])
    return scores.tolist(), perf, resampled


@pytest.mark.parametrize("seed", range(40))
def test_rank_intervals_equal_the_reference_exactly(seed):
    rng = np.random.default_rng(seed)
    n = int(rng.integers(2, 40))
    scores, perf, resampled = _board(rng, n)
    for dw in ({}, {"a": 0.0}, {"a": 2.0, "b": 0.5}, {"a": 0.0, "b": 0.0, "c": 0.0}, {"c": 3.0}):
        for pw in (0.0, 0.2, 1 / 3, 1.0):
            assert B.rank_intervals(scores, perf, resampled, dw, pw) == _reference(scores, perf, resampled, dw, pw)


def test_a_kept_basis_serves_any_subset_and_order_of_its_rows_exactly():
    rng = np.random.default_rng(7)
    scores, perf, resampled = _board(rng, 60, width=1000)
    names = [f"row-{i}" for i in range(60)]
    width = first_width(resampled)
    assert width is not None
    basis = RankBasis.build(names, perf, resampled, width)
    for trial in range(20):
        pick = rng.permutation(60)[: int(rng.integers(2, 61))].tolist()
        dw = {"a": float(rng.choice([0, 0.5, 1, 2])), "b": float(rng.choice([0, 1, 3]))}
        pw = float(rng.uniform(0, 1))
        moved = [scores[i] + float(rng.normal(0, 1)) for i in pick]
        got = basis.intervals([names[i] for i in pick], moved, dw, pw)
        # the reference on those rows in that order, at the basis's resample count
        sub = [resampled[i] for i in pick]
        if first_width(sub) != width:
            continue
        assert got == _reference(moved, [perf[i] for i in pick], sub, dw, pw), trial


def test_rank_bounds_count_what_percentiles_of_the_rank_matrix_give():
    rng = np.random.default_rng(3)
    for width, n in ((1000, 200), (999, 3), (40, 2), (1, 5)):
        scores = np.round(rng.normal(0, 1, (width, n)), 1)  # many exact ties
        ranks = _ranks_2d(scores.T)
        want = [[int(lo), int(hi)] for lo, hi in zip(np.percentile(ranks, 2.5, axis=1, method="lower"),
                                                      np.percentile(ranks, 97.5, axis=1, method="higher"))]
        assert rank_bounds(scores) == want
    for scale in (1e6, 1e-3):  # large magnitudes (the tolerance is relative), a NaN among them
        scores = np.round(rng.normal(0, 1, (300, 7)), 3) * scale + scale
        scores[:, 2] = scores[:, 3] * (1 + 1e-11)
        scores[5, 4] = np.nan
        ranks = _ranks_2d(scores.T)
        want = [[int(lo), int(hi)] for lo, hi in zip(np.percentile(ranks, 2.5, axis=1, method="lower"),
                                                      np.percentile(ranks, 97.5, axis=1, method="higher"))]
        assert rank_bounds(scores) == want
    # within the ranking tolerance (1e-9 relative) two scores share a rank
    assert rank_bounds(np.array([[1.0, 1.0 + 1e-12, 0.5]])) == [[1, 1], [1, 1], [3, 3]]


def test_the_server_board_keeps_one_basis_and_answers_as_the_reference(tmp_path):
    """The public board's rank intervals (BoardIntervals, one basis per prepared board) equal the reference on the
    same rows for several weight settings, each a first read."""
    from dynadesk.scoring.board import ScoreBoard, Weighting
    from dynadesk.sync.rules.board import BoardIntervals, PreparedBoard

    rng = np.random.default_rng(11)
    scores, perf, resampled = _board(rng, 30, width=1000)
    names = [f"m{i:02d}" for i in range(30)]
    tables = {n: {"perf": p, "memory": {"": 1.0 + i / 10}, "throughput": {"": 100.0 + i},
                  "robustness": {"": 50.0 + i % 7}, "fairness": {"": 60.0 + i % 5}}
              for i, (n, p) in enumerate(zip(names, perf))}
    for t in tables.values():
        if not t["perf"]:
            t["perf"] = {"": 50.0}
    rows = {n: {"metrics": {m: {"values": v} for m, v in tables[n].items()}} for n in names}
    board = PreparedBoard(rows, {}, ScoreBoard.from_tables(tables))
    bi = BoardIntervals({n: {} for n in names}, dict(zip(names, resampled)))
    for k, (mw, dw) in enumerate([({}, {}), ({"perf": 4.0}, {"a": 2.0}), ({"memory": 0.0}, {"b": 0.0}),
                                  ({"perf": 1.0, "throughput": 3.0}, {"a": 0.5, "c": 2.0})]):
        scored = board.board.score(weighting=Weighting(mw, dw))
        got = bi.rank_intervals(("key", k), scored, board, dw)
        want = _reference(scored.scores.tolist(), [board.rows[n]["metrics"]["perf"]["values"] for n in scored.names],
                          [bi.resampled.get(n, {}) for n in scored.names], dw, scored.weights.get("perf", 0.0))
        assert want is not None and len(scored.names) >= 10  # rows lacking a weighted test set are left off
        assert [got[n] for n in scored.names] == want
    assert len(bi.bases) == 1  # built once, kept for every weight setting


def test_paired_many_equals_one_pair_at_a_time_exactly():
    """A new order's neighbour tests, taken at once, are the pair-by-pair tests (paired_resampled)."""
    rng = np.random.default_rng(5)
    rows = []
    for k in range(30):
        data = "sha256:" + ("a" if k % 5 else "b")
        values = np.round(rng.normal(70, 2, 1000 if k != 7 else 500), 2)
        rows.append(B.Resampled("accuracy", data, float(np.round(rng.normal(70, 1), 2)), values))
    rows.append(rows[3])  # identical: a zero difference, tied
    pairs = [(rows[i], rows[j]) for i in range(len(rows)) for j in range(len(rows)) if i != j][:400]
    assert B.paired_many(pairs) == [B.paired_resampled(a, b) for a, b in pairs]
    assert any(t is None for t in B.paired_many(pairs)) and any(t and t["tied"] for t in B.paired_many(pairs))
