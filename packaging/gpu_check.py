"""The GPU check (``packaging/gpu_check.sh``): every model kind on CUDA, the profiler's GPU fields and the Docker
``--gpus`` path, one table.

Each kind is built as a tiny model from a config (the test suite's builders, ``tests/support/``; no download),
loaded on the CPU and on the check's device, and given the same batch: the row says whether the device answered,
its labels/answers equal the CPU's, the largest probability difference, and the milliseconds per batch on the
device. The profiler row reads NVML (``profiling.nvml_devices``, a ``GpuSampler`` over the kinds' work) and torch's
peak memory. The Docker row evaluates the tiny classifier with ``--gpus all`` in the evaluator image and reads the
run's ``profile.json`` GPU fields.

Without a GPU every row says ``no GPU`` and the script exits 0: it is meant to be run on whatever machine is at
hand, and only a GPU machine's table is recorded (docs/gpu.md). ``--device cpu`` runs the same checks on the CPU
(the machinery's own smoke test); ``--no-docker`` leaves the Docker row out.
"""

from __future__ import annotations

import argparse
import json
import shutil
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "tests"))  # the tiny-model builders (tests/support/)

LABELS = ["negative", "neutral", "positive"]
TEXTS = ["the movie was good", "bad", "i really hate this terrible food", "great book , love it"]
QA = [{"context": "paris is the capital of france", "question": "what is the capital"},
      {"context": "the river was born in the mountain", "question": "where was it born"}]
Row = dict[str, str]


def cuda_device() -> str | None:
    """``cuda`` when torch sees a GPU, else None."""
    try:
        import torch
    except ImportError:
        return None
    return "cuda" if torch.cuda.is_available() else None


def _classifier(tmp: Path) -> tuple[Path, list[dict[str, str]]]:
    from support.tiny_models import make_tiny_classifier

    return make_tiny_classifier(tmp / "cls", LABELS), [{"statement": t} for t in TEXTS]


def _qa(tmp: Path) -> tuple[Path, list[dict[str, str]]]:
    from support.tiny_models import make_tiny_qa

    return make_tiny_qa(tmp / "qa"), QA


def _causal(tmp: Path) -> tuple[Path, list[dict[str, str]]]:
    from support.tiny_models import make_tiny_generative

    return make_tiny_generative(tmp / "causal", "causal", "sentiment", labels=LABELS), [{"statement": t} for t in TEXTS]


def _seq2seq(tmp: Path) -> tuple[Path, list[dict[str, str]]]:
    from support.tiny_models import make_tiny_generative

    return make_tiny_generative(tmp / "s2s", "seq2seq", "qa"), QA


def _bow(tmp: Path) -> tuple[Path, list[dict[str, str]]]:
    from dynadesk.models.bow import BowTraining, train_bag_of_words

    examples = [{"statement": t, "label": LABELS[i % 3]} for i, t in enumerate(TEXTS * 4)]
    train_bag_of_words(tmp / "bow", "sentiment", LABELS, ["statement"], examples, BowTraining(epochs=1))
    return tmp / "bow", [{"statement": t} for t in TEXTS]


def _onnx(tmp: Path) -> tuple[Path, list[dict[str, str]]]:
    from support.onnx_models import make_onnx_classifier

    torch_dir, onnx_dir = make_onnx_classifier(tmp / "onnx", LABELS)
    manifest = json.loads((torch_dir / "dynadesk-model.json").read_text(encoding="utf-8"))
    (onnx_dir / "dynadesk-model.json").write_text(json.dumps({**manifest, "kind": "onnx-sequence-classification"}),
                                                  encoding="utf-8")
    return onnx_dir, [{"statement": t} for t in TEXTS]


def _onnx_qa(tmp: Path) -> tuple[Path, list[dict[str, str]]]:
    from support.onnx_models import make_onnx_qa

    torch_dir, onnx_dir = make_onnx_qa(tmp / "onnx-qa")
    manifest = json.loads((torch_dir / "dynadesk-model.json").read_text(encoding="utf-8"))
    (onnx_dir / "dynadesk-model.json").write_text(json.dumps({**manifest, "kind": "onnx-question-answering"}),
                                                  encoding="utf-8")
    return onnx_dir, QA


