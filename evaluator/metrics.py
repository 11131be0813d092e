"""Task metrics, per-tag breakdowns and the Dynaboard consistency score (0-100 scales).

Pure Python (stdlib only): this module runs inside the evaluation container and
on the host alike, so it must not import numpy, torch or ``dynadesk`` core.

API (every score is on 0-100):

- ``accuracy(preds, golds)``: a gold may be one label or a list of acceptable labels.
- ``macro_f1(preds, golds, labels)``: unweighted mean of per-label F1 over the labels
  that occur in the golds or the predictions (a label absent from both has no F1).
- ``squad_f1(pred, golds)`` / ``exact_match(pred, golds)``: one QA answer against its gold
  answers, SQuAD-normalised, maximised over golds (divide by 100 for the 0-1 fraction
  that a fooled-rule threshold such as ``answer_f1_below: 0.4`` uses).
- ``squad_v2_f1(pred, golds)`` / ``squad_v2_exact(pred, golds)``: the official SQuAD v2.0 rule: golds
  that normalise to empty are dropped, and no gold left (an unanswerable question, ``[]``) means the
  gold is the empty answer (an empty prediction scores 100, any answer 0). A dataset imported with its
  unanswerable questions marks its examples (``metadata.squad_v2``) and is scored with this rule.
- ``task_score(task_dict, predictions, examples)``: ``{"perf", <task metric>, <secondary...>}``.
- ``tag_breakdown(task_dict, predictions, examples)``: the same per example tag, plus ``n``.
- ``consistency_report(task_dict, original_preds, perturbed_preds_by_source)``: robustness /
  fairness as Dynaboard computes them (``get_unperturbed_percent``), with the number of
  source examples they rest on and a low-confidence flag; ``consistency_score`` is its value.

Predictions are the adapter's dicts (``{"label": ...}`` or ``{"answer": ...}``) or bare
strings; examples are dataset examples (``label`` or ``answers`` gold field). Bad input
raises :class:`MetricError` (a ``ValueError``) naming the position that is wrong.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import replace
from typing import Any

from dynadesk.evaluator.answers import (  # re-exported: the SQuAD scores are metrics too
    SQUAD_V2_KEY,
    MetricError,
    SquadV2Answers,
    exact_match,
    normalize_answer,
    squad_f1,
    squad_v2_exact,
    squad_v2_f1,
    squad_v2_golds,
    token_f1,
)
from dynadesk.evaluator.kinds import KINDS, kind_of
from dynadesk.evaluator.metric_registry import (  # run_value re-exported: the rule a MetricDef declares
    METRICS,
    Compute,
    register_metric,
    run_value,
)

LABEL_METRICS = KINDS["label"].metrics
SPAN_METRICS = KINDS["span"].metrics

__all__ = ["SQUAD_V2_KEY", "MetricError", "SquadV2Answers", "exact_match", "normalize_answer", "squad_f1",
           "run_value", "squad_v2_exact", "squad_v2_f1", "squad_v2_golds", "token_f1"]


# --------------------------------------------------------------------------- labels

def _gold_set(gold: Any, where: str) -> tuple[str, ...]:
    if isinstance(gold, str):
        return (gold,)
    if isinstance(gold, (list, tuple)) and gold and all(isinstance(g, str) for g in gold):
        return tuple(gold)
    raise MetricError(f"{where}: gold must be a label or a non-empty list of labels, got {gold!r}")


def _check_lengths(preds: Sequence[Any], golds: Sequence[Any]) -> None:
    if len(preds) != len(golds):
        raise MetricError(f"{len(preds)} predictions for {len(golds)} examples")


def accuracy(preds: Sequence[str], golds: Sequence[Any]) -> float:
    """Percent of predictions that are one of their example's acceptable labels."""
    _check_lengths(preds, golds)
    if not preds:
        return 0.0
    hits = sum(1 for i, (p, g) in enumerate(zip(preds, golds)) if p in _gold_set(g, f"example {i}"))
    return 100.0 * hits / len(preds)


