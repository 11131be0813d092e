"""Generative language models by prompt: transformers causal-LM and seq2seq folders.

Label tasks use the multiple-choice method of lm-evaluation-harness (``loglikelihood``): every label's
verbaliser is scored by its summed token log-likelihood after the prompt, the prediction is the best label
(ties: the label listed first) and the probabilities are the softmax over the scores, so robustness,
fairness and intervals treat the model as a classifier. Span tasks generate greedily; the continuation up
to the first stop string, stripped, is the answer the task's metric scores.

Tokenization follows lm-evaluation-harness's ``hf`` backend so the log-likelihoods agree with it to float
noise: a causal prompt is encoded with the tokenizer's own special tokens (a BOS) unless it starts with
the BOS text, trailing whitespace of the prompt moves to the continuation, and the continuation's tokens
are those of ``prompt + verbaliser`` after the prompt's.

Batching: scoring pads on the right, generation on the left. Prompt reuse: a causal row is
``prompt + verbaliser[:-1]``, so labels whose verbalisers are one token share one row and the prompt is
computed once for all of them (" yes"/" no"); with multi-token verbalisers after a long prompt (k-shot)
the prompt runs once and its KV cache, repeated per label, serves every label's continuation
(:meth:`CausalLMAdapter.label_scores`, :data:`CACHE_MIN_PROMPT_TOKENS`);
a seq2seq model runs its encoder once per prompt and the decoder once per label.

Registered into :mod:`dynadesk.evaluator.adapters` through its ``register_kind`` hook when the package is
imported (``dynadesk/evaluator/__init__.py``).
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from pathlib import Path
from typing import Any

from dynadesk.evaluator import prompts
from dynadesk.evaluator.adapter_base import AdapterError, _load_hf, _texts
from dynadesk.evaluator.adapters import register_kind
from dynadesk.evaluator.packed_scores import PackedScorer

CAUSAL = "hf-causal-lm"
SEQ2SEQ = "hf-seq2seq-lm"
SCORE_BATCH_ROWS = 32
DEFAULT_MAX_LENGTH = 1024
# The shared prompt cache pays only for long prompts (k-shot): at classification lengths (10-100 tokens, CPU)
# a row per label ran 1.25x faster than the cache (bench/bench_generative.py's model, paired), because the
# rows take the mask-free causal attention path and the cache's continuation pass needs a padding mask. Below it,
# every label's continuation goes in one row after its prompt (evaluator/packed_scores.py): 2x the rows there.
CACHE_MIN_PROMPT_TOKENS = 256


class GenerationStats:
    """Tokens generated, seconds spent generating and each call's seconds to its first token: what the timed
    windows read for ``tokens_per_second`` and ``time_to_first_token_ms`` (evaluator/timing.py)."""

    def __init__(self) -> None:
        self.reset()

    def reset(self) -> None:
        self.tokens = 0
        self.seconds = 0.0
        self.first_token_seconds: list[float] = []


class _GenerativeBase(ABC):
    """What a causal and a seq2seq model share: the manifest's prompt, labels, generation settings."""

    kind = ""
    auto_class = ""

    def __init__(self, model_dir: Path, manifest: dict[str, Any], device: str = "cpu", allow_pickle: bool = False):
        self.inputs = list(manifest["inputs"])
        self.labels: list[str] | None = list(manifest["labels"]) if manifest.get("labels") else None
        self.prompt = dict(manifest["prompt"])
        self.generation = {**prompts.default_generation(), **dict(manifest.get("generation") or {})}
        self.context_field = manifest.get("context_field")
        self.device = device
        self.tokenizer, self.model = _load_hf(model_dir, self.auto_class, device, allow_pickle)
        if self.tokenizer.pad_token_id is None:
            self.tokenizer.pad_token = self.tokenizer.eos_token or self.tokenizer.unk_token
        config = self.model.config
        limit = manifest.get("max_length") or getattr(config, "n_positions", None) or getattr(
            config, "max_position_embeddings", None) or DEFAULT_MAX_LENGTH
        self.max_length = int(limit)
        self.stats = GenerationStats()

    def prompt_text(self, example: dict[str, str]) -> str:
        return prompts.apply_chat(self.tokenizer, self.prompt, prompts.render(self.prompt, example))

    def predict(self, batch: list[dict[str, str]]) -> list[dict[str, Any]]:
        if not batch:
            return []
        cols = _texts(batch, self.inputs)
        examples = [{f: cols[j][i] for j, f in enumerate(self.inputs)} for i in range(len(batch))]
        texts = [self.prompt_text(ex) for ex in examples]
        if self.labels is not None:
            return self._classify(texts)
        answers = self.generate(texts)
        out = []
        for ex, (answer, score) in zip(examples, answers):
            context = ex.get(str(self.context_field), "")
            start = context.find(answer) if answer else -1
            out.append({"answer": answer, "start": start, "end": start + len(answer) if start >= 0 else -1,
                        "score": score})
        return out

    def _classify(self, texts: list[str]) -> list[dict[str, Any]]:
        import math

        assert self.labels is not None
        verb = self.prompt["verbalisers"]
        scores = self.label_scores(texts, [str(verb[lab]) for lab in self.labels])
        out = []
        n = len(self.labels)
        for i in range(len(texts)):
            row = scores[i * n:(i + 1) * n]
            top = max(row)
            exps = [math.exp(s - top) for s in row]
            total = sum(exps)
            best = max(range(n), key=lambda j: (row[j], -j))
            out.append({"label": self.labels[best], "probs": {lab: e / total for lab, e in zip(self.labels, exps)},
                        "loglikelihoods": dict(zip(self.labels, row))})
        return out

    def label_scores(self, texts: list[str], verbs: list[str]) -> list[float]:
        """Each text's verbaliser log-likelihoods, text by text (flat: text-major)."""
        return self.loglikelihoods([(t, v) for t in texts for v in verbs])

    @abstractmethod
    def loglikelihoods(self, requests: list[tuple[str, str]]) -> list[float]:
        """Each (prompt, continuation)'s summed log-likelihood: the causal and the seq2seq model score differently."""

    @abstractmethod
    def generate(self, texts: list[str]) -> list[tuple[str, float]]:
        """Greedy answers with their scores, each model its own way (left padding; encoder once)."""

    def _finish_generation(self, new_tokens: Any, transition: Any, t_first: float, t_all: float) -> list[
            tuple[str, float]]:
        """Decode generated tokens (pads dropped), cut at the stop strings; score = mean token probability."""
        import math

        pad = self.tokenizer.pad_token_id
        eos = self.tokenizer.eos_token_id
        out = []
        for row, logp in zip(new_tokens.tolist(), transition.tolist()):
            keep = [k for k, tok in enumerate(row) if tok != pad and tok != eos]
            self.stats.tokens += len(keep)
            text = self.tokenizer.decode([row[k] for k in keep], skip_special_tokens=True)
            mean = sum(logp[k] for k in keep) / len(keep) if keep else float("-inf")
            out.append((prompts.cut_answer(text, self.generation["stop"]), math.exp(mean) if keep else 0.0))
        self.stats.seconds += t_all
        self.stats.first_token_seconds.append(t_first)
        return out

    def _generate_timed(self, feed: dict[str, Any]) -> tuple[Any, Any, float, float]:
        """Greedy generation, timed: the whole call, and to the first token (when the first step's logits exist,
        seen by a logits processor inside the same call: no second generation)."""
        import time

        import torch
        from transformers import LogitsProcessor, LogitsProcessorList

        first: list[float] = []

        class FirstToken(LogitsProcessor):  # type: ignore[misc]  # transformers is not analysed (pyproject.toml)
            def __call__(self, input_ids: Any, scores: Any) -> Any:
                if not first:
                    first.append(time.perf_counter())
                return scores

        with torch.inference_mode():
            t0 = time.perf_counter()
            res = self.model.generate(**feed, max_new_tokens=int(self.generation["max_new_tokens"]), do_sample=False,
                                      num_beams=1, pad_token_id=self.tokenizer.pad_token_id,
                                      return_dict_in_generate=True, output_scores=True,
                                      logits_processor=LogitsProcessorList([FirstToken()]))
            t_all = time.perf_counter() - t0
            transition = self.model.compute_transition_scores(res.sequences, res.scores, normalize_logits=True)
        return res.sequences, transition, (first[0] if first else t0 + t_all) - t0, t_all


