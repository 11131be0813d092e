"""SQuAD 2.0's HasAns / NoAns figures beside the overall one, in the words every board uses.

Why: a SQuAD 2.0 score mixes two skills (answering, and abstaining on unanswerable questions); ``evaluate-v2.0.py``
reports ``HasAns`` and ``NoAns`` beside the overall figure, and a board that shows only the mix hides a model that
never abstains. The worker reports them as the ``has_ans`` / ``no_ans`` metrics (``metrics.answerability_scores``);
the local CLI board, the app's board and the public board's pages all write them with :func:`answerability_text`.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from typing import Any

from dynadesk.evaluator.metrics import HAS_ANS, NO_ANS

LABELS = ((HAS_ANS, "HasAns"), (NO_ANS, "NoAns"))

__all__ = ["LABELS", "answerability_text", "beside", "per_dataset_text"]


def answerability_text(values: Mapping[str, Any], digits: int = 2) -> str:
    """``"HasAns 71.20 · NoAns 40.00"`` from a row's metric values ("" when it has neither)."""
    parts = [f"{label} {float(values[m]):.{digits}f}" for m, label in LABELS
             if isinstance(values.get(m), int | float) and math.isfinite(float(values[m]))]
    return " · ".join(parts)


def beside(text: str, values: Mapping[str, Any], digits: int = 2) -> str:
    """``text`` (the overall figure as shown) with HasAns / NoAns beside it, when the row has them."""
    extra = answerability_text(values, digits)
    return f"{text} ({extra})" if extra else text


def per_dataset_text(metrics: list[Mapping[str, Any]]) -> str:
    """A bundle's (or run's) metric rows as one line per dataset: ``"sq2: perf 55.00 (HasAns ... · NoAns ...)"``;
    "" when no dataset has HasAns / NoAns figures."""
    by: dict[str, dict[str, Any]] = {}
    for m in metrics:
        by.setdefault(str(m.get("dataset", "")), {})[str(m.get("metric"))] = m.get("value")
    lines = [f"{ds or 'whole run'}: perf {float(v['perf']):.2f} ({answerability_text(v)})"
             for ds, v in sorted(by.items()) if answerability_text(v) and isinstance(v.get("perf"), int | float)]
    return "; ".join(lines)
