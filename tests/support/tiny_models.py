"""Tiny, randomly initialised BERT models with a tiny WordPiece tokenizer, for tests.

No trained NLI, hate-speech or QA model can be had offline, so tests of those
paths use these: real transformers folders (config.json, model.safetensors,
tokenizer files, dynadesk-model.json) that go through the real loading code
and a real forward pass in a fraction of a second. Predictions are
deterministic for a given seed but carry no meaning.

    from support.tiny_models import make_tiny_classifier, make_tiny_qa
    make_tiny_classifier(tmp_path / "nli", ["entailment", "neutral", "contradiction"], task="nli")
    make_tiny_qa(tmp_path / "qa")
"""

from __future__ import annotations

import json
import shutil
import string
from collections.abc import Sequence
from pathlib import Path

MANIFEST_NAME = "dynadesk-model.json"

_WORDS = """the a an is are was were be been it this that these those i you he she we they me him her us them
my your his its our their of to in on at for with by from and or but not no yes what who where when why how
which good bad great terrible awful love loved hate hated like liked movie film book food place service
happy sad angry nice fine ok okay very really so too much many more most best worst ever never always
people person man woman men women child children group city country world day year time story work
capital paris france london england berlin germany river mountain born wrote built named called""".split()

TASK_INPUTS = {
    "sentiment": ["statement"],
    "hate_speech": ["statement"],
    "nli": ["context", "hypothesis"],
    "qa": ["context", "question"],
}


def tiny_vocab() -> dict[str, int]:
    """Special tokens, single characters (plain and ``##``) and a few whole words: every text tokenizes."""
    tokens = ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]"]
    chars = list(string.ascii_lowercase + string.digits + string.punctuation)
    tokens += chars + [f"##{c}" for c in string.ascii_lowercase + string.digits]
    tokens += [w for w in dict.fromkeys(_WORDS) if w not in tokens]
    return {tok: i for i, tok in enumerate(tokens)}


def make_tiny_tokenizer(path: Path):
    """Save a tiny BERT WordPiece tokenizer (tokenizer.json + vocab.txt) into ``path``."""
    from transformers import BertTokenizer

    path = Path(path)
    path.mkdir(parents=True, exist_ok=True)
    tok = BertTokenizer(vocab=tiny_vocab(), do_lower_case=True, model_max_length=128)
    tok.save_pretrained(str(path))
    return tok


def _config(n_labels: int | None = None, id2label: dict[int, str] | None = None, layers: int = 2):
    from transformers import BertConfig

    kwargs = {}
    if id2label is not None:
        kwargs = {"id2label": dict(id2label), "label2id": {v: k for k, v in id2label.items()}}
    elif n_labels is not None:
        kwargs = {"num_labels": n_labels}
    return BertConfig(vocab_size=len(tiny_vocab()), hidden_size=32, num_hidden_layers=layers,
                      num_attention_heads=2, intermediate_size=64, max_position_embeddings=128, **kwargs)


def _save(model, path: Path, pickle_weights: bool) -> None:
    model.save_pretrained(str(path))
    if pickle_weights:
        import torch

        for f in path.glob("*.safetensors"):
            f.unlink()
        torch.save(model.state_dict(), path / "pytorch_model.bin")


def write_manifest(path: Path, manifest: dict) -> Path:
    target = Path(path) / MANIFEST_NAME
    target.write_text(json.dumps(manifest, indent=2), encoding="utf-8")
    return target


def make_tiny_classifier(path: Path, labels: Sequence[str], task: str = "sentiment", *,
                         inputs: Sequence[str] | None = None, seed: int = 0,
                         id2label: dict[int, str] | None = None, manifest: bool = True,
                         pickle_weights: bool = False, max_length: int = 64) -> Path:
    """A random ``BertForSequenceClassification`` folder with one output per label.

    ``id2label`` (default: ``labels`` in order) lets tests write a config whose
    label names differ from the task's; ``manifest=False`` leaves
    dynadesk-model.json out (as a user's folder would); ``pickle_weights``
    saves ``pytorch_model.bin`` instead of safetensors.
    """
    import torch
    from transformers import BertForSequenceClassification

    path = Path(path)
    make_tiny_tokenizer(path)
    torch.manual_seed(seed)
    config = _config(id2label=id2label or dict(enumerate(labels)))
    model = BertForSequenceClassification(config).eval()
    _save(model, path, pickle_weights)
    if manifest:
        write_manifest(path, {"task": task, "kind": "hf-sequence-classification", "labels": list(labels),
                              "inputs": list(inputs or TASK_INPUTS.get(task, ["statement"])),
                              "max_length": max_length})
    return path


