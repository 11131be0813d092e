"""Torch threads on a busy machine (issue 50 item 1): the thread policy against torch's default, quiet and busy.

Each contender is a fresh Python process, because OpenMP reads its wait policy once, when torch loads:
``default`` (threads = the cores available, spinning waits: what the worker did before) and ``policy``
(:func:`dynadesk.evaluator.threads.prepare_process` before ``import torch``). The two alternate, round by
round, and the paired ratio of each round's adjacent runs is reported (median). Inside each process 1 and 2
threads alternate too, at batch 1 and 32 (MiniLM-L6 classifier, real token lengths). ``busy`` runs the same
with ``2 x cores`` bounded busy-loop processes (they exit by themselves after the phase). Every process's
logits, at every thread count, are hashed: the digests must all be equal (bit-identical predictions).

    .venv/bin/python bench/bench_threads.py [--quick]
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import statistics
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
BATCHES = (1, 32)
TEXTS = ["the film was good and the food was great", "i hated the service, it was really bad",
         "what a terrible day in the city, the worst ever", "they loved the book and the story of the river",
         "ok", "this place is fine i guess, nothing more to say about it really"]


def child(wait: str, seconds: float) -> dict[str, Any]:
    """One contender's process: rates of 1 and 2 threads at each batch width, and the logits' digest."""
    policy = None
    if wait == "policy":
        from dynadesk.evaluator.threads import prepare_process

        policy = prepare_process().to_dict()
    import torch
    from transformers import AutoModelForSequenceClassification, AutoTokenizer

    sys.path.insert(0, str(HERE))
    from bench_eval import bench_model

    from dynadesk.evaluator.environment import cores_available

    folder = bench_model()
    tok = AutoTokenizer.from_pretrained(str(folder))
    model = AutoModelForSequenceClassification.from_pretrained(str(folder)).eval()
    texts = [TEXTS[i % len(TEXTS)] + f" {i}" for i in range(32)]
    enc = {b: tok(texts[:b], padding=True, return_tensors="pt") for b in BATCHES}
    chosen = policy["threads"] if policy else cores_available()
    rates: dict[str, list[float]] = {}
    digests = set()
    with torch.inference_mode():
        for threads in (1, 2, chosen):
            torch.set_num_threads(threads)
            digests.add(hashlib.sha256(model(**enc[32]).logits.numpy().tobytes()).hexdigest())
        end = time.monotonic() + seconds
        r = 0
        while time.monotonic() < end or r < 2:
            for threads, label in ((1, "t1"), (2, "t2"), (chosen, "chosen"))[::1 if r % 2 == 0 else -1]:
                torch.set_num_threads(threads)
                for b in BATCHES:
                    n = 0
                    t0 = time.perf_counter()
                    while n < 32:
                        model(**enc[b])
                        n += b
                    rates.setdefault(f"{label}_b{b}", []).append(n / (time.perf_counter() - t0))
            r += 1
    return {"wait": wait, "policy": policy, "chosen": chosen, "omp": os.environ.get("OMP_WAIT_POLICY"),
            "rates": {k: statistics.median(v) for k, v in rates.items()}, "digests": sorted(digests)}


def _run_child(wait: str, seconds: float) -> dict[str, Any]:
    env = {k: v for k, v in os.environ.items() if k != "OMP_WAIT_POLICY"}
    out = subprocess.run([sys.executable, __file__, "--child", wait, "--seconds", str(seconds)], env=env,
                         capture_output=True, text=True, timeout=600, check=True)
    return json.loads(out.stdout.strip().splitlines()[-1])


def _busy_loops(count: int, seconds: float, idle: bool = False) -> list[subprocess.Popen[bytes]]:
    """``idle``: the loops run under SCHED_IDLE, only on a CPU nothing else wants (the suite's smoke run, beside
    the parallel phase's tests: a busy loop there burnt a core's worth of their CPU for the whole phase)."""
    code = ("import os\nos.sched_setscheduler(0, os.SCHED_IDLE, os.sched_param(0))\n" if idle else "") + \
        f"import time\ne = time.time() + {seconds}\nwhile time.time() < e:\n    pass\n"
    return [subprocess.Popen([sys.executable, "-c", code]) for _ in range(count)]


def phase(name: str, rounds: int, seconds: float, busy: int,
          smoke: bool = False) -> tuple[list[dict[str, Any]], dict[str, Any]]:
    """``rounds`` of (default, policy) alternating; with ``busy`` busy-loop processes for the whole phase
    (``smoke``: idle-priority loops, see :func:`_busy_loops`)."""
    loops = _busy_loops(busy, 600, idle=smoke) if busy else []
    try:
        if busy:
            time.sleep(0.5 if smoke else 2)
        got: dict[str, list[dict[str, Any]]] = {"default": [], "policy": []}
        for r in range(rounds):
            for wait in ("default", "policy") if r % 2 == 0 else ("policy", "default"):
                got[wait].append(_run_child(wait, seconds))
        load = os.getloadavg()[0]
    finally:
        for p in loops:
            p.kill()
            p.wait()
    return _rows(name, got, load, busy), {"digests": {d for g in got.values() for c in g for d in c["digests"]}}


def _rows(name: str, got: dict[str, list[dict[str, Any]]], load: float, busy: int) -> list[dict[str, Any]]:
    where = f"{name}: load {load:.1f}, {busy} busy loops, {os.cpu_count()} CPUs"
    rows = []
    for b in BATCHES:
        two_vs_one = [c["rates"][f"t2_b{b}"] / c["rates"][f"t1_b{b}"] for c in got["policy"]]
        base = [c["rates"][f"t2_b{b}"] / c["rates"][f"t1_b{b}"] for c in got["default"]]
        rows.append({"measure": f"2 threads vs 1, batch {b}, under the policy's wait ({where})",
                     "value": round(statistics.median(two_vs_one), 3), "unit": "x", "goal": ">= 1.0",
                     "baseline": f"torch default wait: {statistics.median(base):.3f}x", "ratio": None,
                     "ok": statistics.median(two_vs_one) >= 1.0})
        paired = [p["rates"][f"chosen_b{b}"] / d["rates"][f"chosen_b{b}"] for p, d in zip(got["policy"],
                                                                                         got["default"])]
        chosen = sorted({str(p["policy"]["threads"]) + " " + p["policy"]["wait_policy"] for p in got["policy"]})
        rows.append({"measure": f"chosen policy vs default, batch {b} ({where})",
                     "value": round(statistics.median(paired), 3), "unit": "x",
                     "goal": ">= 0.98", "baseline": f"policy chose {', '.join(chosen)}; default "
                     f"{got['default'][0]['chosen']} threads, spinning", "ratio": statistics.median(paired),
                     "ok": statistics.median(paired) >= 0.98})
    return rows


def run(quick: bool = False) -> list[dict[str, Any]]:
    cores = os.cpu_count() or 1
    # the suite's smoke run (DYNADESK_BENCH_SMOKE=1) only shows the busy phase runs and fills its rows: one busy
    # loop at idle priority, not 2 x cores, which burnt ~4 cores' worth for a minute beside the parallel phase's
    # other tests; each child's timed loop the least it takes (two rounds)
    smoke = quick and os.environ.get("DYNADESK_BENCH_SMOKE") == "1"
    rounds, seconds = (1, 0.0) if smoke else (1, 1.0) if quick else (4, 4.0)
    rows, digests = [], set()
    for name, busy in (("quiet", 0), ("busy", 1 if smoke else 2 * cores)):
        got, info = phase(name, rounds, seconds, busy, smoke)
        rows += got
        digests |= info["digests"]
    rows.append({"measure": "logits digests over every process, wait policy and thread count", "value": len(digests),
                 "unit": "distinct", "goal": "1 (bit-identical)", "baseline": "", "ratio": None,
                 "ok": len(digests) == 1})
    return rows


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--quick", action="store_true")
    ap.add_argument("--child", choices=("default", "policy"))
    ap.add_argument("--seconds", type=float, default=3.0)
    args = ap.parse_args(argv)
    if args.child:
        print(json.dumps(child(args.child, args.seconds)))
        return 0
    for row in run(args.quick):
        print(f"{row['measure']}: {row['value']} {row['unit']} (goal {row['goal']}; {row['baseline']})", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
