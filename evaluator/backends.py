"""The optional onnxruntime backend (issue 50): the loaded transformers model, exported to ONNX inside the worker,
answers the timed windows and the prediction pass through onnxruntime.

Why: onnxruntime ran a MiniLM classifier 2.9x faster than torch eager on a busy 2-core machine with the same labels;
its probabilities differ from torch's in the last digits (~8e-7), so its predictions digest is its own. A run says
which backend it used (``settings.backend``, signed in the bundle's request and worker settings) and records what
ran (``environment.backend``: the onnxruntime version, its providers, its threads, the graph's digest); boards class
runs by it (:func:`dynadesk.evaluator.environment.hardware_class_of`), and an audit re-run replays it.

The export uses torch's TorchScript exporter (``dynamo=False``), which needs the ``onnx`` package and nothing from
the network; the graph goes to a scratch folder of the worker (the container's ``/tmp`` tmpfs in the sandbox), never
to the run's output. The adapters are the transformers ones with their ``model`` swapped for
:class:`~dynadesk.evaluator.onnx_adapter.OnnxModule` (the ONNX model kinds' module): the same tokenization,
padding, softmax and span search, only the forward pass differs.
"""

from __future__ import annotations

import hashlib
import importlib.util
import inspect
import shutil
import tempfile
import time
import warnings
from pathlib import Path
from typing import Any

from dynadesk.evaluator.adapter_base import AdapterError
from dynadesk.evaluator.schema import BACKENDS, DEFAULT_BACKEND

__all__ = ["BACKENDS", "DEFAULT_BACKEND", "ONNXRUNTIME", "ORT_KINDS", "OPSET", "backend_problem", "use_onnxruntime"]

ONNXRUNTIME = "onnxruntime"
OPSET = 17
ORT_KINDS: dict[str, tuple[str, ...]] = {
    "hf-sequence-classification": ("logits",),
    "hf-question-answering": ("start_logits", "end_logits"),
}
"""Model kinds the onnxruntime backend runs -> the outputs their adapters read."""


def backend_problem(backend: str, model_name: str, kind: str) -> str | None:
    """Why ``backend`` cannot run a model of ``kind`` (one line naming the model, its kind, the kinds the backend
    runs and the next step), or None. The host asks before a run starts; the worker asks again."""
    if backend not in BACKENDS:
        return f"unknown backend '{backend}' (use one of {', '.join(BACKENDS)})"
    if backend == DEFAULT_BACKEND or kind in ORT_KINDS:
        return None
    already = " (an ONNX model runs on onnxruntime already)" if kind.startswith("onnx-") else ""
    return (f"model '{model_name}' is of kind '{kind}', which the {backend} backend does not run (it runs "
            f"{', '.join(ORT_KINDS)}){already}: evaluate it with --backend {DEFAULT_BACKEND}")


def _sample_feed(adapter: Any, kind: str) -> dict[str, Any]:
    """Two short examples as the model's keyword tensors, to trace the graph (dynamic batch and token axes)."""
    tokenizer = adapter.tokenizer
    first = ["a short text", "another short one"]
    if kind == "hf-question-answering" or len(getattr(adapter, "inputs", [])) == 2:
        enc = tokenizer(first, ["a context to read", "more"], padding="longest", return_tensors="pt")
    else:
        enc = tokenizer(first, padding="longest", return_tensors="pt")
    return {k: v for k, v in enc.items() if k in tokenizer.model_input_names}


def _positional(model: Any, feed: dict[str, Any]) -> tuple[tuple[Any, ...], list[str]]:
    """The feed as the positional arguments of ``model.forward`` (the TorchScript exporter traces positional
    arguments, and a tokenizer's key order is not the forward's: BERT's tokenizer gives ``token_type_ids`` before
    ``attention_mask``), None for a parameter between two fed ones; and the names of the fed ones, in that order."""
    device = next(model.parameters()).device
    params = list(inspect.signature(model.forward).parameters)
    last = max(params.index(n) for n in feed)
    args = tuple(feed[p].to(device) if p in feed else None for p in params[:last + 1])
    return args, [p for p in params[:last + 1] if p in feed]


