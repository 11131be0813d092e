"""Generative language models by prompt: transformers causal-LM and seq2seq folders.

Label tasks use the multiple-choice method of lm-evaluation-harness (``loglikelihood``): every label's
verbaliser is scored by its summed token log-likelihood after the prompt, the prediction is the best label
(ties: the label listed first) and the probabilities are the softmax over the scores, so robustness,
fairness and intervals treat the model as a classifier. Span tasks generate greedily; the continuation up
to the first stop string, stripped, is the answer the task's metric scores.

Tokenization follows lm-evaluation-harness's ``hf`` backend so the log-likelihoods agree with it to float
noise: a causal prompt is encoded without special tokens, trailing whitespace of the prompt moves to the
continuation, and the continuation's tokens are those of ``prompt + verbaliser`` after the prompt's.

Batching: scoring pads on the right, generation on the left. Prompt reuse: a causal row is
``prompt + verbaliser[:-1]``, so labels whose verbalisers are one token share one row and the prompt is
computed once for all of them (the common case: " yes"/" no"); a seq2seq model runs its encoder once per
prompt and the decoder once per label. Multi-token verbalisers of a causal model each get their own row:
a shared prefix cache would have to be expanded per label and re-padded (left padding, explicit
positions), which costs more copies than it saves at the prompt lengths of classification tasks.

Registered into :mod:`dynadesk.evaluator.adapters` through its ``register_kind`` hook (imported at its end).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from dynadesk.evaluator import prompts
from dynadesk.evaluator.adapters import AdapterError, _load_hf, _texts, register_kind

CAUSAL = "hf-causal-lm"
SEQ2SEQ = "hf-seq2seq-lm"
SCORE_BATCH_ROWS = 32
DEFAULT_MAX_LENGTH = 1024


class GenerationStats:
    """Tokens generated and the seconds to the first token, summed over an adapter's generation batches."""

    def __init__(self) -> None:
        self.tokens = 0
        self.seconds = 0.0
        self.first_token_seconds: list[float] = []


class _GenerativeBase:
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
        scores = self.loglikelihoods([(t, str(verb[lab])) for t in texts for lab in self.labels])
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

    def loglikelihoods(self, requests: list[tuple[str, str]]) -> list[float]:
        raise NotImplementedError

    def generate(self, texts: list[str]) -> list[tuple[str, float]]:
        raise NotImplementedError

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
        """Greedy generation; also one-token generation first for the time to the first token."""
        import time

        import torch

        kwargs = {"do_sample": False, "num_beams": 1, "pad_token_id": self.tokenizer.pad_token_id,
                  "return_dict_in_generate": True, "output_scores": True}
        with torch.inference_mode():
            t0 = time.perf_counter()
            self.model.generate(**feed, max_new_tokens=1, **kwargs)
            t_first = time.perf_counter() - t0
            t0 = time.perf_counter()
            res = self.model.generate(**feed, max_new_tokens=int(self.generation["max_new_tokens"]), **kwargs)
            t_all = time.perf_counter() - t0
            transition = self.model.compute_transition_scores(res.sequences, res.scores, normalize_logits=True)
        return res.sequences, transition, t_first, t_all


class CausalLMAdapter(_GenerativeBase):
    """A transformers ``AutoModelForCausalLM`` folder (GPT-2, Llama, ...), asked by prompt."""

    kind = CAUSAL
    auto_class = "AutoModelForCausalLM"

    def encode_pair(self, context: str, continuation: str) -> tuple[list[int], list[int]]:
        """lm-evaluation-harness's split: trailing prompt whitespace joins the continuation, whose tokens are
        those of the whole text after the prompt's (so a merge across the boundary is scored as one token)."""
        n_spaces = len(context) - len(context.rstrip())
        if n_spaces:
            continuation = context[-n_spaces:] + continuation
            context = context[:-n_spaces]
        whole = self.tokenizer(context + continuation, add_special_tokens=False)["input_ids"]
        ctx = self.tokenizer(context, add_special_tokens=False)["input_ids"]
        return list(ctx), list(whole[len(ctx):])

    def loglikelihoods(self, requests: list[tuple[str, str]]) -> list[float]:
        """Summed log-probability of each continuation after its context."""
        import torch

        rows: dict[tuple[int, ...], list[tuple[int, list[int]]]] = {}
        for r, (context, continuation) in enumerate(requests):
            ctx, cont = self.encode_pair(context, continuation)
            if not cont:
                raise AdapterError(f"verbaliser {continuation!r} encodes to no tokens after the prompt")
            whole = (ctx + cont)[-(self.max_length + 1):]
            rows.setdefault(tuple(whole[:-1]), []).append((r, cont))
        order = sorted(rows, key=lambda k: (-len(k), k))
        scores = [0.0] * len(requests)
        pad = int(self.tokenizer.pad_token_id)
        for b in range(0, len(order), SCORE_BATCH_ROWS):
            keys = order[b:b + SCORE_BATCH_ROWS]
            width = len(keys[0])
            ids = torch.tensor([list(k) + [pad] * (width - len(k)) for k in keys], device=self.device)
            mask = torch.tensor([[1] * len(k) + [0] * (width - len(k)) for k in keys], device=self.device)
            with torch.inference_mode():
                logits = self.model(input_ids=ids, attention_mask=mask).logits
            for i, key in enumerate(keys):
                for r, cont in rows[key]:
                    n = len(cont)
                    logp = torch.log_softmax(logits[i, len(key) - n:len(key)].double(), dim=-1)
                    target = torch.tensor(cont, device=logp.device).unsqueeze(-1)
                    scores[r] = float(logp.gather(-1, target).sum())
        return scores

    def generate(self, texts: list[str]) -> list[tuple[str, float]]:
        budget = max(1, self.max_length - int(self.generation["max_new_tokens"]))
        self.tokenizer.padding_side = "left"
        self.tokenizer.truncation_side = "left"
        enc = self.tokenizer(texts, add_special_tokens=False, padding=True, truncation=True, max_length=budget,
                             return_tensors="pt")
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
