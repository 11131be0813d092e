"""Seeded bootstrap intervals of a task metric, and the paired bootstrap between two runs.

Why: a board that shows one number per dataset cannot say whether two rows differ. This module turns a
run's per-example predictions and golds into a 95% percentile interval of the task metric, and two runs on
the same test set into a paired test of their difference (Berg-Kirkpatrick et al. 2012; Dror et al. 2018).

How (the documented procedure; docs/board.md, "Intervals, ties and snapshots"):

- ``RESAMPLES`` (1000) resamples of the examples, with replacement, each the size of the test set.
- The whole metric is recomputed on every resample: accuracy / squad_f1 / exact_match as the mean of the
  per-example scores, macro-F1 from the resample's own confusion counts (labels seen in the resample).
- The interval is the 2.5th and 97.5th percentile (numpy's default linear interpolation) of the resampled
  values. The seed is the first 8 bytes of sha256 over the predictions digest, the dataset's file digest
  and the metric name (:func:`derive_seed`), drawn with numpy's PCG64 ``default_rng``: an audit whose re-run
  writes the same predictions reproduces the interval bit for bit.
- Paired test: both runs are resampled with the same indices; the difference A - B is recomputed per
  resample; the two are *tied* when the 95% interval of the difference contains 0 (alpha 0.05, two-sided).

Pure: numpy only, no store, no files (:func:`run_intervals` reads a run folder's own files, nothing else).
"""

from __future__ import annotations

import base64
import binascii
import hashlib
import json
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import numpy.typing as npt

from dynadesk.evaluator import metrics as M

RESAMPLES = 1000
LEVEL = 95.0
ALPHA = 0.05
METHOD = "percentile-bootstrap-v1"

CHUNK_DRAWS = 2_000_000  # example indices drawn at once: memory stays bounded whatever the test set's size

__all__ = ["ALPHA", "LEVEL", "METHOD", "RESAMPLES", "Outcomes", "Resampled", "board_seed", "decode_outcomes",
           "derive_seed", "encode_outcomes", "interval", "neighbour_tests", "outcomes", "pair_seed", "paired",
           "paired_many", "paired_resampled", "rank_intervals", "resample_indices", "resampled_statistic",
           "run_bootstrap", "run_intervals"]


def derive_seed(*parts: str) -> int:
    """A 64-bit seed from the run's digests (and the metric): the same inputs give the same resamples."""
    h = hashlib.sha256("\n".join(parts).encode("utf-8")).digest()
    return int.from_bytes(h[:8], "big")


def resample_indices(n: int, seed: int, resamples: int = RESAMPLES) -> npt.NDArray[np.int64]:
    """``resamples`` rows of ``n`` example indices drawn with replacement (PCG64, ``seed``)."""
    rng = np.random.default_rng(seed)
    return rng.integers(0, n, size=(resamples, n), dtype=np.int64)


