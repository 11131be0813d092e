"""SQuAD 2.0: the QA adapter's null-score threshold chosen on a dev set, as the reference recipe does.

Why: a SQuAD 2.0 model abstains (answers nothing) when its null score beats its best span's by more than a
threshold; a threshold of 0 is the default, but the published recipe (``evaluate-v2.0.py``'s
``find_best_thresh``, the transformers post-processing) picks it on held-out dev data, never on the test set.
:func:`calibrate` evaluates the model on the dev set (a ``calibration`` run: never a board entry), reads the
``null_score_diff`` and best span of every dev prediction, and returns the threshold that maximises the dev set's
v2.0 score; the test run then records it (``request.settings.null_threshold``, ``null_dev``) and signs it in its
bundle (the request and the worker settings).
"""

from __future__ import annotations

import json
from dataclasses import replace
from typing import TYPE_CHECKING, Any

from dynadesk.errors import EvaluationError
from dynadesk.evaluator import metrics as M
from dynadesk.evaluator.schema import Spec
from dynadesk.orchestration.folder import RunFolder
from dynadesk.orchestration.request import RunRequest

if TYPE_CHECKING:
    from dynadesk.progress import ProgressFn
    from dynadesk.store import Store
    from dynadesk.workspace import Workspace

__all__ = ["calibrate", "run_threshold", "with_dev_threshold"]


def run_threshold(store: Store, run_id: int) -> float:
    """The best null-score threshold on a finished run's SQuAD 2.0 test sets (its own predictions and data)."""
    record = store.evaluations.get(run_id)
    folder = RunFolder.stored(record.run_dir, run_id)
    spec = Spec.read(folder.spec_file)
    metric = str(spec.task["metric"])
    preds: dict[tuple[str, str], Any] = {}
    with open(folder.predictions_file, encoding="utf-8") as fh:
        for line in fh:
            row = json.loads(line)
            preds[(row["dataset"], row["id"])] = row["prediction"]
    diffs: list[float] = []
    has: list[bool] = []
    spans: list[float] = []
    for ds in spec.datasets:
        if ds.role != "test":
            continue
        with open(folder.data_dir / ds.file, encoding="utf-8") as fh:
            for line in fh:
                if not line.strip():
                    continue
                ex = json.loads(line)
                gold = M.example_gold(spec.task, ex, f"dataset '{ds.name}' example '{ex['id']}'")
                pred = preds.get((ds.name, ex["id"]))
                if not isinstance(gold, M.SquadV2Answers) or not isinstance(pred, dict) \
                        or not isinstance(pred.get("null_score_diff"), (int, float)):
                    continue
                diffs.append(float(pred["null_score_diff"]))
                has.append(bool(gold))
                spans.append(M.span_score(metric, str(pred.get("span_answer", pred.get("answer", ""))), gold))
    if not diffs:
        raise EvaluationError(f"run {run_id} holds no SQuAD 2.0 prediction with a null score (is its dev set "
                              "imported with --squad-v2, and the model a question-answering one?)", verdict="error")
    return M.best_null_threshold(diffs, has, spans)


def calibrate(store: Store, workspace: Workspace, request: RunRequest, dev: str,
              progress: ProgressFn | None = None) -> tuple[float, int]:
    """Evaluate ``request``'s model on the dev set ``dev`` (a calibration run) and return (its best threshold,
    the calibration run's id). The dev set must not be one of the request's test sets."""
    from dynadesk.orchestration.evaluate import evaluate, failure_line

    if dev in request.datasets:
        raise EvaluationError(f"dataset '{dev}' is both the dev set (--null-dev) and a test set: the threshold "
                              "would be chosen on the test data; name another dev set", verdict="refused")
    dev_request = replace(request, datasets=(dev,), purpose="calibration",
                          settings=replace(request.settings, null_threshold=0.0, null_dev=None))
    record = evaluate(store, workspace, dev_request, progress=progress)
    if record.status != "succeeded":
        raise EvaluationError(f"the dev run on '{dev}' did not succeed: {failure_line(record)}", verdict="error")
    return run_threshold(store, record.id), record.id


def with_dev_threshold(request: RunRequest, threshold: float, dev: str) -> RunRequest:
    """``request`` with the threshold chosen on ``dev`` recorded in its settings."""
    return replace(request, settings=replace(request.settings, null_threshold=threshold, null_dev=dev))
