"""Model adapters: one small interface over every kind of local model.

Runs both on the host (live prediction, the demo zoo) and inside the evaluation
container, so it imports only stdlib, numpy, torch, transformers and
safetensors -- never the DynaDesk core. Errors are :class:`AdapterError`; the
core translates them into its own hierarchy where they enter.

Contract: ``load_adapter(model_dir, manifest) -> Adapter`` and
``Adapter.predict(batch)`` where ``batch`` is a list of ``{input field: text}``.
Classification returns ``{"label", "probs": {label: p}}``; question answering
returns ``{"answer", "start", "end", "score"}`` with ``context[start:end] ==
answer`` (``end`` exclusive, character offsets into the context).

Loading never touches the network (``local_files_only``), never runs remote
code, refuses pickle weights unless ``allow_pickle=True`` (inside the sandbox
only), pads per batch and predicts under ``torch.inference_mode()``.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import Any, cast

# The shared pieces and the baselines live in their own modules; they are re-exported here (the old import paths).
from dynadesk.evaluator.adapter_base import (
    BOW_VOCAB,
    BOW_WEIGHTS,
    MAJORITY_FILE,
    PICKLE_SUFFIXES,
    SAFE_SUFFIXES,
    Adapter,
    AdapterError,
    PickleWeightsError,
    _load_hf,
    _max_length,
    _softmax_rows,
    _texts,
    pickle_only,
    weight_files,
)
from dynadesk.evaluator.baseline_adapters import (
    BagOfWordsAdapter,
    MajorityAdapter,
    bow_tokens,
    build_bow_module,
)

__all__ = ["ARCHITECTURES", "BOW_VOCAB", "BOW_WEIGHTS", "CLASSIFICATION_KINDS", "DEFAULT_MAX_ANSWER_TOKENS",
           "DEFAULT_MAX_LENGTH", "DEFAULT_QA_MAX_LENGTH", "KINDS", "MAJORITY_FILE", "MANIFEST_NAME", "PICKLE_SUFFIXES",
           "SAFE_SUFFIXES", "Adapter", "AdapterError", "BagOfWordsAdapter", "MajorityAdapter", "PickleWeightsError",
           "QuestionAnsweringAdapter", "SequenceClassificationAdapter", "bow_tokens", "build_bow_module",
           "check_manifest", "load_adapter", "pad_batch", "pickle_only", "read_manifest", "register_kind",
           "weight_files"]

MANIFEST_NAME = "dynadesk-model.json"
KINDS: tuple[str, ...] = ("hf-sequence-classification", "hf-question-answering", "majority", "bag-of-words")
CLASSIFICATION_KINDS: tuple[str, ...] = ("hf-sequence-classification", "majority", "bag-of-words")
DEFAULT_MAX_LENGTH = 256
DEFAULT_QA_MAX_LENGTH = 384
DEFAULT_MAX_ANSWER_TOKENS = 30


# ---------------------------------------------------------------- manifest

def read_manifest(model_dir: Path) -> dict[str, Any]:
    path = Path(model_dir) / MANIFEST_NAME
    try:
        manifest = json.loads(path.read_text(encoding="utf-8"))
    except FileNotFoundError as exc:
        raise AdapterError(f"{path}: manifest missing (register the folder with 'dynadesk models add')") from exc
    except (OSError, UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise AdapterError(f"{path}: cannot read manifest: {exc}") from exc
    check_manifest(manifest, str(path))
    return cast(dict[str, Any], manifest)


def check_manifest(manifest: Any, where: str = MANIFEST_NAME) -> None:
    """Raise :class:`AdapterError` listing what is wrong with a manifest."""
    if not isinstance(manifest, dict):
        raise AdapterError(f"{where}: a manifest must be a JSON object")
    problems = []
    kind = manifest.get("kind")
    if kind not in KINDS:
        problems.append(f"'kind' must be one of {', '.join(KINDS)}, got {kind!r}")
    if not isinstance(manifest.get("task"), str) or not manifest.get("task"):
        problems.append("'task' must be a task name")
    inputs = manifest.get("inputs")
    if not isinstance(inputs, list) or not inputs or not all(isinstance(i, str) for i in inputs):
        problems.append("'inputs' must be a non-empty list of input field names")
    if kind in CLASSIFICATION_KINDS:
        labels = manifest.get("labels")
        if not isinstance(labels, list) or len(labels) < 2 or not all(isinstance(x, str) for x in labels):
            problems.append("'labels' must list the task labels in model output order")
        elif len(set(labels)) != len(labels):
            problems.append("'labels' has duplicates")
    problems += _KIND_CHECKS[kind](manifest) if kind in _KIND_CHECKS else []
    if "label_map" in manifest and not (isinstance(manifest["label_map"], dict) and all(
            isinstance(k, str) and isinstance(v, str) for k, v in manifest["label_map"].items())):
        problems.append("'label_map' must map model labels to task labels (strings)")
    max_length = manifest.get("max_length")
    if max_length is not None and (not isinstance(max_length, int) or isinstance(max_length, bool) or max_length < 8):
        problems.append("'max_length' must be an integer >= 8")
    threshold = manifest.get("null_threshold")
    if threshold is not None and (isinstance(threshold, bool) or not isinstance(threshold, (int, float))
                                  or threshold != threshold or abs(threshold) == float("inf")):
        problems.append("'null_threshold' must be a finite number (SQuAD 2.0 abstention) or absent")
    if kind == "hf-question-answering" and isinstance(inputs, list):
        for key, default in (("context_field", "context"), ("question_field", "question")):
            if manifest.get(key, default) not in inputs:
                problems.append(f"'{key}' ({manifest.get(key, default)!r}) is not one of 'inputs'")
    if problems:
        raise AdapterError(f"{where}: bad manifest: " + "; ".join(problems))

# ---------------------------------------------------------------- adapters

class SequenceClassificationAdapter:
    """A transformers ``AutoModelForSequenceClassification`` folder (one or two text inputs)."""

    kind = "hf-sequence-classification"

    def __init__(self, model_dir: Path, manifest: dict[str, Any], device: str = "cpu", allow_pickle: bool = False):
        self.read_inputs_and_labels(model_dir, manifest)
        self.device = device
        self.tokenizer, self.model = _load_hf(model_dir, "AutoModelForSequenceClassification", device, allow_pickle)
        n_out = int(self.model.config.num_labels)
        if n_out != len(self.labels):
            raise AdapterError(f"{model_dir}: the model has {n_out} outputs but the manifest lists "
                               f"{len(self.labels)} labels ({', '.join(self.labels)})")
        self.max_length = _max_length(manifest, self.tokenizer, DEFAULT_MAX_LENGTH)

    def read_inputs_and_labels(self, model_dir: Path, manifest: dict[str, Any]) -> None:
        """The manifest's inputs (one or two texts) and labels, for every classifier kind (transformers, ONNX)."""
        self.inputs = list(manifest["inputs"])
        if len(self.inputs) > 2:
            raise AdapterError(f"{model_dir}: a sequence classifier takes one or two inputs, manifest lists "
                               f"{len(self.inputs)}")
        self.labels = list(manifest["labels"])

    def encode(self, batch: list[dict[str, str]]) -> list[dict[str, list[int]]]:
        """Truncated, unpadded model inputs per example: the evaluator tokenizes a dataset once,
        sorts it by token count and pads per batch (:meth:`predict_encoded`)."""
        cols = _texts(batch, self.inputs)
        enc = self.tokenizer(*cols, truncation=True, max_length=self.max_length)
        names = [k for k in enc if k in self.tokenizer.model_input_names]
        return [{k: list(enc[k][i]) for k in names} for i in range(len(batch))]

    def predict_encoded(self, encoded: list[dict[str, list[int]]]) -> list[dict[str, Any]]:
        """Predictions for :meth:`encode` output, padded to the batch's longest example."""
        import torch

        if not encoded:
            return []
        feed = {k: v.to(self.device) for k, v in pad_batch(encoded, self.tokenizer).items()}
        with torch.inference_mode():
            logits = self.model(**feed).logits
        out = []
        for row in _softmax_rows(logits):
            best = max(range(len(row)), key=lambda i: (row[i], -i))
            out.append({"label": self.labels[best], "probs": dict(zip(self.labels, row))})
        return out

    def predict(self, batch: list[dict[str, str]]) -> list[dict[str, Any]]:
        return self.predict_encoded(self.encode(batch))


