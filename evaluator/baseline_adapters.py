"""The two baseline adapters: the majority label and a bag-of-words network (:func:`bow_tokens` features).

Tiny models the demo zoo and ``dynadesk models train`` make; the trainer shares :func:`build_bow_module` and
:func:`bow_tokens` with the adapter. :mod:`.adapters` lists them among the built-in kinds and re-exports them.
"""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any, cast

from dynadesk.evaluator.adapter_base import (
    BOW_VOCAB,
    BOW_WEIGHTS,
    MAJORITY_FILE,
    AdapterError,
    _softmax_rows,
    _texts,
)

__all__ = ["BagOfWordsAdapter", "MajorityAdapter", "bow_tokens", "build_bow_module"]


class MajorityAdapter:
    """Always the most frequent training label; probabilities are the training label frequencies."""

    kind = "majority"

    def __init__(self, model_dir: Path, manifest: dict[str, Any], device: str = "cpu", allow_pickle: bool = False):
        self.inputs = list(manifest["inputs"])
        self.labels = list(manifest["labels"])
        path = Path(model_dir) / MAJORITY_FILE
        try:
            counts = json.loads(path.read_text(encoding="utf-8"))["counts"]
        except (OSError, ValueError, KeyError, TypeError) as exc:
            raise AdapterError(f"{path}: cannot read the majority baseline's label counts: {exc}") from exc
        if not isinstance(counts, dict) or set(counts) - set(self.labels) or not all(
                isinstance(v, int) and v >= 0 for v in counts.values()) or sum(counts.values()) == 0:
            raise AdapterError(f"{path}: 'counts' must map task labels ({', '.join(self.labels)}) to counts")
        total = sum(counts.values())
        self.probs = {lab: counts.get(lab, 0) / total for lab in self.labels}
        # Ties go to the label listed first: deterministic.
        self.label = max(self.labels, key=lambda lab: (self.probs[lab], -self.labels.index(lab)))

    def predict(self, batch: list[dict[str, str]]) -> list[dict[str, Any]]:
        _texts(batch, self.inputs)
        return [{"label": self.label, "probs": dict(self.probs)} for _ in batch]


_TOKEN_RE = re.compile(r"[a-z0-9]+(?:'[a-z]+)?|[^\sa-z0-9]", re.UNICODE)


def bow_tokens(text: str, field_index: int = 0) -> list[str]:
    """Deterministic bag-of-words features: lowercased words, punctuation/emoji marks and word bigrams.

    Tokens of a second or later input field are prefixed with its index so
    that the same word in a premise and a hypothesis stay distinct features.
    """
    words = _TOKEN_RE.findall(text.lower())
    feats = words + [f"{a} {b}" for a, b in zip(words, words[1:])]
    if field_index:
        feats = [f"{field_index}:{t}" for t in feats]
    return feats


class BagOfWordsAdapter:
    """A torch ``EmbeddingBag`` (mean) + linear layer over :func:`bow_tokens` features (safetensors + vocab)."""

    kind = "bag-of-words"

    def __init__(self, model_dir: Path, manifest: dict[str, Any], device: str = "cpu", allow_pickle: bool = False):
        import torch
        from safetensors import SafetensorError
        from safetensors.torch import load_file

        self.inputs = list(manifest["inputs"])
        self.labels = list(manifest["labels"])
        self.device = device
        model_dir = Path(model_dir)
        try:
            vocab = json.loads((model_dir / BOW_VOCAB).read_text(encoding="utf-8"))["tokens"]
            tensors = load_file(str(model_dir / BOW_WEIGHTS))
        except (OSError, ValueError, KeyError, TypeError, SafetensorError) as exc:
            raise AdapterError(f"{model_dir}: cannot read the bag-of-words model ({BOW_VOCAB}, {BOW_WEIGHTS}): "
                               f"{exc}") from exc
        self.vocab = {tok: i for i, tok in enumerate(vocab)}
        try:
            emb, weight, _bias = tensors["embedding.weight"], tensors["linear.weight"], tensors["linear.bias"]
        except KeyError as exc:
            raise AdapterError(f"{model_dir / BOW_WEIGHTS}: missing tensor {exc}") from exc
        if emb.shape[0] != len(vocab) or weight.shape != (len(self.labels), emb.shape[1]):
            raise AdapterError(f"{model_dir / BOW_WEIGHTS}: shapes {tuple(emb.shape)}/{tuple(weight.shape)} do not "
                               f"fit {len(vocab)} vocabulary entries and {len(self.labels)} labels")
        self.model = build_bow_module(len(vocab), emb.shape[1], len(self.labels))
        self.model.load_state_dict(tensors)
        self.model.to(device).eval()
        self._torch = torch

    def bags(self, batch: list[dict[str, str]]) -> tuple[Any, Any]:
        """(flat token ids, offsets) for EmbeddingBag; unknown features are dropped, empty bags are zero.

        Not ``encode``: the worker takes an adapter's ``encode`` for unpadded tokenizer output to sort
        and pad by (:meth:`SequenceClassificationAdapter.encode`); bags have no padding to save."""
        torch = self._torch
        cols = _texts(batch, self.inputs)
        ids: list[int] = []
        offsets: list[int] = []
        for i in range(len(batch)):
            offsets.append(len(ids))
            for j, col in enumerate(cols):
                ids.extend(self.vocab[t] for t in bow_tokens(col[i], j) if t in self.vocab)
        return (torch.tensor(ids, dtype=torch.long, device=self.device),
                torch.tensor(offsets, dtype=torch.long, device=self.device))

    def predict(self, batch: list[dict[str, str]]) -> list[dict[str, Any]]:
        if not batch:
            return []
        ids, offsets = self.bags(batch)
        with self._torch.inference_mode():
            logits = self.model(ids, offsets)
        out = []
        for row in _softmax_rows(logits):
            best = max(range(len(row)), key=lambda i: (row[i], -i))
            out.append({"label": self.labels[best], "probs": dict(zip(self.labels, row))})
        return out


def build_bow_module(vocab_size: int, dim: int, n_labels: int) -> Any:
    """The bag-of-words network; the trainer and the adapter share it."""
    import torch
    from torch import nn

    class BagOfWords(nn.Module):  # type: ignore[misc]  # torch is not analysed (pyproject.toml)
        def __init__(self) -> None:
            super().__init__()
            self.embedding = nn.EmbeddingBag(vocab_size, dim, mode="mean")
            self.linear = nn.Linear(dim, n_labels)

        def forward(self, ids: torch.Tensor, offsets: torch.Tensor) -> torch.Tensor:
            return cast(torch.Tensor, self.linear(self.embedding(ids, offsets)))

    return BagOfWords()