def macro_f1(preds: Sequence[str], golds: Sequence[Any], labels: Iterable[str] | None = None) -> float:
    """Macro-averaged F1 (as sklearn's ``average="macro"`` with the labels seen).

    A multi-gold example counts as the predicted label when that label is acceptable,
    otherwise as its first listed label. ``labels`` restricts the average to the task's
    labels; a label that neither golds nor predictions use is left out (its F1 is 0/0).
    """
    _check_lengths(preds, golds)
    if not preds:
        return 0.0
    resolved = []
    for i, (p, g) in enumerate(zip(preds, golds)):
        options = _gold_set(g, f"example {i}")
        resolved.append(p if p in options else options[0])
    tp: Counter[str] = Counter()
    fp: Counter[str] = Counter()
    fn: Counter[str] = Counter()
    for p, g in zip(preds, resolved):
        if p == g:
            tp[p] += 1
        else:
            fp[p] += 1
            fn[g] += 1
    seen = set(preds) | set(resolved)
    use = [lab for lab in labels if lab in seen] if labels is not None else sorted(seen)
    if not use:
        return 0.0
    total = 0.0
    for lab in use:
        denom = 2 * tp[lab] + fp[lab] + fn[lab]
        total += (2 * tp[lab] / denom) if denom else 0.0
    return 100.0 * total / len(use)


def _span_score(metric: str, pred: str, gold: Any) -> float:
    if isinstance(gold, SquadV2Answers):
        return squad_v2_f1(pred, gold) if metric == "squad_f1" else squad_v2_exact(pred, gold)
    return squad_f1(pred, gold) if metric == "squad_f1" else exact_match(pred, gold)


# --------------------------------------------------------------------------- task level

def _kind(task: Mapping[str, Any]) -> Any:
    try:
        return kind_of(task)
    except ValueError as exc:
        raise MetricError(str(exc)) from None


def _task_metrics(task: Mapping[str, Any]) -> list[str]:
    try:
        primary = task["metric"]
    except (KeyError, TypeError):
        raise MetricError("task dict lacks 'metric'") from None
    out = [primary]
    out += [m for m in task.get("secondary_metrics") or () if m != primary]
    allowed = _kind(task).metrics
    for m in out:
        if m not in allowed:
            raise MetricError(f"metric '{m}' does not apply to a task with output kind "
                              f"'{_kind(task).name}' (use {', '.join(allowed)})")
    return out


def prediction_value(task: Mapping[str, Any], pred: Any, where: str = "prediction") -> str:
    """The label or answer string of one prediction (adapter dict or bare string)."""
    key = _kind(task).output_key
    if isinstance(pred, str):
        return pred
    if isinstance(pred, Mapping) and isinstance(value := pred.get(key), str):
        return value
    raise MetricError(f"{where}: expected a string or a dict with a string '{key}', got {pred!r}")


def _gold(task: Mapping[str, Any], example: Mapping[str, Any], where: str) -> Any:
    key = _kind(task).gold_field
    if not isinstance(example, Mapping) or key not in example:
        raise MetricError(f"{where}: example lacks its gold field '{key}'")
    meta = example.get("metadata")
    if key == "answers" and isinstance(meta, Mapping) and meta.get(SQUAD_V2_KEY) is True:
        gold = example[key]
        if not isinstance(gold, (list, tuple)):
            raise MetricError(f"{where}: a SQuAD 2.0 example's answers must be a list, got {gold!r}")
        return SquadV2Answers(gold)
    return example[key]


def example_gold(task: Mapping[str, Any], example: Mapping[str, Any], where: str = "example") -> Any:
    """An example's gold as every metric scores it (a SQuAD 2.0 example's answers as :class:`SquadV2Answers`):
    the one reading the worker, the host's recompute and the bootstrap share."""
    return _gold(task, example, where)


def span_score(metric: str, pred: str, gold: Any) -> float:
    """One answer's score (0-100) under ``metric``, by the v2.0 rule for a :class:`SquadV2Answers` gold."""
    return _span_score(metric, pred, gold)