def pad_batch(encoded: list[dict[str, list[int]]], tokenizer: Any) -> dict[str, Any]:
    """Stack per-example token lists into tensors padded to the longest, on the tokenizer's padding side.

    The same tensors ``tokenizer(..., padding="longest")`` makes, without a second tokenization.
    """
    import torch

    width = max(len(e["input_ids"]) for e in encoded)
    pad_id = tokenizer.pad_token_id if tokenizer.pad_token_id is not None else 0
    left = getattr(tokenizer, "padding_side", "right") == "left"
    out: dict[str, Any] = {}
    for key in encoded[0]:
        fill = pad_id if key == "input_ids" else 0
        rows = [[fill] * (width - len(e[key])) + e[key] if left else e[key] + [fill] * (width - len(e[key]))
                for e in encoded]
        out[key] = torch.tensor(rows, dtype=torch.long)
    if "attention_mask" not in out and "attention_mask" in tokenizer.model_input_names:
        out["attention_mask"] = torch.tensor(
            [[0] * (width - len(e["input_ids"])) + [1] * len(e["input_ids"]) if left else
             [1] * len(e["input_ids"]) + [0] * (width - len(e["input_ids"])) for e in encoded], dtype=torch.long)
    return out


class QuestionAnsweringAdapter:
    """A transformers ``AutoModelForQuestionAnswering`` folder: best span of the context.

    Long contexts are split into overlapping windows; the best span over every
    window wins. A span is valid when it lies in the context, ends at or after
    its start and is at most ``max_answer_tokens`` tokens long. The score is
    ``p(start) * p(end)`` with softmaxes over the window's context tokens.
    """

    kind = "hf-question-answering"

    def __init__(self, model_dir: Path, manifest: dict[str, Any], device: str = "cpu", allow_pickle: bool = False):
        self.device = device
        self.tokenizer, self.model = _load_hf(model_dir, "AutoModelForQuestionAnswering", device, allow_pickle)
        self.read_manifest(model_dir, manifest)

    def read_manifest(self, model_dir: Path, manifest: dict[str, Any]) -> None:
        """The fields, windows and answer limits the manifest sets, and the tokenizer check, once the tokenizer is
        loaded: one reading for every QA adapter (transformers, ONNX), so a manifest means the same in each."""
        self.inputs = list(manifest["inputs"])
        self.context_field = manifest.get("context_field", "context")
        self.question_field = manifest.get("question_field", "question")
        if not getattr(self.tokenizer, "is_fast", False):
            raise AdapterError(f"{model_dir}: question answering needs a fast tokenizer (tokenizer.json) "
                               "for character offsets")
        self.max_length = _max_length(manifest, self.tokenizer, DEFAULT_QA_MAX_LENGTH)
        self.stride = max(0, min(128, self.max_length // 4))
        self.max_answer_tokens = int(manifest.get("max_answer_tokens", DEFAULT_MAX_ANSWER_TOKENS))
        self.pad_right = self.tokenizer.padding_side == "right"
        threshold = manifest.get("null_threshold")  # SQuAD 2.0 abstention
        self.null_threshold = None if threshold is None else float(threshold)

    def predict(self, batch: list[dict[str, str]]) -> list[dict[str, Any]]:
        import numpy as np
        import torch

        if not batch:
            return []
        questions, contexts = _texts(batch, [self.question_field, self.context_field])
        enc = self.tokenizer(
            [q.lstrip() for q in questions], contexts, padding="longest", truncation="only_second",
            max_length=self.max_length, stride=self.stride, return_overflowing_tokens=True,
            return_offsets_mapping=True, return_tensors="pt")
        windows_of = enc["overflow_to_sample_mapping"].tolist()
        offsets = enc["offset_mapping"].tolist()
        feed = {k: v.to(self.device) for k, v in enc.items() if k in self.tokenizer.model_input_names}
        with torch.inference_mode():
            out = self.model(**feed)
        starts = out.start_logits.float().cpu().numpy()
        ends = out.end_logits.float().cpu().numpy()
        best: list[dict[str, Any]] = [{"answer": "", "start": 0, "end": 0, "score": 0.0} for _ in batch]
        raw: list[float] = [-np.inf] * len(batch)  # the chosen span's start + end logits
        null: list[float] = [np.inf] * len(batch)  # the least null (CLS) score over the example's windows
        band = None
        for w, sample in enumerate(windows_of):
            seq_ids = enc.sequence_ids(w)
            ctx = np.array([s == 1 for s in seq_ids], dtype=bool)
            cls = _cls_index(enc["input_ids"][w].tolist(), self.tokenizer)
            null[sample] = min(null[sample], float(starts[w][cls] + ends[w][cls]))
            if not ctx.any():
                continue
            s_logp = _log_softmax(starts[w][ctx])
            e_logp = _log_softmax(ends[w][ctx])
            n = int(ctx.sum())
            if band is None or band.shape[0] < n:
                size = max(n, self.max_length)
                idx = np.arange(size)
                band = (idx[None, :] >= idx[:, None]) & (idx[None, :] - idx[:, None] < self.max_answer_tokens)
            scores = np.where(band[:n, :n], s_logp[:, None] + e_logp[None, :], -np.inf)
            flat = int(np.argmax(scores))  # first maximum: deterministic tie-break
            i, j = divmod(flat, n)
            score = float(np.exp(scores[i, j]))
            if score <= best[sample]["score"]:
                continue
            ctx_pos = np.flatnonzero(ctx)
            start_char = int(offsets[w][ctx_pos[i]][0])
            end_char = int(offsets[w][ctx_pos[j]][1])
            text = contexts[sample]
            best[sample] = {"answer": text[start_char:end_char], "start": start_char, "end": end_char,
                            "score": score}
            raw[sample] = float(starts[w][ctx_pos[i]] + ends[w][ctx_pos[j]])
        return [self._abstain(b, null[k] - raw[k]) for k, b in enumerate(best)]

    def _abstain(self, pred: dict[str, Any], diff: float) -> dict[str, Any]:
        """SQuAD 2.0's null-score rule (as the reference BERT/transformers post-processing): the null score
        (start + end logit of the CLS token, least over the windows) minus the best span's; above the run's
        ``null_threshold`` the model abstains (empty answer). Without a threshold (a v1.1 run) it never
        abstains and adds nothing. Every v2 prediction keeps its ``null_score_diff`` and ``span_answer``, so a
        threshold can be chosen on a dev set from the predictions alone (``metrics.best_null_threshold``)."""
        import math

        if self.null_threshold is None:  # a v1.1 run: its predictions stay as they always were
            return pred
        diff = diff if math.isfinite(diff) else 0.0
        out = {**pred, "null_score_diff": round(diff, 6), "span_answer": pred["answer"]}
        if diff > self.null_threshold:
            out.update(answer="", start=0, end=0, abstained=True)
        return out


def _cls_index(ids: list[int], tokenizer: Any) -> int:
    """Where the window's CLS token is (the null answer's position); 0 when the tokenizer has none."""
    cls = getattr(tokenizer, "cls_token_id", None)
    return ids.index(cls) if cls is not None and cls in ids else 0


def _log_softmax(x: Any) -> Any:
    import numpy as np

    x = x.astype(np.float64)
    m = x.max()
    return x - m - np.log(np.exp(x - m).sum())

_ADAPTERS: dict[str, Callable[..., Adapter]] = {
    "hf-sequence-classification": SequenceClassificationAdapter,
    "hf-question-answering": QuestionAnsweringAdapter,
    "majority": MajorityAdapter,
    "bag-of-words": BagOfWordsAdapter,
}


_KIND_CHECKS: dict[str, Callable[[dict[str, Any]], list[str]]] = {}
ARCHITECTURES: dict[str, tuple[str, ...]] = {}  # kind -> config.json architecture suffixes it loads


def register_kind(kind: str, factory: Callable[..., Adapter], check: Callable[[dict[str, Any]], list[str]],
                  *, architectures: tuple[str, ...] = (), classification: bool = False) -> None:
    """The hook for kinds in their own modules: their adapter, manifest check and the architectures they load."""
    global KINDS, CLASSIFICATION_KINDS
    KINDS = (*KINDS, kind)
    CLASSIFICATION_KINDS = (*CLASSIFICATION_KINDS, kind) if classification else CLASSIFICATION_KINDS
    _ADAPTERS[kind], _KIND_CHECKS[kind], ARCHITECTURES[kind] = factory, check, architectures


def load_adapter(model_dir: Path, manifest: dict[str, Any] | None = None, *, device: str = "cpu",
                 allow_pickle: bool = False) -> Adapter:
    """Load a model folder for prediction (manifest read from the folder when not given)."""
    model_dir = Path(model_dir)
    if not model_dir.is_dir():
        raise AdapterError(f"{model_dir}: model folder not found")
    if manifest is None:
        manifest = read_manifest(model_dir)
    else:
        check_manifest(manifest, str(model_dir / MANIFEST_NAME))
    return _ADAPTERS[manifest["kind"]](model_dir, manifest, device=device, allow_pickle=allow_pickle)

