"""ONNX exports of the tiny test models (tests/support/tiny_models.py), made with ``torch.onnx.export``.

The TorchScript exporter (``dynamo=False``) needs only the ``onnx`` package, no network. The exported folder holds
the graph, the tokenizer files and config.json of the source model, and no torch weights, so only the ONNX graph
can answer.
"""

from __future__ import annotations

import shutil
from pathlib import Path

from support.tiny_models import make_tiny_classifier, make_tiny_qa

TOKENIZER_FILES = ("tokenizer.json", "tokenizer_config.json", "vocab.txt", "special_tokens_map.json", "config.json")


def export_onnx(source: Path, target: Path, auto_cls: str, outputs: list[str]) -> Path:
    """Export a transformers folder to ``target/model.onnx`` with dynamic batch and sequence axes."""
    import torch
    import transformers

    model = getattr(transformers, auto_cls).from_pretrained(str(source), local_files_only=True).eval()
    target.mkdir(parents=True, exist_ok=True)
    for name in TOKENIZER_FILES:
        if (source / name).exists():
            shutil.copy(source / name, target / name)
    ids = torch.tensor([[2, 10, 11, 12, 3]])
    names = ["input_ids", "attention_mask", "token_type_ids"]
    axes = {n: {0: "batch", 1: "tokens"} for n in names}
    axes.update({o: {0: "batch"} if o == "logits" else {0: "batch", 1: "tokens"} for o in outputs})
    torch.onnx.export(model, (ids, torch.ones_like(ids), torch.zeros_like(ids)), str(target / "model.onnx"),
                      input_names=names, output_names=outputs, dynamic_axes=axes, dynamo=False, opset_version=17)
    return target


def make_onnx_classifier(root: Path, labels: list[str], task: str = "sentiment") -> tuple[Path, Path]:
    """(torch folder, ONNX folder without manifest) of one tiny classifier."""
    torch_dir = make_tiny_classifier(root / "torch", labels, task=task)
    onnx_dir = export_onnx(torch_dir, root / "onnx", "AutoModelForSequenceClassification", ["logits"])
    return torch_dir, onnx_dir


def make_onnx_qa(root: Path) -> tuple[Path, Path]:
    """(torch folder, ONNX folder without manifest) of one tiny extractive-QA model."""
    torch_dir = make_tiny_qa(root / "torch")
    onnx_dir = export_onnx(torch_dir, root / "onnx", "AutoModelForQuestionAnswering", ["start_logits", "end_logits"])
    return torch_dir, onnx_dir
