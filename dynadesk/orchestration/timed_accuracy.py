"""The timed examples' accuracy against the rest of the set (issue 45: the next attacker after the replay hole).

The timed windows now run before the prediction pass, on inputs the model has not seen, and each timed answer
must equal the pass's answer for the same example. A model can still answer the timed queries fast and
carelessly (a constant label, say) and repeat those answers in the pass, since it recognises the inputs: it
pays with its score on the timed examples only. Where a set has examples that were not timed, the host
compares the two groups' accuracy (the pass's predictions against the gold labels): the timed ones are a
sample of every width of the set, so an honest model scores them as it scores the rest, and a gap of more
than ``Z_LIMIT`` standard errors (and ``MIN_GAP``) fails the run. What is left: careless answers on a small
share of the timed examples, within the test's reach (docs/measurement.md).
"""

from __future__ import annotations

import json
import math
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from dynadesk.evaluator.schema import Spec

Z_LIMIT = 4.0  # one-sided; an honest model is this far below its own rest of the set about 3 times in 100,000
MIN_GAP = 0.05  # and at least this much accuracy lower
MIN_EXAMPLES = 20  # in each group, or nothing is compared


def gold_labels(spec: Spec, data_dir: Path) -> dict[str, dict[str, str]]:
    """``{test set: {example id: gold label}}`` of the run's test sets (examples without a single gold label,
    as in span tasks, are left out: nothing of theirs is compared)."""
    out: dict[str, dict[str, str]] = {}
    for ds in spec.datasets:
        if ds.role != "test":
            continue
        labels: dict[str, str] = {}
        with open(data_dir / ds.file, encoding="utf-8") as fh:
            for line in fh:
                if line.strip():
                    ex = json.loads(line)
                    if isinstance(ex, dict) and isinstance(ex.get("label"), str):
                        labels[str(ex.get("id"))] = ex["label"]
        out[ds.name] = labels
    return out


def accuracy_gaps(answers: Mapping[str, Any], predictions: Path, gold: Mapping[str, Mapping[str, str]]
                  ) -> tuple[list[str], dict[str, Any]]:
    """(why the timed examples look answered carelessly, per set; the figures to record)."""
    hits: dict[str, dict[bool, list[int]]] = {}
    with open(predictions, encoding="utf-8") as fh:
        for line in fh:
            row = json.loads(line)
            name, ex_id = str(row["dataset"]), str(row["id"])
            label = gold.get(name, {}).get(ex_id)
            pred = row.get("prediction")
            if label is None or not isinstance(pred, dict) or "label" not in pred:
                continue
            timed = ex_id in (answers.get(name) or {})
            group = hits.setdefault(name, {True: [0, 0], False: [0, 0]})[timed]
            group[0] += int(pred["label"] == label)
            group[1] += 1
    wrong, figures = [], {}
    for name, groups in hits.items():
        (t_ok, t_n), (r_ok, r_n) = groups[True], groups[False]
        if t_n < MIN_EXAMPLES or r_n < MIN_EXAMPLES:
            continue
        t_acc, r_acc = t_ok / t_n, r_ok / r_n
        pooled = (t_ok + r_ok) / (t_n + r_n)
        se = math.sqrt(max(pooled * (1 - pooled), 1e-12) * (1 / t_n + 1 / r_n))
        z = (r_acc - t_acc) / se
        figures[name] = {"timed_accuracy": t_acc, "timed": t_n, "rest_accuracy": r_acc, "rest": r_n, "z": z}
        if z > Z_LIMIT and r_acc - t_acc > MIN_GAP:
            wrong.append(f"the timed examples of '{name}' were answered worse than the rest of the set (accuracy "
                         f"{t_acc:.3f} on {t_n} timed, {r_acc:.3f} on {r_n} others, {z:.1f} standard errors): "
                         "fast careless answers in the timed windows, repeated in the pass")
    return wrong, figures
