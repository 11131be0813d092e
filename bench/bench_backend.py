"""The evaluator's prediction pass under the onnxruntime backend vs torch eager (issue 50 item 3).

    python bench/bench_backend.py [--quick]

Two workers over the same MiniLM-L6 classifier and the same texts, in one process with the same threads: one as
``dynadesk eval`` runs by default (torch eager), one as ``eval --backend onnxruntime`` runs (the loaded model
exported to ONNX by the worker, the pass through onnxruntime: :mod:`dynadesk.evaluator.backends`). Their passes
alternate (the order rotates each repeat) and the ratio is the median of the paired per-repeat ratios; the load
average is printed beside it. A second row says whether the labels agree and how far the probabilities are apart:
the reason an onnxruntime run is its own class on every board and its predictions digest is recorded with it.

``DYNADESK_BENCH_SMOKE=1`` (the suite's smoke run) shrinks ``--quick`` to 32 texts and 2 repeats.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")
os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")


def _load() -> float:
    try:
        return os.getloadavg()[0]
    except OSError:
        return float("nan")


def run(quick: bool = False) -> list[dict[str, Any]]:
    sys.path.insert(0, str(HERE))
    from bench_eval import _interleaved, bench_model, evaluator_loop, median, smoke_run, texts

    from dynadesk.evaluator.backends import use_onnxruntime

    smoke = quick and smoke_run()
    n, repeats = (32, 2) if smoke else (256, 5) if quick else (1024, 9)
    folder, data, batch = bench_model(), texts(n), 32
    torch_pass, torch_worker, _ = evaluator_loop(folder, data, batch)
    ort_pass, ort_worker, _ = evaluator_loop(folder, data, batch)
    backend = use_onnxruntime(ort_worker.adapter, "hf-sequence-classification", "minilm", "cpu")
    load_before = _load()
    rates = _interleaved({"torch": torch_pass, "onnxruntime": ort_pass}, n, repeats)
    load_after = _load()
    paired = [o / t for o, t in zip(rates["onnxruntime"], rates["torch"])]
    ratio = median(paired)
    model = "a tiny BERT (smoke run)" if smoke else "MiniLM-L6"
    where = (f"{model}, {n} texts, batch {batch}, {backend['intra_op_threads']} threads, {repeats} repeats, "
             f"load {load_before:.1f}-{load_after:.1f}, {os.cpu_count()} CPUs")
    print(f"bench_backend: {where}: onnxruntime {median(rates['onnxruntime']):.1f}/s, torch "
          f"{median(rates['torch']):.1f}/s, paired {min(paired):.2f}-{max(paired):.2f}x", file=sys.stderr)
    rows: list[dict[str, Any]] = [{
        "measure": f"evaluator pass, onnxruntime backend vs torch eager ({where})",
        "value": round(median(rates["onnxruntime"]), 1), "unit": "examples/s", "goal": ">= 1.0x torch",
        "baseline": f"torch eager {median(rates['torch']):.1f} examples/s", "ratio": round(ratio, 3),
        "ok": ratio >= 1.0}]
    a = _predictions(torch_worker)
    b = _predictions(ort_worker)
    same = sum(1 for x, y in zip(a, b) if x["label"] == y["label"])
    gap = max(abs(x["probs"][k] - y["probs"][k]) for x, y in zip(a, b) for k in x["probs"])
    rows.append({"measure": f"labels equal under onnxruntime and torch ({n} texts); largest probability gap "
                            f"{gap:.2g} (each digest recorded with its backend)",
                 "value": same, "unit": "examples", "goal": f"== {n}", "baseline": f"{n} examples",
                 "ratio": round(same / n, 3), "ok": same == n})
    return rows


def _predictions(worker: Any) -> list[dict[str, Any]]:
    """The last pass's predictions, from the worker's part file (dataset order)."""
    part = worker.parts / worker.spec.datasets[0].file
    return [json.loads(line)["prediction"] for line in part.read_text().splitlines()]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--quick", action="store_true")
    args = parser.parse_args()
    for row in run(args.quick):
        print(json.dumps(row))


if __name__ == "__main__":
    main()
