"""Annotation speed: per-action latency and whole-round operations on a real SQLite file.

    python bench/bench_annotation.py [--quick]

Creates a workspace in a temp folder with a tiny real BERT classifier (tests/support/tiny_models.py)
and measures: create (submit_example) p50 vs the bare live prediction it wraps (the
overhead is the store + HMAC + commit); validate p50; round statistics, HMAC verify,
pack and merge on N examples with 3 votes each. ``--quick`` uses N = 200 (else 2,000).
Rows: ``measure | value | goal | baseline ratio``.
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))  # bench/scratch.py, also when loaded by path
from scratch import scratch_dir

os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")
sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests"))

from dynadesk import annotation as ann
from dynadesk.models import predict_live, register_model
from dynadesk.workspace import Workspace

LABELS = ["negative", "neutral", "positive"]


def _ms(samples: list[float]) -> float:
    return 1000 * statistics.median(samples)


def run(quick: bool = False) -> list[dict]:
    from support.tiny_models import make_tiny_classifier

    n = 200 if quick else 2000
    tmp = scratch_dir("bench-annotation-")
    model = make_tiny_classifier(tmp / "tiny", LABELS, task="sentiment", seed=1)
    st = Workspace(tmp / "a").open_store()
    register_model(st, model, "sentiment", name="tiny")
    for name in ("w1", "v1", "v2", "v3"):
        ann.add_annotator(st, name)
    ann.new_round(st, "sentiment", ["tiny"])
    predict_live(st, "tiny", {"statement": "warm up"})
    bare, create, uids = [], [], []
    for i in range(n):
        inputs = {"statement": f"example number {i} was {'good' if i % 2 else 'bad'}"}
        t0 = time.perf_counter()
        predict_live(st, "tiny", inputs)
        bare.append(time.perf_counter() - t0)
        t0 = time.perf_counter()
        uids.append(ann.submit_example(st, "sentiment", "w1", inputs, LABELS[i % 3],
                                       details=ann.ExampleDetails(time_ms=i)).uid)
        create.append(time.perf_counter() - t0)
    votes = []
    for who in ("v1", "v2", "v3"):
        for uid in uids:
            t0 = time.perf_counter()
            ann.validate(st, uid, who, "correct")
            votes.append(time.perf_counter() - t0)

    def timed(fn):
        t0 = time.perf_counter()
        out = fn()
        return time.perf_counter() - t0, out

    t_stats, stats = timed(lambda: ann.round_stats(st, "sentiment"))
    assert stats.collected == n and stats.validations == 3 * n
    t_queue, _ = timed(lambda: ann.validation_queue(st, "sentiment", "v1"))
    t_verify, rep = timed(lambda: ann.verify(st))
    assert rep.ok
    t_pack, _ = timed(lambda: ann.pack(st, tmp / "a.pack"))
    other = Workspace(tmp / "b").open_store()
    ann.trust_key(other, ann.export_pack_key(st, tmp / "a.pub"))  # machine B trusts machine A's pack key
    t_merge, mrep = timed(lambda: ann.merge(other, tmp / "a.pack"))
    assert mrep.examples_added == n
    overhead = _ms(create) - _ms(bare)
    return [
        {"measure": "create p50 (tiny BERT, store + HMAC + commit)", "value": _ms(create), "unit": "ms",
         "goal": "overhead <= 25 ms", "baseline": f"bare predict_live {_ms(bare):.1f} ms",
         "ratio": _ms(create) / _ms(bare), "ok": overhead <= 25},
        {"measure": "validate p50", "value": _ms(votes), "unit": "ms", "goal": "<= 25 ms", "baseline": "-",
         "ratio": None, "ok": _ms(votes) <= 25},
        {"measure": f"round stats ({n} examples, {3 * n} votes)", "value": t_stats, "unit": "s", "goal": "<= 2 s",
         "baseline": "-", "ratio": None, "ok": t_stats <= 2},
        {"measure": f"validation queue ({n} examples)", "value": t_queue, "unit": "s", "goal": "<= 2 s",
         "baseline": "-", "ratio": None, "ok": t_queue <= 2},
        {"measure": f"verify HMACs ({n} examples)", "value": t_verify, "unit": "s", "goal": "<= 2 s",
         "baseline": "-", "ratio": None, "ok": t_verify <= 2},
        {"measure": f"pack + merge ({n} examples, {3 * n} votes)", "value": t_pack + t_merge, "unit": "s",
         "goal": "<= 10 s", "baseline": f"pack {t_pack:.2f} s, merge {t_merge:.2f} s", "ratio": None,
         "ok": t_pack + t_merge <= 10},
    ]


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--quick", action="store_true", help="200 examples instead of 2,000")
    rows = run(quick=ap.parse_args().quick)
    print("measure | value | goal | baseline ratio")
    for r in rows:
        ok = {True: "ok", False: "MISSED", None: ""}[r["ok"]]
        ratio = "" if r["ratio"] is None else f" (x{r['ratio']:.2f})"
        print(f"{r['measure']} | {r['value']:.3f} {r['unit']} | {r['goal']} {ok} | {r['baseline']}{ratio}")


if __name__ == "__main__":
    main()