def metric_value(task: Mapping[str, Any], metric: str, preds: Sequence[str], golds: Sequence[Any]) -> float:
    """One named task metric over aligned prediction strings and golds, computed as the metric registry says."""
    _check_lengths(preds, golds)
    d = METRICS.get(metric)
    if d is None or d.compute is None:
        known = [m.name for m in METRICS.values() if m.compute is not None]
        raise MetricError(f"unknown metric '{metric}' (known: {', '.join(known)})")
    return d.compute(task, preds, golds)


def _span_metric(metric: str) -> Compute:
    def compute(task: Mapping[str, Any], preds: Sequence[str], golds: Sequence[Any]) -> float:
        if not preds:
            return 0.0
        return sum(_span_score(metric, p, g) for p, g in zip(preds, golds, strict=True)) / len(preds)
    return compute


# the built-in task metrics' functions, attached to their registry entries
for _name, _fn in {"accuracy": lambda _t, p, g: accuracy(p, g),
                   "macro_f1": lambda t, p, g: macro_f1(p, g, t.get("labels") or None),
                   "squad_f1": _span_metric("squad_f1"), "exact_match": _span_metric("exact_match")}.items():
    register_metric(replace(METRICS[_name], compute=_fn))


def _aligned(task: Mapping[str, Any], predictions: Sequence[Any], examples: Sequence[Mapping[str, Any]]
             ) -> tuple[list[str], list[Any]]:
    if len(predictions) != len(examples):
        raise MetricError(f"{len(predictions)} predictions for {len(examples)} examples")
    preds = [prediction_value(task, p, f"prediction {i}") for i, p in enumerate(predictions)]
    golds = [_gold(task, ex, f"example {i}") for i, ex in enumerate(examples)]
    return preds, golds


def task_score(task: Mapping[str, Any], predictions: Sequence[Any], examples: Sequence[Mapping[str, Any]]
               ) -> dict[str, float]:
    """``{"perf": primary, primary: value, secondary: value, ...}`` for aligned lists."""
    metrics = _task_metrics(task)
    preds, golds = _aligned(task, predictions, examples)
    out = {m: metric_value(task, m, preds, golds) for m in metrics}
    return {"perf": out[metrics[0]], **out, **answerability_scores(task, metrics[0], preds, golds)}


HAS_ANS, NO_ANS = "has_ans", "no_ans"


def answerability_scores(task: Mapping[str, Any], metric: str, preds: Sequence[str], golds: Sequence[Any]
                         ) -> dict[str, float]:
    """SQuAD 2.0's ``HasAns`` / ``NoAns`` figures: the primary metric over the answerable and over the
    unanswerable questions of a v2.0-scored set (as ``evaluate-v2.0.py``: answerable = any gold answer listed).
    Empty for a set with no v2.0 example; a group with no example is left out, never reported as 0."""
    out: dict[str, float] = {}
    for name, want in ((HAS_ANS, True), (NO_ANS, False)):
        idx = [i for i, g in enumerate(golds) if isinstance(g, SquadV2Answers) and bool(g) == want]
        if idx:
            out[name] = metric_value(task, metric, [preds[i] for i in idx], [golds[i] for i in idx])
    return out


def tag_breakdown(task: Mapping[str, Any], predictions: Sequence[Any], examples: Sequence[Mapping[str, Any]]
                  ) -> dict[str, dict[str, float]]:
    """Per tag: the task's metrics over the examples carrying it, and their count ``n``."""
    metrics = _task_metrics(task)
    preds, golds = _aligned(task, predictions, examples)
    groups: dict[str, list[int]] = {}
    for i, ex in enumerate(examples):
        for tag in dict.fromkeys(ex.get("tags") or ()):
            groups.setdefault(tag, []).append(i)
    out = {}
    for tag in sorted(groups):
        idx = groups[tag]
        sub_p, sub_g = [preds[i] for i in idx], [golds[i] for i in idx]
        row = {m: metric_value(task, m, sub_p, sub_g) for m in metrics}
        out[tag] = {"n": float(len(idx)), "perf": row[metrics[0]], **row}
    return out


