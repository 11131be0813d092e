"""Training the built-in baselines: majority label and bag-of-words.

Both write folders that :mod:`dynadesk.evaluator.adapters` loads: the
bag-of-words network and its tokenisation live there so that training and
prediction can never drift apart.
"""

from __future__ import annotations

import json
import random
from collections import Counter
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from dynadesk.evaluator import adapters as _ad

Steps = Callable[[str, int, int], None]


@dataclass(frozen=True)
class BowTraining:
    """How a bag-of-words model is trained: embedding width, passes over the data, batch size, Adam's learning rate
    and the seed (the same settings and data give the same weights)."""

    dim: int = 64
    epochs: int = 6
    batch_size: int = 64
    lr: float = 0.02
    seed: int = 13


def write_majority(folder: Path, task_name: str, labels: Sequence[str], inputs: Sequence[str],
                   gold: Sequence[str]) -> dict[str, Any]:
    """A majority baseline folder; returns its manifest."""
    folder.mkdir(parents=True, exist_ok=True)
    counts = Counter(gold)
    (folder / _ad.MAJORITY_FILE).write_text(
        json.dumps({"counts": {lab: counts.get(lab, 0) for lab in labels}}, indent=2) + "\n", encoding="utf-8")
    manifest = {"task": task_name, "kind": "majority", "labels": list(labels), "inputs": list(inputs)}
    (folder / _ad.MANIFEST_NAME).write_text(json.dumps(manifest, indent=2) + "\n", encoding="utf-8")
    return manifest


def _features(example: dict[str, str], inputs: Sequence[str]) -> list[str]:
    feats: list[str] = []
    for j, field in enumerate(inputs):
        feats.extend(_ad.bow_tokens(example[field], j))
    return feats


def build_vocab(examples: Sequence[dict[str, str]], inputs: Sequence[str], min_count: int = 2,
                max_size: int = 50_000) -> list[str]:
    """Features seen at least ``min_count`` times, most frequent first (ties alphabetical)."""
    counts: Counter[str] = Counter()
    for ex in examples:
        counts.update(set(_features(ex, inputs)))
    kept = [t for t, c in counts.items() if c >= min_count]
    kept.sort(key=lambda t: (-counts[t], t))
    return kept[:max_size]


def train_bag_of_words(folder: Path, task_name: str, labels: Sequence[str], inputs: Sequence[str],
                       examples: Sequence[dict[str, Any]], training: BowTraining | None = None, *,
                       steps: Steps | None = None) -> dict[str, Any]:
    """Train an EmbeddingBag + linear classifier (``training``: :class:`BowTraining`'s defaults unless given);
    write safetensors + vocab + manifest.

    On one thread: each step is a few small tensors, where a second intra-op thread costs more in
    synchronisation than it saves (measured on 2 cores under load: 17 CPU ms a step on one thread, 114 on two;
    issue 39)."""
    import torch

    threads = torch.get_num_threads()
    torch.set_num_threads(1)
    try:
        return _train_bag_of_words(folder, task_name, labels, inputs, examples, training or BowTraining(), steps)
    finally:
        torch.set_num_threads(threads)


def _optimizer(model: Any, lr: float) -> Callable[[Any], None]:
    """One training step's update: lazy Adam on the embedding's rows a batch uses, Adam on the classifier.

    Dense Adam updated every row of the ~47k x 64 embedding at each step (80 % of the demo's bag-of-words
    training, 29.7 s of CPU); the lazy update touches only the batch's features (5.5 s) and scored a little higher
    on the demo's dev sets (macro-F1 56.0 against 55.4). The same data and seed give the same weights."""
    import torch

    model.embedding.sparse = True  # read at each forward: the saved weights and the adapter are the same
    sparse = torch.optim.SparseAdam([model.embedding.weight], lr=lr)
    dense = torch.optim.Adam(model.linear.parameters(), lr=lr)

    def step(loss: Any) -> None:
        sparse.zero_grad()
        dense.zero_grad()
        loss.backward()
        sparse.step()
        dense.step()
    return step


def _train_bag_of_words(folder: Path, task_name: str, labels: Sequence[str], inputs: Sequence[str],
                        examples: Sequence[dict[str, Any]], training: BowTraining, steps: Steps | None
                        ) -> dict[str, Any]:
    import torch
    from safetensors.torch import save_file

    dim, epochs, batch_size, lr, seed = (training.dim, training.epochs, training.batch_size, training.lr,
                                         training.seed)
    torch.manual_seed(seed)
    vocab = build_vocab(examples, inputs)
    index = {t: i for i, t in enumerate(vocab)}
    label_index = {lab: i for i, lab in enumerate(labels)}
    encoded = [([index[t] for t in _features(ex, inputs) if t in index], label_index[ex["label"]])
               for ex in examples]
    model = _ad.build_bow_module(len(vocab), dim, len(labels))
    step = _optimizer(model, lr)
    loss_fn = torch.nn.CrossEntropyLoss()
    order = list(range(len(encoded)))
    rng = random.Random(seed)
    n_batches = (len(order) + batch_size - 1) // batch_size
    model.train()
    for epoch in range(epochs):
        rng.shuffle(order)
        for b in range(n_batches):
            chunk = [encoded[i] for i in order[b * batch_size:(b + 1) * batch_size]]
            ids: list[int] = []
            offsets: list[int] = []
            for toks, _ in chunk:
                offsets.append(len(ids))
                ids.extend(toks)
            logits = model(torch.tensor(ids, dtype=torch.long), torch.tensor(offsets, dtype=torch.long))
            loss = loss_fn(logits, torch.tensor([y for _, y in chunk]))
            step(loss)
            if steps:
                steps("bag-of-words", epoch * n_batches + b + 1, epochs * n_batches)
    folder.mkdir(parents=True, exist_ok=True)
    state = {k: v.detach().contiguous() for k, v in model.state_dict().items()}
    save_file(state, str(folder / _ad.BOW_WEIGHTS))
    (folder / _ad.BOW_VOCAB).write_text(json.dumps({"tokens": vocab}, ensure_ascii=False) + "\n", encoding="utf-8")
    manifest = {"task": task_name, "kind": "bag-of-words", "labels": list(labels), "inputs": list(inputs)}
    (folder / _ad.MANIFEST_NAME).write_text(json.dumps(manifest, indent=2) + "\n", encoding="utf-8")
    return manifest
