"""Handler model folders for tests: a ``handler.py`` beside its weights (evaluator/handler_adapter.py).

``make_handler_model(path, behaviour)`` writes a sentiment model whose handler scores a statement by word lists
read from ``weights.json``, with the scoring in a vendored pure-Python wheel (``wheels/kwscore-1.0-py3-none-any.whl``)
and the softmax in torch (the image's package). A ``behaviour`` other than ``good`` breaks the handler in one way
at predict time: ``crash``, ``hang``, ``wrong_shape``, ``network``, ``print``; ``peek`` is the gold-reading attack:
it walks the data folder the worker was given (``--data``) and answers the gold label of any statement it finds
there, ``neutral`` otherwise.
"""

from __future__ import annotations

import json
import zipfile
from pathlib import Path

LABELS = ["negative", "neutral", "positive"]
BEHAVIOURS = ("good", "crash", "hang", "wrong_shape", "network", "print", "peek")
WEIGHTS = {"negative": ["bad", "terrible", "awful", "hate", "not"], "positive": ["good", "great", "love", "ok"]}

KWSCORE = '''"""Word-list scores (vendored as a pure-Python wheel)."""


def score(text, words):
    tokens = text.lower().split()
    return {label: float(sum(tokens.count(w) for w in ws)) for label, ws in words.items()}
'''

HANDLER = '''"""A sentiment handler: word lists from weights.json, scored by the vendored kwscore wheel."""
import json
import os
import socket
import sys
import time

import kwscore
import torch

LABELS = ["negative", "neutral", "positive"]
BEHAVIOUR = {behaviour!r}


def load(model_dir, device):
    with open(os.path.join(model_dir, "weights.json"), encoding="utf-8") as fh:
        return json.load(fh)


def _gold():
    """Every labelled statement in the worker's data folder (the attack: answers read from the mounted data)."""
    data = sys.argv[sys.argv.index("--data") + 1] if "--data" in sys.argv else "/data"
    found = {{}}
    for root, _dirs, files in os.walk(data):
        for name in files:
            with open(os.path.join(root, name), encoding="utf-8") as fh:
                for line in fh:
                    row = json.loads(line) if line.strip().startswith("{{") else {{}}
                    if "label" in row and "statement" in row:
                        found[row["statement"]] = row["label"]
    return found


def predict(model, batch):
    if BEHAVIOUR == "peek":
        gold = _gold()
        labels = [gold.get(example["statement"], "neutral") for example in batch]
        return [{{"label": label, "probs": {{x: float(x == label) for x in LABELS}}}} for label in labels]
    if BEHAVIOUR == "crash":
        raise ValueError("HANDLER crash on purpose")
    if BEHAVIOUR == "hang":
        time.sleep(3600)
    if BEHAVIOUR == "print":
        print("HANDLER says hello")
    if BEHAVIOUR == "network":
        socket.create_connection(("192.0.2.1", 80), timeout=3)
    out = []
    for example in batch:
        scores = kwscore.score(example["statement"], model)
        logits = torch.tensor([scores.get("negative", 0.0), 0.5, scores.get("positive", 0.0)])
        probs = torch.softmax(logits, dim=0).tolist()
        best = max(range(3), key=lambda i: (probs[i], -i))
        out.append({{"label": LABELS[best], "probs": dict(zip(LABELS, probs))}})
    if BEHAVIOUR == "wrong_shape":
        return out[:-1]
    return out
'''


def make_wheel(folder: Path, name: str = "kwscore", version: str = "1.0", tag: str = "py3-none-any") -> Path:
    """A minimal wheel of one module (a zip Python imports from)."""
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / f"{name}-{version}-{tag}.whl"
    info = f"{name}-{version}.dist-info"
    with zipfile.ZipFile(path, "w") as zf:
        zf.writestr(f"{name}.py", KWSCORE)
        zf.writestr(f"{info}/METADATA", f"Metadata-Version: 2.1\nName: {name}\nVersion: {version}\n")
        zf.writestr(f"{info}/WHEEL", f"Wheel-Version: 1.0\nRoot-Is-Purelib: true\nTag: {tag}\n")
        zf.writestr(f"{info}/RECORD", "")
    return path


def make_handler_model(path: Path, behaviour: str = "good", timeout_s: float | None = None) -> Path:
    """A handler model folder (no manifest: registration writes it); ``timeout_s`` goes into a manifest when given."""
    if behaviour not in BEHAVIOURS:
        raise ValueError(f"unknown behaviour {behaviour!r}")
    folder = Path(path)
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "handler.py").write_text(HANDLER.format(behaviour=behaviour), encoding="utf-8")
    (folder / "weights.json").write_text(json.dumps(WEIGHTS, sort_keys=True), encoding="utf-8")
    make_wheel(folder / "wheels")
    if timeout_s is not None:
        (folder / "dynadesk-model.json").write_text(json.dumps(
            {"task": "sentiment", "kind": "handler", "inputs": ["statement"], "labels": LABELS,
             "timeout_s": timeout_s}), encoding="utf-8")
    return folder
