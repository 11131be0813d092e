"""ONNX models (onnxruntime) for sequence classification and extractive QA.

A folder holds the exported graph (``model.onnx``, or the manifest's
``onnx_file``; external data files beside it), the tokenizer files of the
model it was exported from and ``dynadesk-model.json``. The adapters reuse the
transformers adapters' tokenization, padding, softmax and span search: only the
forward pass differs, so an ONNX export of a model predicts what the model
predicts (to the export's float tolerance), and the digests, robustness and
fairness paths are the same.

The graph runs on onnxruntime's CPU provider, or its CUDA provider when the
request asks for a CUDA device; a CUDA request that onnxruntime cannot serve
fails loudly rather than measuring the CPU under a GPU label. onnxruntime is
imported only when an ONNX model is loaded, so a host without it (the core
install) still loads every other kind; the evaluator image ships it.

Registered into :mod:`dynadesk.evaluator.adapters` through its ``register_kind`` hook (imported at its end).
"""

from __future__ import annotations

import os
from pathlib import Path, PurePosixPath
from types import SimpleNamespace
from typing import Any

from dynadesk.evaluator.adapter_base import _max_length
from dynadesk.evaluator.adapters import (
    DEFAULT_MAX_LENGTH,
    AdapterError,
    QuestionAnsweringAdapter,
    SequenceClassificationAdapter,
    register_kind,
)
from dynadesk.evaluator.threads import WAIT_ENV

ONNX_CLASSIFICATION = "onnx-sequence-classification"
ONNX_QA = "onnx-question-answering"
ONNX_KINDS = (ONNX_CLASSIFICATION, ONNX_QA)
DEFAULT_ONNX_FILE = "model.onnx"


def onnx_file(model_dir: Path, manifest: dict[str, Any]) -> Path:
    """The graph file a manifest names (``onnx_file``, default ``model.onnx``), inside the folder."""
    return Path(model_dir) / str(manifest.get("onnx_file", DEFAULT_ONNX_FILE))


def check_onnx_manifest(manifest: dict[str, Any]) -> list[str]:
    """What an ONNX manifest gets wrong beyond the common fields (``adapters.check_manifest`` adds these)."""
    problems = []
    name = manifest.get("onnx_file", DEFAULT_ONNX_FILE)
    if not isinstance(name, str) or not name.endswith(".onnx") or PurePosixPath(name).is_absolute() or \
            ".." in PurePosixPath(name).parts or "\\" in name:
        problems.append("'onnx_file' must be a relative path ending in .onnx inside the model folder")
    inputs = manifest.get("inputs")
    if manifest.get("kind") == ONNX_QA and isinstance(inputs, list):
        for key, default in (("context_field", "context"), ("question_field", "question")):
            if manifest.get(key, default) not in inputs:
                problems.append(f"'{key}' ({manifest.get(key, default)!r}) is not one of 'inputs'")
    return problems


def _tokenizer(model_dir: Path) -> Any:
    from transformers import AutoTokenizer

    try:
        return AutoTokenizer.from_pretrained(str(model_dir), local_files_only=True, trust_remote_code=False)
    except (OSError, ValueError, KeyError, RuntimeError) as exc:
        raise AdapterError(f"{model_dir}: cannot load the tokenizer beside the ONNX graph: {exc}") from exc


def _ort() -> Any:
    """onnxruntime, or a one-line error saying how to get it (the evaluator image ships it; a host has it with the
    evaluator extra)."""
    try:
        import onnxruntime
    except ImportError as exc:
        raise AdapterError("onnxruntime is not installed here: install it with 'pip install dynadesk[onnx]' (the "
                           "evaluator image has it: '--runner docker')") from exc
    return onnxruntime


def providers_for(device: str) -> list[str]:
    """onnxruntime execution providers for a device string (``cpu``, ``cuda``, ``cuda:N``)."""
    ort = _ort()
    if not device.startswith("cuda"):
        return ["CPUExecutionProvider"]
    if "CUDAExecutionProvider" not in ort.get_available_providers():
        raise AdapterError(f"device '{device}' asked for, but this onnxruntime has no CUDA provider "
                           f"({', '.join(ort.get_available_providers())}); install onnxruntime-gpu or evaluate on cpu")
    return ["CUDAExecutionProvider", "CPUExecutionProvider"]


SPINNING_KEY = "session.intra_op.allow_spinning"


def ort_may_spin() -> bool:
    """Whether onnxruntime's intra-op threads may spin between runs: as torch's OpenMP threads do, under the run's
    wait policy (:mod:`dynadesk.evaluator.threads`).

    onnxruntime's pool spins after each run by default. Quiet, that is worth it (batch 1: 5.4-6.6 ms a call
    spinning, 8.4-8.6 ms not; batch 32 the same either way). On a busy machine, where the policy chose passive
    waiting, its spinning threads burn cores other work wants: torch matmuls run right after an onnxruntime call
    took 1.6x their time beside the spinning pool (99-108 ms against 60-64 ms, 2 threads, 2 cores)."""
    return os.environ.get(WAIT_ENV, "default").upper() != "PASSIVE"


