"""Live single-example prediction latency of the demo models on CPU (warm in-process model).

    python bench/bench_models.py [--quick] [--home WORKSPACE]

Uses ``minilm-sentiment`` (and ``minilm-3layer-sentiment``, ``bag-of-words-sentiment`` as
the side-by-side baselines) from the workspace when they are registered there (``--home``
or $DYNADESK_HOME); otherwise builds them in a temp workspace with a tiny training run
(latency depends on the architecture, not on the training). Each prediction goes through
``predict_live`` on one real test-set statement. ``--quick``: 50 predictions (else 500).
Goal: p50 <= 30 ms, p99 <= 80 ms. Rows: ``measure | value | goal | baseline ratio``.
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
os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")
REPO = Path(__file__).resolve().parents[1]

from dynadesk.models import LivePredictor  # noqa: E402
from dynadesk.models.zoo import BOW, MINILM, MINILM3, ZooConfig, build_demo_zoo  # noqa: E402
from dynadesk.recipes import fetch_default_data  # noqa: E402
from dynadesk.workspace import Workspace, resolve_home  # noqa: E402

MODELS = (MINILM, MINILM3, BOW)


def _workspace(home: str | None):
    """(store, where) with the three models registered."""
    ws = Workspace(resolve_home(home))
    if ws.db_path.exists():
        store = ws.open_store()
        if all(store.models.exists(m) for m in MODELS):
            return store, f"workspace {ws.home}"
        store.close()
    ws = Workspace(scratch_dir("bench-models-"))
    store = ws.open_store()
    cache = REPO / ".cache" / "downloads"
    cache.mkdir(parents=True, exist_ok=True)
    fetch_default_data(store, cache)
    build_demo_zoo(store, ws, config=ZooConfig(train_per_source=16, batch_size=16, dev_per_source=8, bow_epochs=1),
                   only=MODELS)
    return store, "temp workspace (tiny training run)"


def _latencies(live: LivePredictor, record, texts: list[str]) -> tuple[float, list[float]]:
    t0 = time.perf_counter()
    live.predict(record, {"statement": "warm up"})
    cold = time.perf_counter() - t0
    for t in texts[:10]:
        live.predict(record, {"statement": t})
    out = []
    for t in texts:
        t0 = time.perf_counter()
        live.predict(record, {"statement": t})
        out.append(1000 * (time.perf_counter() - t0))
    return cold, out


def _pct(values: list[float], q: float) -> float:
    return statistics.quantiles(values, n=100, method="inclusive")[round(q) - 1]


def run(quick: bool = False, home: str | None = None) -> list[dict]:
    n = 20 if quick and os.environ.get("DYNADESK_BENCH_SMOKE") == "1" else 50 if quick else 500
    store, where = _workspace(home)
    texts = []
    for source in ("tweets", "movies", "amazon", "nyt"):
        texts += [ex["statement"] for ex in store.datasets.iter_examples(f"vader-{source}-test")][: n // 4 + 1]
    texts = texts[:n]
    live = LivePredictor(capacity=len(MODELS))
    measured = {m: _latencies(live, store.models.get(m), texts) for m in MODELS}
    cold, lat = measured[MINILM]
    p50, p99 = _pct(lat, 50), _pct(lat, 99)
    b50, b99 = (_pct(measured[MINILM3][1], q) for q in (50, 99))
    w50 = _pct(measured[BOW][1], 50)
    threads = __import__("torch").get_num_threads()
    return [
        {"measure": f"{MINILM} live latency p50 ({n} examples, warm, {threads} threads; {where})", "value": p50,
         "unit": "ms", "goal": "<= 30 ms", "baseline": f"{MINILM3} p50 {b50:.1f} ms", "ratio": p50 / b50,
         "ok": p50 <= 30},
        {"measure": f"{MINILM} live latency p99", "value": p99, "unit": "ms", "goal": "<= 80 ms",
         "baseline": f"{MINILM3} p99 {b99:.1f} ms", "ratio": p99 / b99, "ok": p99 <= 80},
        {"measure": f"{MINILM} cold load + first prediction", "value": cold, "unit": "s", "goal": "-",
         "baseline": f"{BOW} warm p50 {w50:.2f} ms", "ratio": None, "ok": None},
    ]


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--quick", action="store_true", help="50 predictions instead of 500")
    ap.add_argument("--home", help="workspace holding the demo zoo (default: $DYNADESK_HOME)")
    args = ap.parse_args()
    rows = run(quick=args.quick, home=args.home)
    print("measure | value | goal | baseline ratio")
    for r in rows:
        ok = {True: "ok", False: "MISSED", None: ""}[r["ok"]]
        ratio = "" if r["ratio"] is None else f" (x{r['ratio']:.2f})"
        print(f"{r['measure']} | {r['value']:.3f} {r['unit']} | {r['goal']} {ok} | {r['baseline']}{ratio}")


if __name__ == "__main__":
    main()
