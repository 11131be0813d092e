"""What every model adapter shares: the errors, the interface, the weight-file rules and the batch helpers.

Below :mod:`.adapters` (the manifest, the kinds and ``load_adapter``) and the adapters in their own modules
(:mod:`.baseline_adapters`, :mod:`.generative`, ...): each imports these from here or, as before, through
:mod:`.adapters`, which re-exports them. Standard library, torch, transformers and safetensors only (rule 1).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any, Protocol, cast

__all__ = ["BOW_VOCAB", "BOW_WEIGHTS", "MAJORITY_FILE", "PICKLE_SUFFIXES", "SAFE_SUFFIXES", "Adapter", "AdapterError",
           "PickleWeightsError", "pickle_only", "weight_files"]

PICKLE_SUFFIXES = (".bin", ".pt", ".pth", ".pkl", ".pickle", ".ckpt")
SAFE_SUFFIXES = (".safetensors",)

# Baseline file names.
MAJORITY_FILE = "majority.json"
BOW_WEIGHTS = "bow.safetensors"
BOW_VOCAB = "bow-vocab.json"


class AdapterError(Exception):
    """A model folder or manifest cannot be loaded, or a batch is malformed."""


class PickleWeightsError(AdapterError):
    """The folder holds only pickle weights and ``allow_pickle`` is off."""


class Adapter(Protocol):
    kind: str
    inputs: list[str]

    def predict(self, batch: list[dict[str, str]]) -> list[dict[str, Any]]: ...

# ---------------------------------------------------------------- weights

def weight_files(model_dir: Path) -> tuple[list[Path], list[Path]]:
    """(safetensors files, pickle files) anywhere in the folder."""
    safe, pickles = [], []
    for p in sorted(Path(model_dir).rglob("*")):
        if not p.is_file():
            continue
        name = p.name.lower()
        if name.endswith(SAFE_SUFFIXES):
            safe.append(p)
        elif name.endswith(PICKLE_SUFFIXES) and name != "training_args.bin":
            pickles.append(p)
    return safe, pickles


def pickle_only(model_dir: Path) -> bool:
    """True when the folder's weights exist only as pickles (which run code on load)."""
    safe, pickles = weight_files(model_dir)
    return bool(pickles) and not safe


def _check_pickle(model_dir: Path, allow_pickle: bool) -> bool:
    """Refuse pickle-only folders unless allowed; return whether pickles are used."""
    if not pickle_only(model_dir):
        return False
    if not allow_pickle:
        raise PickleWeightsError(
            f"{model_dir}: weights are pickle files only (*.bin/*.pt/*.pkl); unpickling executes arbitrary code, "
            "so they are not loaded here. Convert them to safetensors, or evaluate the model only inside the "
            "evaluation container with the explicit pickle flag.")
    return True


# ---------------------------------------------------------------- helpers

def _texts(batch: list[dict[str, str]], fields: list[str]) -> list[list[str]]:
    """Column per field; every example must carry every field as a string."""
    if not isinstance(batch, list):
        raise AdapterError(f"a batch must be a list of examples, got {type(batch).__name__}")
    cols: list[list[str]] = [[] for _ in fields]
    for i, ex in enumerate(batch):
        if not isinstance(ex, dict):
            raise AdapterError(f"batch[{i}]: an example must be a mapping of input fields")
        for j, f in enumerate(fields):
            value = ex.get(f)
            if not isinstance(value, str):
                raise AdapterError(f"batch[{i}]: input field '{f}' is missing or not text")
            cols[j].append(value)
    return cols


def _softmax_rows(logits: Any) -> list[list[float]]:
    import torch

    return cast(list[list[float]], torch.softmax(logits.float(), dim=-1).tolist())


def _load_hf(model_dir: Path, auto_cls_name: str, device: str, allow_pickle: bool) -> tuple[Any, Any]:
    import torch
    import transformers
    from transformers import AutoTokenizer

    uses_pickle = _check_pickle(model_dir, allow_pickle)
    auto_cls = getattr(transformers, auto_cls_name)
    transformers.utils.logging.disable_progress_bar()  # per-load bars would flood CLI and worker logs
    try:
        tokenizer = AutoTokenizer.from_pretrained(str(model_dir), local_files_only=True, trust_remote_code=False)
        model = auto_cls.from_pretrained(
            str(model_dir), local_files_only=True, trust_remote_code=False, use_safetensors=not uses_pickle,
            dtype=torch.float32 if device == "cpu" else "auto")
    except (OSError, ValueError, KeyError, RuntimeError) as exc:
        raise AdapterError(f"{model_dir}: cannot load the transformers model: {exc}") from exc
    model.to(device)
    model.eval()
    return tokenizer, model


def _max_length(manifest: dict[str, Any], tokenizer: Any, default: int) -> int:
    limit = manifest.get("max_length") or default
    model_max = getattr(tokenizer, "model_max_length", None)
    if isinstance(model_max, int) and 0 < model_max < limit:
        limit = model_max
    return int(limit)