def _handler(tmp: Path) -> tuple[Path, list[dict[str, str]]]:
    from support.handler_models import make_handler_model

    folder = make_handler_model(tmp / "handler")
    (folder / "dynadesk-model.json").write_text(json.dumps(
        {"task": "sentiment", "kind": "handler", "inputs": ["statement"], "labels": LABELS}), encoding="utf-8")
    return folder, [{"statement": t} for t in TEXTS]


KINDS: dict[str, Callable[[Path], tuple[Path, list[dict[str, str]]]]] = {
    "hf-sequence-classification": _classifier, "hf-question-answering": _qa, "hf-causal-lm": _causal,
    "hf-seq2seq-lm": _seq2seq, "bag-of-words": _bow, "onnx-sequence-classification": _onnx,
    "onnx-question-answering": _onnx_qa, "handler": _handler,
}
NOT_ON_DEVICE = {"majority": "no device work (label frequencies)",
                 "openai-served": "the endpoint's own device (served, not sandboxed)"}


def _compare(cpu: list[dict[str, Any]], dev: list[dict[str, Any]]) -> tuple[bool, float]:
    """(same labels/answers, largest probability difference) of two prediction lists."""
    same, worst = True, 0.0
    for a, b in zip(cpu, dev):
        same &= a.get("label", a.get("answer")) == b.get("label", b.get("answer"))
        for k, p in (a.get("probs") or {}).items():
            worst = max(worst, abs(p - (b.get("probs") or {}).get(k, 0.0)))
    return same, worst


def check_kind(kind: str, build: Callable[[Path], tuple[Path, list[dict[str, str]]]], device: str, tmp: Path) -> Row:
    """One kind on ``device`` against the CPU."""
    from dynadesk.evaluator.adapters import load_adapter

    try:
        folder, batch = build(tmp)
        cpu = load_adapter(folder, device="cpu", allow_pickle=kind == "handler").predict(batch)
        model = load_adapter(folder, device=device, allow_pickle=kind == "handler")
        model.predict(batch)  # warm-up
        sync = _sync(device)
        t0 = time.perf_counter()
        for _ in range(5):
            got = model.predict(batch)
        sync()
        ms = (time.perf_counter() - t0) / 5 * 1000
    except Exception as exc:  # noqa: BLE001 - every failure is a row of the table, named
        return {"check": kind, "device": device, "result": "FAIL", "detail": f"{type(exc).__name__}: {exc}"[:120]}
    same, worst = _compare(cpu, got)
    return {"check": kind, "device": device, "result": "ok" if same else "DIFFERS",
            "detail": f"{ms:.1f} ms/batch of {len(batch)}; max prob. diff. vs cpu {worst:.2g}"}


def _sync(device: str) -> Callable[[], None]:
    if device.startswith("cuda"):
        import torch

        return torch.cuda.synchronize
    return lambda: None


def check_profiler(device: str, work: Callable[[], None]) -> list[Row]:
    """NVML device figures, a sampler over ``work``, torch's peak memory."""
    from dynadesk.evaluator import profiling

    devices = profiling.nvml_devices()
    sampler = profiling.GpuSampler(interval_s=0.05).start()
    work()
    sampled = sampler.stop()
    memory = profiling.torch_gpu_memory()
    ok = devices["nvml"] == "ok" and sampled["nvml"] == "ok"
    return [{"check": "profiler: nvml", "device": device, "result": "ok" if ok else "FAIL",
             "detail": f"{devices['nvml']}; {len(devices['devices'])} device(s); sampler {sampled['nvml']}, "
                       f"{sampled['samples']} samples, util max {sampled.get('util_pct_max', '-')}%"},
            {"check": "profiler: torch memory", "device": device, "result": "ok" if memory else "FAIL",
             "detail": "none" if memory is None else f"peak allocated {memory['max_allocated_bytes']} B on "
                                                     f"{', '.join(memory['devices'])}"}]