def export(adapter: Any, kind: str, folder: Path) -> tuple[Path, float]:
    """Export ``adapter.model`` to ``folder/model.onnx``: (the graph's path, seconds taken)."""
    import torch

    outputs = ORT_KINDS[kind]
    feed = _sample_feed(adapter, kind)
    args, names = _positional(adapter.model, feed)
    axes: dict[str, dict[int, str]] = {n: {0: "batch", 1: "tokens"} for n in names}
    axes.update({o: {0: "batch"} if o == "logits" else {0: "batch", 1: "tokens"} for o in outputs})
    path = folder / "model.onnx"
    t0 = time.perf_counter()
    try:  # the tracer warns of the shape branches it fixes (an encoder's mask is as long as its input): not news
        with torch.inference_mode(False), torch.no_grad(), warnings.catch_warnings():
            warnings.simplefilter("ignore")
            torch.onnx.export(adapter.model.eval(), args, str(path), input_names=names, output_names=list(outputs),
                              dynamic_axes=axes, dynamo=False, opset_version=OPSET)
    except Exception as exc:  # the exporter's errors (OnnxExporterError, RuntimeError, TypeError...) share no base
        raise AdapterError(f"the {kind} model could not be exported to ONNX for the onnxruntime backend: "
                           f"{type(exc).__name__}: {str(exc)[:300]} (evaluate it with --backend torch)") from exc
    return path, time.perf_counter() - t0


def _sha256(path: Path) -> str:
    h = hashlib.sha256()
    with open(path, "rb") as fh:
        for block in iter(lambda: fh.read(1 << 20), b""):
            h.update(block)
    return "sha256:" + h.hexdigest()


def use_onnxruntime(adapter: Any, kind: str, model_name: str, device: str,
                    scratch: Path | None = None) -> dict[str, Any]:
    """Export the loaded model and make ``adapter`` answer through onnxruntime; returns ``environment.backend``.

    onnxruntime's intra-op threads are torch's (the run's thread policy, set before the model loaded: see
    :class:`~dynadesk.evaluator.onnx_adapter.OnnxModule`); they are recorded."""
    from dynadesk.evaluator.onnx_adapter import SPINNING_KEY, OnnxModule, _ort

    problem = backend_problem(ONNXRUNTIME, model_name, kind)
    if problem:
        raise AdapterError(problem)
    ort = _ort()
    if importlib.util.find_spec("onnx") is None:  # torch's exporter imports it to write the graph
        raise AdapterError("the onnxruntime backend exports the model with torch.onnx, which needs the onnx package: "
                           "install it with 'pip install dynadesk[evaluator]' (the evaluator image has it: "
                           "'--runner docker'), or evaluate with --backend torch")
    folder = Path(tempfile.mkdtemp(prefix="dynadesk-onnx-", dir=scratch))
    path, seconds = export(adapter, kind, folder)
    torch_model = adapter.model
    adapter.model = OnnxModule(path, device, ORT_KINDS[kind])
    adapter.device = "cpu"  # tensors stay on the host; onnxruntime moves them to its provider
    del torch_model
    options = adapter.model.session.get_session_options()
    digest, size = _sha256(path), path.stat().st_size
    shutil.rmtree(folder, ignore_errors=True)  # the session holds the graph; the scratch copy is not needed
    return {"name": ONNXRUNTIME, "version": ort.__version__, "providers": list(adapter.model.providers),
            "intra_op_threads": int(options.intra_op_num_threads),
            "inter_op_threads": int(options.inter_op_num_threads),
            "spinning": options.get_session_config_entry(SPINNING_KEY) == "1",
            "export": {"exporter": "torch.onnx.export (TorchScript, dynamo=False)", "opset": OPSET,
                       "seconds": round(seconds, 3), "graph_sha256": digest,
                       "graph_bytes": size}}