def make_tiny_qa(path: Path, task: str = "qa", *, seed: int = 0, manifest: bool = True,
                 pickle_weights: bool = False, max_length: int = 64) -> Path:
    """A random ``BertForQuestionAnswering`` folder (inputs ``context`` and ``question``).

    ``max_length`` is small so that a long context exercises the windowing.
    """
    import torch
    from transformers import BertForQuestionAnswering

    path = Path(path)
    make_tiny_tokenizer(path)
    torch.manual_seed(seed)
    model = BertForQuestionAnswering(_config()).eval()
    _save(model, path, pickle_weights)
    if manifest:
        write_manifest(path, {"task": task, "kind": "hf-question-answering", "inputs": ["context", "question"],
                              "max_length": max_length})
    return path


def make_tiny_causal_tokenizer(path: Path):
    """The tiny WordPiece vocabulary as a causal LM's fast tokenizer: ``[CLS]`` is its BOS, prepended as Llama's
    tokenizers prepend theirs, ``[SEP]`` its EOS, never appended."""
    from tokenizers.processors import TemplateProcessing
    from transformers import AutoTokenizer, PreTrainedTokenizerFast

    path = Path(path)
    path.mkdir(parents=True, exist_ok=True)
    make_tiny_tokenizer(path / ".vocab")
    backend = AutoTokenizer.from_pretrained(str(path / ".vocab")).backend_tokenizer
    backend.post_processor = TemplateProcessing(single="[CLS] $A", pair="[CLS] $A $B",
                                                special_tokens=[("[CLS]", tiny_vocab()["[CLS]"])])
    tok = PreTrainedTokenizerFast(tokenizer_object=backend, bos_token="[CLS]", eos_token="[SEP]", pad_token="[PAD]",
                                  unk_token="[UNK]", model_max_length=128)
    tok.save_pretrained(str(path))
    shutil.rmtree(path / ".vocab")
    return tok


def make_tiny_generative(path: Path, arch: str, task: str, *, labels: Sequence[str] | None = None,
                         inputs: Sequence[str] | None = None, seed: int = 0, manifest: bool = True,
                         prompt: dict | None = None) -> Path:
    """A random ``GPT2LMHeadModel`` (``arch="causal"``) or ``T5ForConditionalGeneration`` (``"seq2seq"``) folder
    with the tiny WordPiece tokenizer; ``labels`` makes its manifest a label task's, else a span task's."""
    import torch
    from transformers import GPT2Config, GPT2LMHeadModel, T5Config, T5ForConditionalGeneration

    from dynadesk.evaluator import prompts

    path = Path(path)
    if arch == "causal":
        make_tiny_causal_tokenizer(path)
    else:
        make_tiny_tokenizer(path)
    torch.manual_seed(seed)
    vocab, sep = len(tiny_vocab()), tiny_vocab()["[SEP]"]
    if arch == "causal":
        model = GPT2LMHeadModel(GPT2Config(vocab_size=vocab, n_embd=32, n_layer=2, n_head=2, n_positions=128,
                                           bos_token_id=sep, eos_token_id=sep)).eval()
    else:
        model = T5ForConditionalGeneration(T5Config(vocab_size=vocab, d_model=32, d_ff=64, d_kv=16, num_layers=2,
                                                    num_heads=2, decoder_start_token_id=0, pad_token_id=0,
                                                    eos_token_id=sep)).eval()
    model.save_pretrained(str(path))
    if manifest:
        inputs = list(inputs or TASK_INPUTS.get(task, ["statement"]))
        body = {"task": task, "kind": "hf-causal-lm" if arch == "causal" else "hf-seq2seq-lm", "inputs": inputs,
                "prompt": prompt or prompts.default_prompt(inputs, labels),
                "generation": {**prompts.default_generation(), "max_new_tokens": 6}}
        if labels:
            body["labels"] = list(labels)
        else:
            body["context_field"] = "context"
        write_manifest(path, body)
    return path
