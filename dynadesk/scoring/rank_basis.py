"""Dynascore rank intervals at any weights from one matrix per board, worked out once (issue 36: no slower reads).

A row's resampled Dynascore is its Dynascore plus ``perf_weight`` times a weighted mean of its task metric's
change on each test set's shared resamples (:func:`dynadesk.scoring.bootstrap.rank_intervals`). The changes
(resampled value minus measured value, per test set) do not depend on the weights, so :class:`RankBasis` keeps
them as one ``slots x resamples x rows`` array, built once per board (the rows' resamples never change); a
query then costs a few vectorised multiply-adds, one sort per resample row and one count, instead of a Python
loop over rows and a column-wise sort. Every floating-point operation is the one the reference computation
performs, in the same order, so the intervals are equal to it exactly (tests/test_scoring_rank_basis.py).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Protocol

import numpy as np
import numpy.typing as npt

from dynadesk.scoring.dynascore import _RANK_TOL


class Resampled(Protocol):
    """What a basis reads of ``bootstrap.Resampled`` (not imported: bootstrap builds bases, module cycle)."""

    @property
    def values(self) -> npt.NDArray[np.float64]: ...

LOW_Q, HIGH_Q = 2.5, 97.5  # the central 95% of a row's ranks: the lower and higher order statistics


def first_width(resampled: Sequence[Mapping[str, Resampled]]) -> int | None:
    """The resample count the intervals use: the first row's first test set's (rows in board order)."""
    return next((v.values.shape[0] for r in resampled for v in r.values()), None)


@dataclass(frozen=True)
class RankBasis:
    """The weight-free part of the rank intervals of a board's rows, at one resample count ``width``."""

    names: list[Any]
    index: dict[Any, int]
    width: int
    perf_sets: list[list[str]]     # per row: the test sets it has a measured task metric on, in its order
    slot_sets: list[list[str]]     # per row: the test sets that move it, in its resamples' order
    diffs: npt.NDArray[np.float64]  # slots x width x rows: resampled minus measured task metric (0 if none)
    datasets: list[str]             # every test set named, sorted; the codes below index it
    perf_codes: npt.NDArray[np.int64]  # rows x most test sets: each row's perf_sets as codes, -1 after the last
    slot_codes: npt.NDArray[np.int64]  # slots x rows: each row's slot_sets as codes, -1 after the last

    @classmethod
    def build(cls, names: Sequence[Any], perf: Sequence[Mapping[str, float]],
              resampled: Sequence[Mapping[str, Resampled]], width: int) -> RankBasis:
        """``perf[i]``: row i's measured task metric by test set ('' = whole run, not used); ``resampled[i]``: its
        shared resamples by test set (those of another count than ``width`` do not move it)."""
        perf_sets, slot_sets, columns = [], [], []
        for values, rows in zip(perf, resampled):
            measured = {d: v for d, v in values.items() if d}
            perf_sets.append(list(measured))
            slots = [(d, r.values - measured[d]) for d, r in rows.items()
                     if d in measured and r.values.shape[0] == width]
            slot_sets.append([d for d, _ in slots])
            columns.append([v for _, v in slots])
        depth = max((len(c) for c in columns), default=0)
        diffs = np.zeros((depth, width, len(columns)))
        for i, col in enumerate(columns):
            for s, v in enumerate(col):
                diffs[s, :, i] = v
        datasets = sorted({d for ds in perf_sets for d in ds} | {d for ds in slot_sets for d in ds})
        code = {d: k for k, d in enumerate(datasets)}  # -1 (padding) picks the weight 0 appended at the end
        perf_codes = np.full((len(columns), max((len(x) for x in perf_sets), default=0)), -1, dtype=np.int64)
        slot_codes = np.full((depth, len(columns)), -1, dtype=np.int64)
        for i, (ps, ss) in enumerate(zip(perf_sets, slot_sets)):
            perf_codes[i, :len(ps)] = [code[d] for d in ps]
            slot_codes[:len(ss), i] = [code[d] for d in ss]
        return cls(list(names), {n: i for i, n in enumerate(names)}, width, perf_sets, slot_sets, diffs,
                   datasets, perf_codes, slot_codes)

    def weights(self, rows: Sequence[int], dataset_weights: Mapping[str, float]) -> npt.NDArray[np.float64]:
        """``slots x len(rows)``: each slot's share of its row's dataset-weighted mean (0 where it does not move):
        the weight over the sum of the row's test sets' weights, added in the row's order as ``sum`` adds them."""
        by_code = np.array([float(dataset_weights.get(d, 1.0)) for d in self.datasets] + [0.0])
        totals = np.zeros(len(self.names))
        for column in self.perf_codes.T:  # one test set at a time, in each row's order: the same additions
            totals = totals + by_code[column]
        share = by_code[self.slot_codes]
        with np.errstate(divide="ignore", invalid="ignore"):
            out = np.where((share != 0) & (totals != 0), share / totals, 0.0)
        return np.asarray(out[:, rows], dtype=np.float64)

    def intervals(self, names: Sequence[Any], dynascores: Sequence[float], dataset_weights: Mapping[str, float],
                  perf_weight: float) -> list[list[int]]:
        """Each of ``names``' rank interval among ``names`` (a subset of the basis rows, in any order)."""
        rows = [self.index[n] for n in names]
        whole = rows == list(range(len(self.names)))
        diffs = self.diffs if whole else self.diffs[:, :, rows]
        w = self.weights(rows, dataset_weights)
        shifts = np.zeros((self.width, len(rows)))
        for s in range(diffs.shape[0]):
            shifts += w[s][None, :] * diffs[s]
        scores = np.asarray(dynascores, dtype=float)[None, :] + perf_weight * shifts
        return rank_bounds(scores)


