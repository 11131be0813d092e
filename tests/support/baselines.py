"""Runs and bundles of a constant predictor (the majority-label baseline) beside trained ones, with the compact
per-example outcomes the host's bootstrap stores: the baseline tests of the local board, the app and the server
build their boards from these (issue 44, item 4)."""

from __future__ import annotations

from typing import Any

from dynadesk.evaluator import metrics as M
from dynadesk.scoring import bootstrap as B
from dynadesk.store.evaluations import RunChange
from support.sync import LABELS, TEST_SETS, make_run

TASK = {"metric": "macro_f1", "output_kind": "label", "labels": list(LABELS)}


def constant(golds: list[str]) -> list[str]:
    """The majority baseline: one label for every example."""
    return ["positive"] * len(golds)


def mostly_right(golds: list[str]) -> list[str]:
    """A trained model: right on two examples of three."""
    return [g if i % 3 else LABELS[(LABELS.index(g) + 1) % 3] for i, g in enumerate(golds)]


def weak(golds: list[str]) -> list[str]:
    """A weak trained model: right on one example of three."""
    return [g if i % 3 == 0 else LABELS[(LABELS.index(g) + 1) % 3] for i, g in enumerate(golds)]


def outcomes_of(store: Any, predict: Any, datasets=TEST_SETS, digest=lambda name: f"sha256:{name}"
                ) -> tuple[dict[str, Any], dict[str, float]]:
    """``({dataset: compact outcomes}, {dataset: macro-F1})`` of ``predict`` on the stored test sets."""
    outcomes, perf = {}, {}
    for name in datasets:
        golds = [ex["label"] for ex in store.datasets.examples(name)]
        preds = predict(golds)
        outcomes[name] = B.encode_outcomes(B.outcomes(TASK, "macro_f1", preds, golds), digest(name))
        perf[name] = M.macro_f1(preds, golds, list(LABELS))
    return outcomes, perf


def run_with_outcomes(ws: Any, store: Any, model: str, predict: Any, **kw: Any) -> int:
    """A succeeded run whose predictions are ``predict(golds)``, its outcomes in the run's profile (as the host's
    bootstrap stores them); ``kw``: make_run's throughput, memory, robustness, fairness."""
    ev = make_run(store, ws.runs_dir, model=model, predict=predict, **kw)
    rec = store.evaluations.get(ev)
    outcomes, _ = outcomes_of(store, predict, rec.datasets)
    store.evaluations.update(ev, RunChange(profile={**(rec.profile or {}), "outcomes": outcomes}))
    return ev