def best_null_threshold(diffs: Sequence[float], has_answer: Sequence[bool], span_scores: Sequence[float]) -> float:
    """The null-score threshold that maximises the SQuAD 2.0 score on a dev set (``find_best_thresh`` of the
    official ``evaluate-v2.0.py``, over the adapter's ``null_score_diff``: it abstains when the diff is above the
    threshold). ``span_scores``: each example's v2.0 score when it answers with its best span; abstaining scores
    100 on an unanswerable question and 0 on an answerable one. Ties keep the lowest threshold; no example: 0."""
    if not diffs:
        return 0.0
    score = best = sum(100.0 for h in has_answer if not h)  # abstain everywhere
    thresh = min(diffs) - 1.0
    for k in sorted(range(len(diffs)), key=lambda k: diffs[k]):  # answer every example up to this diff
        score += span_scores[k] - (0.0 if has_answer[k] else 100.0)
        if score > best:
            best, thresh = score, float(diffs[k])
    return float(thresh)


MIN_CONSISTENCY_SOURCES = 30
"""Fewest perturbed source examples a robustness/fairness value may rest on before it is
marked low-confidence: below it one changed prediction moves the value by over 3 points."""


def _source_score(task: Mapping[str, Any], preds: Sequence[str], reference: str) -> float:
    """The task's primary metric of one source's perturbed predictions against its original one.

    As Dynaboard's ``get_unperturbed_percent``: the original prediction is the gold of
    every perturbed copy, so for macro-F1 one flip among three copies scores 40, not 66.7.
    """
    metric = _task_metrics(task)[0]
    golds: list[Any] = [_kind(task).as_gold(reference)] * len(preds)
    return metric_value(task, metric, preds, golds)


def consistency_report(task: Mapping[str, Any], original_preds: Mapping[str, Any],
                       perturbed_preds_by_source: Mapping[str, Sequence[Any]],
                       min_sources: int = MIN_CONSISTENCY_SOURCES) -> dict[str, float]:
    """Dynaboard robustness/fairness (0-100) with the coverage it rests on.

    ``original_preds`` maps source example id -> prediction on the original;
    ``perturbed_preds_by_source`` maps source id -> predictions on its perturbed copies
    (every suite of one kind pooled, as Dynaboard pools its perturbation file).
    For each source with at least one perturbed prediction, those predictions are scored
    with the task's primary metric against the model's own original prediction (not the
    gold label); the value is the unweighted mean over those sources. Returns
    ``{"value", "sources", "perturbed", "low_confidence"}`` (``low_confidence`` is 1.0
    when fewer than ``min_sources`` sources were perturbed). With no perturbed prediction
    the value is undefined and :class:`MetricError` is raised (report it as missing
    rather than invent one); a source id with no original prediction is an error too.
    """
    per_source: list[float] = []
    perturbed = 0
    for source_id, preds in perturbed_preds_by_source.items():
        if not preds:
            continue
        if source_id not in original_preds:
            raise MetricError(f"perturbed predictions for source '{source_id}' but no prediction on the original")
        ref = prediction_value(task, original_preds[source_id], f"original prediction for '{source_id}'")
        values = [prediction_value(task, p, f"perturbed prediction of '{source_id}'") for p in preds]
        per_source.append(_source_score(task, values, ref))
        perturbed += len(values)
    if not per_source:
        raise MetricError("no perturbed predictions: the consistency score is undefined")
    return {"value": sum(per_source) / len(per_source), "sources": float(len(per_source)),
            "perturbed": float(perturbed), "low_confidence": float(len(per_source) < min_sources)}


def consistency_score(task: Mapping[str, Any], original_preds: Mapping[str, Any],
                      perturbed_preds_by_source: Mapping[str, Sequence[Any]]) -> float:
    """The value of :func:`consistency_report` alone."""
    return consistency_report(task, original_preds, perturbed_preds_by_source)["value"]


def consistency_rows(kind: str, report: Mapping[str, float]) -> dict[str, float]:
    """The metric values a report stores: ``<kind>``, ``<kind>_sources``, ``<kind>_low_confidence``."""
    return {kind: report["value"], f"{kind}_sources": report["sources"],
            f"{kind}_low_confidence": report["low_confidence"]}