def _index_chunks(n: int, seed: int, resamples: int) -> Iterator[npt.NDArray[np.int64]]:
    """The rows of :func:`resample_indices` a few at a time (the same stream: PCG64 fills them in order)."""
    rng = np.random.default_rng(seed)
    step = max(1, CHUNK_DRAWS // max(n, 1))
    for start in range(0, resamples, step):
        yield rng.integers(0, n, size=(min(step, resamples - start), n), dtype=np.int64)


def resampled_statistic(o: Outcomes, seed: int, resamples: int = RESAMPLES) -> npt.NDArray[np.float64]:
    """The metric on each of ``resamples`` seeded resamples, drawn in chunks (bounded memory; same values as
    ``o.statistic(resample_indices(...))``)."""
    parts = [o.statistic(idx) for idx in _index_chunks(o.size, seed, resamples)]
    return np.concatenate(parts) if parts else np.zeros(0, dtype=np.float64)


@dataclass(frozen=True)
class Outcomes:
    """What the metric needs per example: scores (mean metrics) or label codes (macro-F1)."""

    metric: str
    scores: npt.NDArray[np.float64] | None = None  # per-example 0-100 score, mean metrics
    pred: npt.NDArray[np.int64] | None = None  # macro-F1: predicted label code
    gold: npt.NDArray[np.int64] | None = None  # macro-F1: resolved gold label code
    allowed: npt.NDArray[np.bool_] | None = None  # macro-F1: label codes the average may use
    one_answer: bool = False  # mean metrics: one (normalised) answer or abstention for every example, golds varied

    @property
    def size(self) -> int:
        arr = self.scores if self.scores is not None else self.pred
        return 0 if arr is None else int(arr.shape[0])

    def statistic(self, idx: npt.NDArray[np.int64]) -> npt.NDArray[np.float64]:
        """The metric (0-100) on each resample (a row of ``idx``)."""
        if self.scores is not None:
            return np.asarray(self.scores[idx].mean(axis=1), dtype=np.float64)
        assert self.pred is not None and self.gold is not None and self.allowed is not None
        return _macro_f1_rows(self.pred[idx], self.gold[idx], self.allowed)


def _macro_f1_rows(p: npt.NDArray[np.int64], g: npt.NDArray[np.int64],
                   allowed: npt.NDArray[np.bool_]) -> npt.NDArray[np.float64]:
    rows, n = p.shape
    labels = allowed.shape[0]
    offset = (np.arange(rows, dtype=np.int64) * labels)[:, None]
    size = rows * labels
    pc = np.bincount((p + offset).ravel(), minlength=size).reshape(rows, labels)
    gc = np.bincount((g + offset).ravel(), minlength=size).reshape(rows, labels)
    hit = (p == g)
    tp = np.bincount((p + offset)[hit], minlength=size).reshape(rows, labels)
    denom = pc + gc  # 2tp + fp + fn, with fp = pc - tp and fn = gc - tp
    use = (denom > 0) & allowed[None, :]
    f1 = np.where(use, 2.0 * tp / np.maximum(denom, 1), 0.0)
    count = use.sum(axis=1)
    out = np.where(count > 0, f1.sum(axis=1) / np.maximum(count, 1), 0.0) * 100.0
    return np.asarray(out, dtype=np.float64)


def outcomes(task: Mapping[str, Any], metric: str, predictions: Sequence[Any], golds: Sequence[Any]) -> Outcomes:
    """Per-example outcomes of ``predictions`` against ``golds`` for ``metric`` (raises ``MetricError``)."""
    if len(predictions) != len(golds):
        raise M.MetricError(f"{len(predictions)} predictions for {len(golds)} examples")
    preds = [M.prediction_value(task, p, f"prediction {i}") for i, p in enumerate(predictions)]
    if metric in M.SPAN_METRICS:
        # a SQuAD 2.0 gold (M.example_gold) is scored by the v2.0 rule, as the point metric is
        return Outcomes(metric, scores=np.array([M.span_score(metric, p, g) for p, g in zip(preds, golds)],
                                                dtype=np.float64),
                        one_answer=_one_answer([M.normalize_answer(p) for p in preds], golds))
    if metric == "accuracy":
        return Outcomes(metric, scores=np.array([M.accuracy([p], [g]) for p, g in zip(preds, golds)], dtype=np.float64),
                        one_answer=_one_answer(preds, golds))
    if metric != "macro_f1":
        raise M.MetricError(f"no bootstrap for metric '{metric}'")
    resolved = []
    for i, (p, g) in enumerate(zip(preds, golds)):
        options = M._gold_set(g, f"example {i}")
        resolved.append(p if p in options else options[0])
    task_labels = list(task.get("labels") or [])
    names = sorted(set(task_labels) | set(preds) | set(resolved))
    code = {name: i for i, name in enumerate(names)}
    allowed = np.array([(name in task_labels) if task_labels else True for name in names], dtype=np.bool_)
    return Outcomes(metric, pred=np.array([code[p] for p in preds], dtype=np.int64),
                    gold=np.array([code[g] for g in resolved], dtype=np.int64), allowed=allowed)


def _one_answer(answers: Sequence[str], golds: Sequence[Any]) -> bool:
    """Whether one answer (a span's normalised text, "" for an abstention, or a label) was given for every example
    of a test set whose golds are not all alike: a constant predictor (scoring.baselines), recorded in the compact
    outcome because its per-example scores do not show the answers. Golds all alike are no evidence (a perfect
    model answers one thing there too)."""
    return len(set(answers)) == 1 and len({repr(g) for g in golds}) > 1


def _bounds(values: npt.NDArray[np.float64]) -> tuple[float, float]:
    tail = (100.0 - LEVEL) / 2
    low, high = np.percentile(values, [tail, 100.0 - tail])
    return float(low), float(high)


def interval(o: Outcomes, seed: int, resamples: int = RESAMPLES) -> dict[str, Any]:
    """The ``LEVEL`` % percentile interval of the metric over ``resamples`` seeded resamples."""
    if o.size == 0:
        raise M.MetricError("no examples: the interval is undefined")
    low, high = _bounds(resampled_statistic(o, seed, resamples))
    return {"metric": o.metric, "low": low, "high": high, "level": LEVEL, "resamples": resamples,
            "seed": f"{seed:016x}", "method": METHOD}


def paired(a: Outcomes, b: Outcomes, seed: int, resamples: int = RESAMPLES) -> dict[str, Any]:
    """Paired bootstrap of A - B on one test set (aligned examples): interval, p-value, tied or not.

    ``p_value``: twice the share of resamples whose difference falls on the far side of 0 from the observed
    one (capped at 1). ``tied``: the ``LEVEL`` % interval of the difference contains 0."""
    if a.metric != b.metric or a.size != b.size:
        raise M.MetricError(f"cannot pair {a.metric} over {a.size} examples with {b.metric} over {b.size}")
    if a.size == 0:
        raise M.MetricError("no examples: the paired test is undefined")
    observed = _observed(a) - _observed(b)
    delta = resampled_statistic(a, seed, resamples) - resampled_statistic(b, seed, resamples)
    return _difference(observed, delta, seed)


def _observed(o: Outcomes) -> float:
    return float(o.statistic(np.arange(o.size, dtype=np.int64)[None, :])[0])


def _difference(observed: float, delta: npt.NDArray[np.float64], seed: int) -> dict[str, Any]:
    """The paired test's answer from the observed difference and its resampled values (see :func:`paired`)."""
    low, high = _bounds(delta)
    if observed > 0:
        far = float(np.mean(delta <= 0))
    elif observed < 0:
        far = float(np.mean(delta >= 0))
    else:
        far = 0.5
    return {"delta": observed, "low": low, "high": high, "p_value": min(1.0, 2 * far),
            "tied": bool(low <= 0.0 <= high), "level": LEVEL, "resamples": int(delta.shape[0]),
            "seed": f"{seed:016x}"}


def encode_outcomes(o: Outcomes, data_sha256: str) -> dict[str, Any]:
    """A compact, JSON-safe form of per-example outcomes for paired tests between runs.

    Mean metrics: per-example score x100 as little-endian uint16 (exact for accuracy and exact match, squad
    F1 to 0.01 point); macro-F1: one (predicted, gold) pair of uint8 label codes per example, plus the labels."""
    out: dict[str, Any] = {"metric": o.metric, "n": o.size, "data_sha256": data_sha256}
    if o.scores is not None:
        q = np.rint(o.scores * 100).astype("<u2")
        return {**out, "encoding": "u16x100", "data": base64.b64encode(q.tobytes()).decode("ascii"),
                **({"one_answer": True} if o.one_answer else {})}  # absent otherwise: older bundles read the same
    assert o.pred is not None and o.gold is not None and o.allowed is not None
    if o.allowed.shape[0] > 255:
        raise M.MetricError(f"{o.allowed.shape[0]} labels: more than the 255 a compact outcome holds")
    pairs = np.stack([o.pred, o.gold], axis=1).astype("u1")
    return {**out, "encoding": "label-pairs-u8", "allowed": [bool(x) for x in o.allowed],
            "data": base64.b64encode(pairs.tobytes()).decode("ascii")}


def decode_outcomes(raw: Mapping[str, Any]) -> Outcomes:
    """The :class:`Outcomes` of :func:`encode_outcomes` (raises ``MetricError`` naming what is malformed)."""
    try:
        data = base64.b64decode(str(raw["data"]), validate=True)
        n, metric, encoding = int(raw["n"]), str(raw["metric"]), raw["encoding"]
        if encoding == "u16x100" and len(data) == 2 * n:
            return Outcomes(metric, scores=np.frombuffer(data, dtype="<u2").astype(np.float64) / 100.0,
                            one_answer=raw.get("one_answer") is True)
        if encoding == "label-pairs-u8" and len(data) == 2 * n:
            pairs = np.frombuffer(data, dtype="u1").reshape(n, 2).astype(np.int64)
            allowed = np.array([bool(x) for x in raw["allowed"]], dtype=np.bool_)
            if n and int(pairs.max()) >= allowed.shape[0]:
                raise M.MetricError("compact outcome: a label code beyond its label list")
            return Outcomes(metric, pred=pairs[:, 0].copy(), gold=pairs[:, 1].copy(), allowed=allowed)
    except (KeyError, TypeError, ValueError, binascii.Error) as exc:
        raise M.MetricError(f"compact outcome is malformed: {exc}") from None
    raise M.MetricError(f"compact outcome: unknown encoding {raw.get('encoding')!r} or {len(data)} bytes for {n}")


def pair_seed(digest_a: str, digest_b: str, data_sha256: str, metric: str) -> int:
    """The paired test's seed: symmetric in the two runs' prediction digests."""
    first, second = sorted((digest_a, digest_b))
    return derive_seed("paired", first, second, data_sha256, metric)


def run_bootstrap(spec_file: Path, data_dir: Path, predictions_file: Path,
                  predictions_digest: str) -> dict[str, Any]:
    """``{"intervals": {dataset: interval}, "outcomes": {dataset: compact outcomes}}`` of a finished run folder."""
    intervals, compact = _scan(spec_file, data_dir, predictions_file, predictions_digest)
    return {"intervals": intervals, "outcomes": compact}


def run_intervals(spec_file: Path, data_dir: Path, predictions_file: Path,
                  predictions_digest: str) -> dict[str, dict[str, Any]]:
    """The interval of the task metric on every test set of a finished run folder: ``{dataset: interval}``."""
    return _scan(spec_file, data_dir, predictions_file, predictions_digest)[0]


def _scan(spec_file: Path, data_dir: Path, predictions_file: Path,
          predictions_digest: str) -> tuple[dict[str, dict[str, Any]], dict[str, dict[str, Any]]]:
    """Reads the run's own spec, data files and predictions (what the worker scored); the seed of each
    dataset is :func:`derive_seed` of the predictions digest, the dataset file's digest and the metric."""
    from dynadesk.evaluator.schema import Spec

    spec = Spec.read(spec_file)
    task = spec.task
    metric = str(task["metric"])
    by_dataset: dict[str, dict[str, Any]] = {}
    with open(predictions_file, encoding="utf-8") as fh:
        for line in fh:
            row = json.loads(line)
            by_dataset.setdefault(row["dataset"], {})[row["id"]] = row["prediction"]
    out: dict[str, dict[str, Any]] = {}
    compact: dict[str, dict[str, Any]] = {}
    for ds in spec.datasets:
        if ds.role != "test":
            continue
        with open(data_dir / ds.file, encoding="utf-8") as fh:
            examples = [json.loads(line) for line in fh if line.strip()]
        preds = by_dataset.get(ds.name, {})
        missing = [ex["id"] for ex in examples if ex["id"] not in preds]
        if missing:
            raise M.MetricError(f"dataset '{ds.name}': no prediction for example '{missing[0]}'")
        o = outcomes(task, metric, [preds[ex["id"]] for ex in examples],
                     [M.example_gold(task, ex, f"dataset '{ds.name}' example '{ex['id']}'") for ex in examples])
        out[ds.name] = interval(o, derive_seed(predictions_digest, f"sha256:{ds.sha256}", metric))
        compact[ds.name] = encode_outcomes(o, f"sha256:{ds.sha256}")
    return out, compact


# ---------------------------------------------------------------------- boards (local, server, snapshots)
def board_seed(data_sha256: str, metric: str) -> int:
    """The seed of a board's shared resamples of one test set: every row scored on that data digest is resampled
    with the same index rows, so any two rows' resampled values form a paired bootstrap."""
    return derive_seed("rank", data_sha256, metric)


@dataclass(frozen=True)
class Resampled:
    """One row's task metric on one test set: the observed value and its values on the board's shared resamples
    (:func:`board_seed`). Worked out once per run or bundle (they never change) and kept; a paired test or a rank
    interval then costs a subtraction, not a bootstrap."""

    metric: str
    data_sha256: str
    observed: float
    values: npt.NDArray[np.float64]

    @classmethod
    def of(cls, raw: Mapping[str, Any], resamples: int = RESAMPLES) -> Resampled:
        """From a compact outcome (:func:`encode_outcomes`; raises ``MetricError`` when malformed)."""
        o = decode_outcomes(raw)
        if o.size == 0:
            raise M.MetricError("compact outcome: no examples")
        data = str(raw["data_sha256"])
        return cls(o.metric, data, _observed(o), resampled_statistic(o, board_seed(data, o.metric), resamples))

    def to_json(self) -> dict[str, Any]:
        """JSON-safe and exact (the values as little-endian float64, base64)."""
        return {"metric": self.metric, "data_sha256": self.data_sha256, "observed": self.observed,
                "values": base64.b64encode(self.values.astype("<f8").tobytes()).decode("ascii")}

    @classmethod
    def from_json(cls, raw: Mapping[str, Any]) -> Resampled:
        values = np.frombuffer(base64.b64decode(str(raw["values"])), dtype="<f8").astype(np.float64)
        return cls(str(raw["metric"]), str(raw["data_sha256"]), float(raw["observed"]), values)


def resampled_rows(outcomes_of: Mapping[str, Any]) -> dict[str, Resampled]:
    """``{dataset: Resampled}`` of a run's or bundle's compact outcomes; a malformed one is left out."""
    out: dict[str, Resampled] = {}
    for name, raw in (outcomes_of or {}).items():
        try:
            out[name] = Resampled.of(raw)
        except (M.MetricError, KeyError, TypeError, ValueError):
            continue
    return out


def paired_resampled(a: Resampled, b: Resampled) -> dict[str, Any] | None:
    """The paired bootstrap of A - B on one test set from two rows' shared resamples; None when the two were
    scored on different data (another version of the test set) or another metric: not a paired comparison."""
    if a.data_sha256 != b.data_sha256 or a.metric != b.metric or a.values.shape != b.values.shape:
        return None
    return _difference(a.observed - b.observed, a.values - b.values, board_seed(a.data_sha256, a.metric))


def neighbour_tests(order: Sequence[Any], resampled: Mapping[Any, Mapping[str, Resampled]],
                    cache: dict[tuple[Any, Any, str], dict[str, Any] | None],
                    rows: Sequence[int] | None = None) -> dict[Any, tuple[dict[str, dict[str, Any]], bool]]:
    """For each row (of ``rows``, positions in ``order``; default all) its paired test against the next row in
    ``order`` on every test set both carry, and whether it is *tied* with it (tied on every one of them, and at
    least one). ``cache`` keeps a pair's test (runs and bundles never change)."""
    out: dict[Any, tuple[dict[str, dict[str, Any]], bool]] = {}
    positions = [i for i in (range(len(order)) if rows is None else rows) if i + 1 < len(order)]
    new: dict[tuple[Any, Any, str], tuple[Resampled, Resampled]] = {}
    for i in positions:
        ra, rb = resampled.get(order[i]) or {}, resampled.get(order[i + 1]) or {}
        for name in set(ra) & set(rb):
            if (order[i], order[i + 1], name) not in cache:
                new[(order[i], order[i + 1], name)] = (ra[name], rb[name])
    cache.update(zip(new, paired_many(list(new.values()))))  # a new order's pairs at once (a weight change)
    for i in positions:
        a, b = order[i], order[i + 1]
        tests: dict[str, dict[str, Any]] = {}
        for name in sorted(set(resampled.get(a) or {}) & set(resampled.get(b) or {})):
            found = cache[(a, b, name)]
            if found is not None:
                tests[name] = found
        out[a] = (tests, bool(tests) and all(t["tied"] for t in tests.values()))
    return out


def paired_many(pairs: Sequence[tuple[Resampled, Resampled]]) -> list[dict[str, Any] | None]:
    """:func:`paired_resampled` of many pairs, the same values, their percentiles taken in one call per resample
    count (a board whose order changed tests its new neighbours at once)."""
    out: list[dict[str, Any] | None] = [None] * len(pairs)
    groups: dict[int, list[int]] = {}
    for k, (a, b) in enumerate(pairs):
        if a.data_sha256 == b.data_sha256 and a.metric == b.metric and a.values.shape == b.values.shape:
            groups.setdefault(a.values.shape[0], []).append(k)
    tail = (100.0 - LEVEL) / 2
    for ks in groups.values():
        deltas = np.stack([pairs[k][0].values - pairs[k][1].values for k in ks])
        lows, highs = np.percentile(deltas, [tail, 100.0 - tail], axis=1)
        at_most, at_least = np.mean(deltas <= 0, axis=1), np.mean(deltas >= 0, axis=1)
        for j, k in enumerate(ks):
            a, b = pairs[k]
            observed = a.observed - b.observed
            far = float(at_most[j]) if observed > 0 else float(at_least[j]) if observed < 0 else 0.5
            low, high = float(lows[j]), float(highs[j])
            out[k] = {"delta": observed, "low": low, "high": high, "p_value": min(1.0, 2 * far),
                      "tied": bool(low <= 0.0 <= high), "level": LEVEL, "resamples": int(deltas.shape[1]),
                      "seed": f"{board_seed(a.data_sha256, a.metric):016x}"}
    return out


def rank_intervals(dynascores: Sequence[float], perf: Sequence[Mapping[str, float]],
                   resampled: Sequence[Mapping[str, Resampled]], dataset_weights: Mapping[str, float],
                   perf_weight: float) -> list[list[int]] | None:
    """Each row's Dynascore rank interval: the central 95% of its competition rank over the shared resamples,
    every row's task metric recomputed per dataset and averaged with the dataset weights, its Dynascore moved by
    ``perf_weight`` (normalised) times the change, measured metrics and exchange rates held fixed. A row without
    outcomes for a dataset keeps its measured perf there. None when fewer than two rows or no row has outcomes.
    (:class:`~dynadesk.scoring.rank_basis.RankBasis` does the work; a board that ranks often keeps its basis.)"""
    from dynadesk.scoring.rank_basis import RankBasis, first_width

    n = len(dynascores)
    width = first_width(resampled)
    if n < 2 or width is None:
        return None
    rows = list(range(n))
    return RankBasis.build(rows, perf, resampled, width).intervals(rows, dynascores, dataset_weights, perf_weight)