class CausalLMAdapter(_GenerativeBase):
    """A transformers ``AutoModelForCausalLM`` folder (GPT-2, Llama, ...), asked by prompt."""

    kind = CAUSAL
    auto_class = "AutoModelForCausalLM"
    cache_min_prompt = CACHE_MIN_PROMPT_TOKENS

    def encode_pair(self, context: str, continuation: str) -> tuple[list[int], list[int]]:
        """lm-evaluation-harness's split: trailing prompt whitespace joins the continuation, whose tokens are
        those of the whole text after the prompt's (so a merge across the boundary is scored as one token)."""
        context, continuation = _move_spaces(context, continuation)
        special = self.special_tokens(context)
        whole = self.tokenizer(context + continuation, add_special_tokens=special)["input_ids"]
        ctx = self.tokenizer(context, add_special_tokens=special)["input_ids"]
        return list(ctx), list(whole[len(ctx):])

    def encode_pairs(self, requests: list[tuple[str, str]]) -> list[tuple[list[int], list[int]]]:
        """:meth:`encode_pair` for many requests, each distinct context encoded once (a label task asks the same
        prompt once per label), the strings of a call in one batch call per special-token setting: the same tokens
        with a third of the context encodings and one tokenizer call instead of one a string (1.4x faster on the
        bench's texts; the worker runs the fast tokenizer without its thread pool, TOKENIZERS_PARALLELISM=false)."""
        moved = [_move_spaces(context, continuation) for context, continuation in requests]
        special = {context: self.special_tokens(context) for context, _ in moved}
        needed = dict.fromkeys((text, special[context]) for context, continuation in moved
                               for text in (context, context + continuation))
        ids: dict[tuple[str, bool], list[int]] = {}
        for flag in (True, False):
            part = [text for text, f in needed if f is flag]
            if part:
                encoded = self.tokenizer(part, add_special_tokens=flag)["input_ids"]
                ids.update(((text, flag), list(x)) for text, x in zip(part, encoded))
        out = []
        for context, continuation in moved:
            ctx = ids[(context, special[context])]
            out.append((ctx, ids[(context + continuation, special[context])][len(ctx):]))
        return out

    def special_tokens(self, text: str) -> bool:
        """The tokenizer's own special tokens (Llama's BOS), unless the text already starts with the BOS text
        (a chat template writes it), as lm-evaluation-harness decides."""
        bos = self.tokenizer.bos_token_id
        if bos is None:
            return True
        if getattr(self, "_bos_text", None) is None:
            self._bos_text = self.tokenizer.decode(bos)
        return not text.startswith(self._bos_text)

    def loglikelihoods(self, requests: list[tuple[str, str]]) -> list[float]:
        """Summed log-probability of each continuation after its context: rows sorted by length, right-padded
        without a mask, the LM head only at the positions scored, every score of a batch gathered at once."""
        return self._score_encoded(self.encode_pairs(requests), requests)

    def _score_encoded(self, encoded: list[tuple[list[int], list[int]]], requests: list[tuple[str, str]]
                       ) -> list[float]:
        """:meth:`loglikelihoods` of requests already encoded (:meth:`label_scores` encodes once for both paths)."""
        import torch

        rows: dict[tuple[int, ...], list[tuple[int, list[int]]]] = {}
        for r, ((ctx, cont), (_, continuation)) in enumerate(zip(encoded, requests)):
            if not cont:
                raise AdapterError(f"verbaliser {continuation!r} encodes to no tokens after the prompt")
            whole = (ctx + cont)[-(self.max_length + 1):]
            rows.setdefault(tuple(whole[:-1]), []).append((r, cont))
        order = sorted(rows, key=lambda k: (-len(k), k))
        scores = torch.zeros(len(requests), dtype=torch.float64)
        pad = int(self.tokenizer.pad_token_id)
        for b in range(0, len(order), SCORE_BATCH_ROWS):
            keys = order[b:b + SCORE_BATCH_ROWS]
            width = len(keys[0])
            ids = torch.tensor([list(k) + [pad] * (width - len(k)) for k in keys], device=self.device)
            at_row: list[int] = []
            at_pos: list[int] = []
            targets: list[int] = []
            owners: list[int] = []
            for i, key in enumerate(keys):
                for r, cont in rows[key]:
                    n = len(cont)
                    at_row += [i] * n
                    at_pos += range(len(key) - n, len(key))
                    targets += cont
                    owners += [r] * n
            keep = sorted(set(at_pos)) if self._keeps_logits() else list(range(width))
            slot = {p: k for k, p in enumerate(keep)}
            extra = {"logits_to_keep": torch.tensor(keep, device=self.device)} if self._keeps_logits() else {}
            with torch.inference_mode():  # no mask: causal attention never looks right, at the padding
                logits = self.model(input_ids=ids, use_cache=False, **extra).logits
                picked = logits[torch.tensor(at_row), torch.tensor([slot[p] for p in at_pos])]
                logp = torch.log_softmax(picked.double(), dim=-1)
                got = logp.gather(-1, torch.tensor(targets, device=logp.device).unsqueeze(-1)).squeeze(-1)
                scores.index_add_(0, torch.tensor(owners), got.cpu())
        return [float(x) for x in scores]

    def _keeps_logits(self) -> bool:
        """Whether the model's forward takes ``logits_to_keep`` (transformers' causal LMs do; a remote-code model
        may not): the LM head then runs at the scored positions only, a vocabulary-wide matmul saved per token."""
        if getattr(self, "_keeps", None) is None:
            import inspect

            self._keeps = "logits_to_keep" in inspect.signature(self.model.forward).parameters
        return bool(self._keeps)

    def label_scores(self, texts: list[str], verbs: list[str]) -> list[float]:
        """Multi-token verbalisers: each prompt runs once and its cache serves every label's continuation."""
        requests = [(t, v) for t in texts for v in verbs]
        flat = self.encode_pairs(requests)
        pairs = [flat[i * len(verbs):(i + 1) * len(verbs)] for i in range(len(texts))]
        if len(verbs) < 2 or all(len(c) <= 1 for p in pairs for _, c in p) or any(
                len(x) + len(c) > self.max_length for p in pairs for x, c in p):
            return self._score_encoded(flat, requests)  # one row per prompt already
        if min(len(p[0][0]) for p in pairs) < self.cache_min_prompt:
            packed = self._packed().scores(pairs, lambda group: self._score_encoded(
                group, [(t, v) for t, v in requests[:len(verbs)]]))  # the row path, for the first check only
            return [x for row in packed for x in row] if packed is not None else self._score_encoded(flat, requests)
        scores = [0.0] * (len(texts) * len(verbs))
        order = sorted(range(len(texts)), key=lambda i: -len(pairs[i][0][0]))
        step = max(1, SCORE_BATCH_ROWS // len(verbs))
        for b in range(0, len(order), step):
            part = order[b:b + step]
            for i, row in zip(part, self._cached_batch([pairs[i] for i in part])):
                scores[i * len(verbs):(i + 1) * len(verbs)] = row
        return scores

    def _packed(self) -> PackedScorer:
        """The packed-row scorer of this model (built once: it remembers whether the model reads its mask)."""
        if getattr(self, "_packer", None) is None:
            self._packer = PackedScorer(self.model, int(self.tokenizer.pad_token_id), SCORE_BATCH_ROWS, self.device)
        return self._packer

    def _cached_batch(self, pairs: list[list[tuple[list[int], list[int]]]]) -> list[list[float]]:
        """Prompts right-padded without a mask (exact, as for rows), then the cache repeated per label and the
        continuations fed after each prompt's true end (explicit positions, the padding masked out)."""
        import torch

        n_labels, pad = len(pairs[0]), int(self.tokenizer.pad_token_id)
        lens = [len(p[0][0]) for p in pairs]
        width = max(lens)
        ids = torch.tensor([p[0][0] + [pad] * (width - len(p[0][0])) for p in pairs], device=self.device)
        conts = [c for p in pairs for _, c in p]
        feed_w = max(len(c) for c in conts) - 1
        with torch.inference_mode():
            out = self.model(input_ids=ids, use_cache=True)
            first = torch.log_softmax(out.logits[torch.arange(len(pairs)), torch.tensor(lens) - 1].double(), dim=-1)
            cache = out.cache  # transformers >= 5: the output's cache, given back as ``cache=``
            cache.batch_repeat_interleave(n_labels)
            feed = torch.tensor([c[:-1] + [pad] * (feed_w - len(c) + 1) for c in conts], device=self.device)
            mask = torch.tensor([[1] * n + [0] * (width - n) + [1] * feed_w for n in lens for _ in range(n_labels)],
                                device=self.device)
            pos = torch.tensor([[n + k for k in range(feed_w)] for n in lens for _ in range(n_labels)],
                               device=self.device)
            logits = self.model(input_ids=feed, attention_mask=mask, position_ids=pos, cache=cache).logits
        out_rows = []
        for e in range(len(pairs)):
            row = []
            for j in range(n_labels):
                r = e * n_labels + j
                cont = conts[r]
                total = float(first[e, cont[0]])
                if len(cont) > 1:
                    logp = torch.log_softmax(logits[r, :len(cont) - 1].double(), dim=-1)
                    total += float(logp.gather(-1, torch.tensor(cont[1:], device=logp.device).unsqueeze(-1)).sum())
                row.append(total)
            out_rows.append(row)
        return out_rows

    def generate(self, texts: list[str]) -> list[tuple[str, float]]:
        budget = max(1, self.max_length - int(self.generation["max_new_tokens"]))
        self.tokenizer.padding_side = "left"
        self.tokenizer.truncation_side = "left"
        enc = self.tokenizer(texts, add_special_tokens=self.special_tokens(texts[0]), padding=True, truncation=True,
                             max_length=budget, return_tensors="pt")
        feed = {k: v.to(self.device) for k, v in enc.items() if k in ("input_ids", "attention_mask")}
        seqs, transition, t_first, t_all = self._generate_timed(feed)
        return self._finish_generation(seqs[:, feed["input_ids"].shape[1]:], transition, t_first, t_all)


class Seq2SeqLMAdapter(_GenerativeBase):
    """A transformers ``AutoModelForSeq2SeqLM`` folder (T5, BART, ...): the prompt is the encoder's input."""

    kind = SEQ2SEQ
    auto_class = "AutoModelForSeq2SeqLM"

    def loglikelihoods(self, requests: list[tuple[str, str]]) -> list[float]:
        """The encoder runs once per distinct prompt; the decoder scores each continuation against it."""
        import torch
        from transformers.modeling_outputs import BaseModelOutput

        requests = [_move_spaces(c, x) for c, x in requests]
        contexts = list(dict.fromkeys(c for c, _ in requests))
        self.tokenizer.padding_side = "right"
        enc = self.tokenizer(contexts, padding=True, truncation=True, max_length=self.max_length,
                             return_tensors="pt").to(self.device)
        conts = [list(self.tokenizer(c, add_special_tokens=False)["input_ids"]) for _, c in requests]
        if not all(conts):
            raise AdapterError("a verbaliser encodes to no tokens")
        which = {c: i for i, c in enumerate(contexts)}
        scores = [0.0] * len(requests)
        with torch.inference_mode():
            hidden = self.model.get_encoder()(input_ids=enc["input_ids"],
                                              attention_mask=enc["attention_mask"]).last_hidden_state
            for b in range(0, len(requests), SCORE_BATCH_ROWS):
                part = range(b, min(len(requests), b + SCORE_BATCH_ROWS))
                idx = torch.tensor([which[requests[r][0]] for r in part], device=self.device)
                width = max(len(conts[r]) for r in part)
                labels = torch.tensor([conts[r] + [-100] * (width - len(conts[r])) for r in part],
                                      device=self.device)
                logits = self.model(encoder_outputs=BaseModelOutput(last_hidden_state=hidden[idx]),
                                    attention_mask=enc["attention_mask"][idx], labels=labels).logits
                logp = torch.log_softmax(logits.double(), dim=-1)
                for i, r in enumerate(part):
                    n = len(conts[r])
                    target = torch.tensor(conts[r], device=logp.device).unsqueeze(-1)
                    scores[r] = float(logp[i, :n].gather(-1, target).sum())
        return scores

    def generate(self, texts: list[str]) -> list[tuple[str, float]]:
        self.tokenizer.padding_side = "right"
        enc = self.tokenizer(texts, padding=True, truncation=True, max_length=self.max_length, return_tensors="pt")
        feed = {k: v.to(self.device) for k, v in enc.items() if k in ("input_ids", "attention_mask")}
        seqs, transition, t_first, t_all = self._generate_timed(feed)
        return self._finish_generation(seqs[:, 1:], transition, t_first, t_all)


def _move_spaces(context: str, continuation: str) -> tuple[str, str]:
    """Trailing whitespace of the prompt belongs to the continuation (lm-evaluation-harness's word boundary)."""
    n_spaces = len(context) - len(context.rstrip())
    return (context[:-n_spaces], context[-n_spaces:] + continuation) if n_spaces else (context, continuation)


def check_generative(manifest: dict[str, Any]) -> list[str]:
    """Manifest problems of a generative kind: its prompt, verbalisers (label tasks) and generation settings."""
    problems = prompts.check_prompt(manifest)
    labels = manifest.get("labels")
    if labels is not None and (not isinstance(labels, list) or len(labels) < 2
                               or not all(isinstance(x, str) for x in labels) or len(set(labels)) != len(labels)):
        problems.insert(0, "'labels' must list two or more distinct task labels (a label task), or be absent "
                           "(a span task)")
    return problems


register_kind(CAUSAL, CausalLMAdapter, check_generative, architectures=("ForCausalLM", "LMHeadModel"))
register_kind(SEQ2SEQ, Seq2SeqLMAdapter, check_generative, architectures=("ForConditionalGeneration",))