def rank_bounds(scores: npt.NDArray[np.float64]) -> list[list[int]]:
    """``resamples x rows`` Dynascores -> each row's [2.5th (lower), 97.5th (higher)] percentile of its competition
    rank (``dynascore._ranks_2d``'s: 1 = best, scores within 1e-9 relative share a rank), as numpy's
    ``percentile(..., method="lower"/"higher")`` of the rank matrix gives them; counted, not sorted per row."""
    width, n = scores.shape
    neg = -scores
    order = np.argsort(neg, axis=1)  # equal scores share a rank: the sort need not be stable
    s = -np.sort(neg, axis=1)        # the same values as scores taken in that order
    gap = s[:, :-1] - s[:, 1:]
    # a later position starts a new rank unless within tolerance of the one before: test the exact rule only
    # where the gap is under the tolerance at the largest magnitude (it is never larger anywhere)
    top = float(np.abs(s).max(initial=0.0))
    near = ~(gap > _RANK_TOL * (max(1.0, top) if top == top else np.inf))  # with a NaN: every gap tested exactly
    positions = np.arange(1, n + 1)
    if near.any():
        new_group = np.ones((width, n), dtype=bool)
        at = np.nonzero(near)
        new_group[:, 1:][at] = gap[at] > _RANK_TOL * np.maximum(1.0, np.abs(s[:, :-1][at]))
        rank = np.maximum.accumulate(np.where(new_group, positions, 0), axis=1)
    else:
        rank = np.broadcast_to(positions, (width, n))
    counts = np.bincount((order * (n + 1) + rank).ravel(), minlength=n * (n + 1)).reshape(n, n + 1)
    below = np.cumsum(counts, axis=1)  # below[i, r]: resamples in which row i ranks r or better
    index = np.arange(width)
    k_low = int(np.percentile(index, LOW_Q, method="lower"))
    k_high = int(np.percentile(index, HIGH_Q, method="higher"))
    lows = np.argmax(below > k_low, axis=1)
    highs = np.argmax(below > k_high, axis=1)
    return [[int(lo), int(hi)] for lo, hi in zip(lows, highs)]