def check_docker(tmp: Path) -> Row:
    """The tiny classifier evaluated in the evaluator image with ``--gpus all``: the run's GPU fields."""
    try:
        from support.eval import IMAGE_CACHE, add_test_set, run_request

        from dynadesk.models.registry import register_model
        from dynadesk.orchestration.evaluate import evaluate
        from dynadesk.orchestration.image import build_image
        from dynadesk.workspace import Workspace

        image = build_image(IMAGE_CACHE)
        ws = Workspace(tmp / "ws").ensure()
        store = ws.open_store()
        try:
            folder, _ = _classifier(tmp / "docker")
            register_model(store, folder, "sentiment", name="tiny")
            add_test_set(store, "set0-test", 16, seed=0, perturbed=False)
            run = evaluate(store, ws, run_request("tiny", runner="docker", image=image.image_id, gpus="all",
                                                  batch_size=8, latency_samples=4, warmup=1))
        finally:
            store.close()
    except Exception as exc:  # noqa: BLE001 - as above
        return {"check": "docker --gpus all", "device": "cuda", "result": "FAIL",
                "detail": f"{type(exc).__name__}: {exc}"[:120]}
    if run.status != "succeeded":
        return {"check": "docker --gpus all", "device": "cuda", "result": "FAIL", "detail": (run.error or "")[:120]}
    gpu = (run.profile or {}).get("gpu") or {}
    torch_mem = gpu.get("torch") or {}
    return {"check": "docker --gpus all", "device": "cuda", "result": "ok" if torch_mem else "FAIL",
            "detail": f"devices {torch_mem.get('devices')}; peak {torch_mem.get('max_allocated_bytes')} B; "
                      f"nvml {((gpu.get('nvml_end') or {}).get('nvml'))}"}


def rows(device: str | None, docker: bool) -> list[Row]:
    """The table's rows; every row ``no GPU`` when there is no device to check."""
    names = [*KINDS, *NOT_ON_DEVICE, "profiler: nvml", "profiler: torch memory"] + (["docker --gpus all"] if docker
                                                                                    else [])
    if device is None:
        return [{"check": n, "device": "-", "result": "no GPU", "detail": "torch sees no CUDA device"} for n in names]
    out: list[Row] = []
    with tempfile.TemporaryDirectory(prefix="gpu-check-") as tmp:
        def work() -> None:
            for kind, build in KINDS.items():
                out.append(check_kind(kind, build, device, Path(tmp) / kind))
        if device.startswith("cuda"):
            profiler = check_profiler(device, work)  # the NVML sampler runs over the kinds' work
            out.extend(profiler)
        else:
            work()
        out += [{"check": k, "device": device, "result": "n/a", "detail": why} for k, why in NOT_ON_DEVICE.items()]
        if not device.startswith("cuda"):
            out += [{"check": n, "device": device, "result": "n/a", "detail": "no GPU profiling on cpu"}
                    for n in ("profiler: nvml", "profiler: torch memory")]
        if docker:
            out.append(check_docker(Path(tmp)) if device.startswith("cuda") else
                       {"check": "docker --gpus all", "device": device, "result": "n/a", "detail": "cpu check"})
        shutil.rmtree(tmp, ignore_errors=True)
    return out


def table(found: list[Row]) -> str:
    """A Markdown table (docs/gpu.md takes it as printed)."""
    head = ["check", "device", "result", "detail"]
    lines = ["| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
    lines += ["| " + " | ".join(r[h].replace("|", "/") for h in head) + " |" for r in found]
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--device", default=None, help="cuda (default when torch sees a GPU) or cpu")
    parser.add_argument("--no-docker", action="store_true", help="leave out the Docker --gpus row")
    args = parser.parse_args(argv)
    device = args.device or cuda_device()
    if device and device.startswith("cuda") and cuda_device() is None:
        device = None
    found = rows(device, docker=not args.no_docker)
    print(table(found))
    return 1 if any(r["result"] in ("FAIL", "DIFFERS") for r in found) else 0


if __name__ == "__main__":
    raise SystemExit(main())
