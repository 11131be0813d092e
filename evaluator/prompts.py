"""Prompts for generative models: a template per task and model, k-shot examples, verbalisers, the chat template.

A generative model (``hf-causal-lm``, ``hf-seq2seq-lm``) is asked by prompt. Everything that decides the
prompt lives in the model's manifest under ``"prompt"`` (and the generation settings under
``"generation"``), and the manifest is a file of the model folder: the registry's tree digest covers it,
the run spec carries it, the bundle is signed over the spec, so an audit renders the same prompt bytes
and re-runs them bit for bit. Nothing here is random at prediction time: the shots are drawn once, at
registration, with a recorded seed (:func:`draw_shots`), and written into the manifest.

Standard library only (it runs inside the evaluation container too).
"""

from __future__ import annotations

import random
import string
from collections.abc import Mapping, Sequence
from typing import Any

DEFAULT_SEPARATOR = "\n\n"
DEFAULT_MAX_NEW_TOKENS = 32
DEFAULT_STOP = ("\n",)
MAX_SHOTS = 64


def default_template(inputs: Sequence[str]) -> str:
    """``Field: {field}`` per input, then ``Answer:``: the plain question-answer format of lm-evaluation-harness."""
    return "\n".join(f"{name.replace('_', ' ').capitalize()}: {{{name}}}" for name in inputs) + "\nAnswer:"


def default_prompt(inputs: Sequence[str], labels: Sequence[str] | None) -> dict[str, Any]:
    """The manifest's ``prompt`` for a folder registered without one (zero-shot, no chat template)."""
    prompt: dict[str, Any] = {"template": default_template(inputs), "shots": [], "separator": DEFAULT_SEPARATOR,
                              "chat_template": False}
    if labels:
        prompt["verbalisers"] = {label: f" {label}" for label in labels}
    return prompt


def default_generation() -> dict[str, Any]:
    """Greedy decoding; the answer ends at the first stop string (a newline) or ``max_new_tokens``."""
    return {"max_new_tokens": DEFAULT_MAX_NEW_TOKENS, "stop": list(DEFAULT_STOP), "do_sample": False}


def answer_tokens_bound(manifest: object) -> int | None:
    """The most tokens one answer can have: a generative model's manifest's ``max_new_tokens``, the default
    else; None for a model that does not generate (no ``prompt``). The host bounds the worker's tokens/s and
    first-token time by it (``dynadesk.orchestration.bounds``)."""
    if not isinstance(manifest, dict) or "prompt" not in manifest:
        return None
    generation = manifest.get("generation")
    given = generation.get("max_new_tokens") if isinstance(generation, dict) else None
    return given if isinstance(given, int) and not isinstance(given, bool) and given > 0 else DEFAULT_MAX_NEW_TOKENS


def template_fields(template: str) -> list[str]:
    """The ``{field}`` names a template uses; ``ValueError`` for a malformed one (``{0}``, ``{a.b}``, ``{``)."""
    names = []
    for _, name, spec, conv in string.Formatter().parse(template):
        if name is None:
            continue
        if not name.isidentifier() or spec or conv:
            raise ValueError(f"placeholder {{{name}}} must be a plain input field name")
        names.append(name)
    return names


