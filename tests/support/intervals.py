"""Runs with hand-made predictions, their host bootstrap (intervals and compact outcomes) and signed bundles:
the server-side interval, tie and snapshot tests build their boards from these (real SQLite, real bundles)."""

from __future__ import annotations

import hashlib

from dynadesk.evaluator import metrics as M
from dynadesk.scoring import bootstrap as B
from dynadesk.store.evaluations import RunChange
from dynadesk.sync.client.create import create_bundle
from support.sync import LABELS, make_run

TASK = {"metric": "macro_f1", "output_kind": "label", "labels": list(LABELS)}
SIZE = 30


def data_digest(name: str) -> str:
    return "sha256:" + hashlib.sha256(name.encode()).hexdigest()


def right(golds: list[str]) -> list[str]:
    return list(golds)


def wrong(golds: list[str]) -> list[str]:
    return [LABELS[(LABELS.index(g) + 1) % 3] for g in golds]


def bundle_with(ws, store, model: str, predict, throughput: float = 900.0, data=data_digest):
    """A bundle of a run whose perf on each test set is the macro-F1 of ``predict(golds)``, with its intervals and
    compact outcomes as the host's bootstrap stores them (``data(name)`` is the data file digest)."""
    from support.sync import ensure_datasets

    ensure_datasets(store, size=SIZE)
    ev = make_run(store, ws.runs_dir, model=model, throughput=throughput, predict=predict)
    rec = store.evaluations.get(ev)
    intervals, outcomes = {}, {}
    for name in rec.datasets:
        golds = [ex["label"] for ex in store.datasets.examples(name)]
        preds = predict(golds)
        o = B.outcomes(TASK, "macro_f1", preds, golds)
        intervals[name] = B.interval(o, B.derive_seed(rec.predictions_digest, data(name), "macro_f1"))
        outcomes[name] = B.encode_outcomes(o, data(name))
        perf = M.macro_f1(preds, golds, list(LABELS))
        stored = next(m.value for m in rec.metrics if m.metric == "perf" and m.dataset == name)
        assert stored == perf  # the run folder's predictions are these (the host re-scores them)
    store.evaluations.update(ev,
                             RunChange(profile={**(rec.profile or {}), "intervals": intervals, "outcomes": outcomes}))
    return create_bundle(ws, store, ev)
