"""SQuAD answer scoring (v1.1 and v2.0) and :class:`MetricError`, the one error of scoring.

Pure Python (stdlib only), below both the metrics and the task kinds (a span task's fooled rule is
an answer F1), so neither imports the other for it. :mod:`dynadesk.evaluator.metrics` re-exports
every name.
"""

from __future__ import annotations

import re
import string
from collections import Counter
from typing import Any


class MetricError(ValueError):
    """Predictions and golds do not fit together (length, type, unknown metric)."""


_ARTICLES = re.compile(r"\b(a|an|the)\b", re.UNICODE)
_PUNCT = set(string.punctuation)


def normalize_answer(text: str) -> str:
    """SQuAD v1.1 normalisation: lower case, drop punctuation and articles, squeeze spaces."""
    text = text.lower()
    text = "".join(ch for ch in text if ch not in _PUNCT)
    text = _ARTICLES.sub(" ", text)
    return " ".join(text.split())


def token_f1(pred: str, gold: str) -> float:
    """SQuAD token-overlap F1 of one answer against one gold, as a 0-1 fraction."""
    p_tokens = normalize_answer(pred).split()
    g_tokens = normalize_answer(gold).split()
    if not p_tokens or not g_tokens:
        # Both empty (e.g. the answer was only an article) count as a match.
        return float(p_tokens == g_tokens)
    common = Counter(p_tokens) & Counter(g_tokens)
    same = sum(common.values())
    if same == 0:
        return 0.0
    precision = same / len(p_tokens)
    recall = same / len(g_tokens)
    return 2 * precision * recall / (precision + recall)


def _answers(golds: Any, where: str = "gold answers") -> tuple[str, ...]:
    if isinstance(golds, str):
        return (golds,)
    if isinstance(golds, (list, tuple)) and golds and all(isinstance(g, str) for g in golds):
        return tuple(golds)
    raise MetricError(f"{where}: must be an answer or a non-empty list of answers, got {golds!r}")


def squad_f1(pred: str, golds: Any) -> float:
    """Token F1 (0-100) of one answer, maximised over the gold answers."""
    return 100.0 * max(token_f1(pred, g) for g in _answers(golds))


def exact_match(pred: str, golds: Any) -> float:
    """100 if the normalised answer equals any normalised gold answer, else 0."""
    norm = normalize_answer(pred)
    return 100.0 if any(norm == normalize_answer(g) for g in _answers(golds)) else 0.0


class SquadV2Answers(tuple):  # type: ignore[type-arg]
    """The gold answers of an example scored by the SQuAD v2.0 rule (possibly none: unanswerable)."""


SQUAD_V2_KEY = "squad_v2"  # metadata flag of an example of a dataset kept as SQuAD 2.0 publishes it


def squad_v2_golds(golds: Any) -> list[str]:
    """The official v2.0 script's golds: the non-empty-normalising answers, else the empty answer."""
    if isinstance(golds, str):
        golds = [golds]
    if not isinstance(golds, (list, tuple)) or not all(isinstance(g, str) for g in golds):
        raise MetricError(f"gold answers: must be a list of answers (empty when unanswerable), got {golds!r}")
    kept = [g for g in golds if normalize_answer(g)]
    return kept or [""]


def squad_v2_f1(pred: str, golds: Any) -> float:
    """SQuAD v2.0 token F1 (0-100): max over :func:`squad_v2_golds`."""
    return 100.0 * max(token_f1(pred, g) for g in squad_v2_golds(golds))


def squad_v2_exact(pred: str, golds: Any) -> float:
    """SQuAD v2.0 exact match (0-100): max over :func:`squad_v2_golds`."""
    norm = normalize_answer(pred)
    return 100.0 if any(norm == normalize_answer(g) for g in squad_v2_golds(golds)) else 0.0