def check_prompt(manifest: Mapping[str, Any]) -> list[str]:
    """What is wrong with a generative manifest's ``prompt`` and ``generation`` (empty: nothing)."""
    problems: list[str] = []
    raw_inputs = manifest.get("inputs")
    inputs: list[Any] = raw_inputs if isinstance(raw_inputs, list) else []
    prompt = manifest.get("prompt")
    if not isinstance(prompt, dict):
        return ["'prompt' must be an object with a 'template' (see docs/models.md)"]
    template = prompt.get("template")
    if not isinstance(template, str) or not template.strip():
        problems.append("'prompt.template' must be a non-empty string with {input} placeholders")
    else:
        try:
            unknown = [f for f in template_fields(template) if f not in inputs]
        except ValueError as exc:
            problems.append(f"'prompt.template': {exc}")
        else:
            if unknown:
                problems.append(f"'prompt.template' names {unknown}, which are not among 'inputs' {inputs}")
    labels = manifest.get("labels")
    if labels is not None:
        verb = prompt.get("verbalisers")
        if not isinstance(verb, dict) or sorted(verb) != sorted(labels) or not all(
                isinstance(v, str) and v.strip() for v in verb.values()):
            problems.append("'prompt.verbalisers' must map every label to the non-empty text scored after the prompt")
        elif len(set(verb.values())) != len(verb):
            problems.append("'prompt.verbalisers' gives two labels the same text")
    shots = prompt.get("shots", [])
    if not isinstance(shots, list) or len(shots) > MAX_SHOTS or not all(
            isinstance(s, dict) and isinstance(s.get("target"), str)
            and all(isinstance(s.get(f), str) for f in inputs) for s in shots):
        problems.append(f"'prompt.shots' must be a list (at most {MAX_SHOTS}) of objects with every input and a "
                        "'target' string")
    if not isinstance(prompt.get("separator", DEFAULT_SEPARATOR), str):
        problems.append("'prompt.separator' must be a string")
    if not isinstance(prompt.get("chat_template", False), bool):
        problems.append("'prompt.chat_template' must be true or false")
    gen = manifest.get("generation", default_generation())
    if not isinstance(gen, dict):
        problems.append("'generation' must be an object")
    else:
        n = gen.get("max_new_tokens", DEFAULT_MAX_NEW_TOKENS)
        if not isinstance(n, int) or isinstance(n, bool) or not 1 <= n <= 1024:
            problems.append("'generation.max_new_tokens' must be an integer in 1..1024")
        stop = gen.get("stop", list(DEFAULT_STOP))
        if not isinstance(stop, list) or not all(isinstance(s, str) and s for s in stop):
            problems.append("'generation.stop' must be a list of non-empty strings")
        if gen.get("do_sample", False) is not False:
            problems.append("'generation.do_sample' must be false: only greedy decoding re-runs bit for bit")
    return problems


def render(prompt: Mapping[str, Any], example: Mapping[str, str]) -> str:
    """The prompt text for one example: each shot (template + target) then the example's template."""
    template = str(prompt["template"])
    parts = [template.format_map(dict(shot)) + str(shot["target"]) for shot in prompt.get("shots", [])]
    parts.append(template.format_map(dict(example)))
    return str(prompt.get("separator", DEFAULT_SEPARATOR)).join(parts)


def apply_chat(tokenizer: Any, prompt: Mapping[str, Any], text: str) -> str:
    """``text`` as the user turn of the tokenizer's chat template, when the manifest asks for it and one exists."""
    if not prompt.get("chat_template") or not getattr(tokenizer, "chat_template", None):
        return text
    return str(tokenizer.apply_chat_template([{"role": "user", "content": text}], tokenize=False,
                                             add_generation_prompt=True))


def cut_answer(text: str, stop: Sequence[str]) -> str:
    """A generated continuation up to its first stop string, stripped: the answer a span metric scores."""
    end = len(text)
    for s in stop:
        i = text.find(s)
        if i >= 0:
            end = min(end, i)
    return text[:end].strip()


def draw_shots(rows: Sequence[Mapping[str, Any]], k: int, seed: int, inputs: Sequence[str],
               target_of: Any) -> list[dict[str, str]]:
    """``k`` shots drawn from ``rows`` (a named split) with ``random.Random(seed)``, in drawn order.

    ``target_of(row)`` is the text after the template (a label's verbaliser, a span's first answer). The
    same rows, ``k`` and seed give the same shots on every machine and Python version (``Random.sample``
    over indices is stable), and the manifest records both the seed and the shots themselves.
    """
    if not 0 <= k <= min(MAX_SHOTS, len(rows)):
        raise ValueError(f"cannot draw {k} shots from {len(rows)} examples (at most {MAX_SHOTS})")
    picked = random.Random(seed).sample(range(len(rows)), k)
    return [{**{f: str(rows[i][f]) for f in inputs}, "target": str(target_of(rows[i]))} for i in picked]