class OnnxModule:
    """An onnxruntime session called like a transformers model: keyword tensors in, named logits out (torch)."""

    def __init__(self, path: Path, device: str, outputs: tuple[str, ...]):
        import torch

        ort = _ort()

        if not path.is_file():
            raise AdapterError(f"{path}: the ONNX graph is missing")
        options = ort.SessionOptions()
        options.log_severity_level = 3  # warnings about unused initialisers would flood the worker's log
        options.intra_op_num_threads = max(1, torch.get_num_threads())  # the thread policy torch was given
        options.inter_op_num_threads = 1
        options.add_session_config_entry(SPINNING_KEY, "1" if ort_may_spin() else "0")
        providers = providers_for(device)
        try:
            index = int(device.split(":", 1)[1]) if device.startswith("cuda:") else 0
            opts = [{"device_id": index} if p == "CUDAExecutionProvider" else {} for p in providers]
            self.session = ort.InferenceSession(str(path), options, providers=providers, provider_options=opts)
        except Exception as exc:  # onnxruntime's errors (InvalidProtobuf, Fail ...) share no base class but Exception
            raise AdapterError(f"{path}: onnxruntime cannot load the graph: {exc}") from exc
        if providers[0] not in self.session.get_providers():
            raise AdapterError(f"{path}: onnxruntime fell back from {providers[0]} to {self.session.get_providers()}")
        self.providers = self.session.get_providers()
        self.input_names = [i.name for i in self.session.get_inputs()]
        names = [o.name for o in self.session.get_outputs()]
        if len(names) < len(outputs):
            raise AdapterError(f"{path}: the graph has outputs {names}; expected {', '.join(outputs)}")
        # by name when the export kept transformers' names, else in order
        self.outputs = outputs
        self.output_names = list(outputs) if set(outputs) <= set(names) else names[:len(outputs)]

    def __call__(self, **feed: Any) -> SimpleNamespace:
        import numpy as np
        import torch

        arrays = {}
        for name in self.input_names:
            value = feed.get(name)
            if value is None and name == "token_type_ids" and "input_ids" in feed:
                value = torch.zeros_like(feed["input_ids"])
            if value is None:
                raise AdapterError(f"the ONNX graph wants input '{name}', which the tokenizer does not make "
                                   f"(it makes {', '.join(feed)})")
            arrays[name] = value.detach().cpu().numpy().astype(np.int64)
        try:
            results = self.session.run(self.output_names, arrays)
        except Exception as exc:  # as above
            raise AdapterError(f"onnxruntime failed on a batch: {exc}") from exc
        return SimpleNamespace(**{n: torch.from_numpy(np.asarray(r)) for n, r in zip(self.outputs, results)})


class OnnxClassificationAdapter(SequenceClassificationAdapter):
    """An ONNX sequence classifier (one or two text inputs); outputs ``logits`` [batch, labels]."""

    kind = ONNX_CLASSIFICATION

    def __init__(self, model_dir: Path, manifest: dict[str, Any], device: str = "cpu", allow_pickle: bool = False):
        self.read_inputs_and_labels(model_dir, manifest)
        self.device = "cpu"  # tensors stay on the host; onnxruntime moves them to its provider
        self.tokenizer = _tokenizer(model_dir)
        self.model = OnnxModule(onnx_file(model_dir, manifest), device, ("logits",))
        shape = self.model.session.get_outputs()[0].shape
        if shape and isinstance(shape[-1], int) and shape[-1] != len(self.labels):
            raise AdapterError(f"{model_dir}: the graph has {shape[-1]} outputs but the manifest lists "
                               f"{len(self.labels)} labels ({', '.join(self.labels)})")
        self.max_length = _max_length(manifest, self.tokenizer, DEFAULT_MAX_LENGTH)


class OnnxQuestionAnsweringAdapter(QuestionAnsweringAdapter):
    """An ONNX extractive-QA model; outputs ``start_logits`` and ``end_logits`` [batch, tokens]."""

    kind = ONNX_QA

    def __init__(self, model_dir: Path, manifest: dict[str, Any], device: str = "cpu", allow_pickle: bool = False):
        self.device = "cpu"
        self.tokenizer = _tokenizer(model_dir)
        self.model = OnnxModule(onnx_file(model_dir, manifest), device, ("start_logits", "end_logits"))
        self.read_manifest(model_dir, manifest)


register_kind(ONNX_CLASSIFICATION, OnnxClassificationAdapter, check_onnx_manifest, classification=True)
register_kind(ONNX_QA, OnnxQuestionAnsweringAdapter, check_onnx_manifest)
