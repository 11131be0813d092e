"""The host's order of a test set in the model's own tokens, for the timed windows (issue 50 item 2).

A transformers classifier's prediction pass sorts a set by token count and cuts it into batches, so each batch
pads little. The host's timed windows ordered the set by characters: their batches held inputs whose token
counts differed more, padded more, and the stored batched figure read 0.8x the pass on a loaded machine
(MiniLM, 256 texts, busy loops on both cores), the padding the pass does not pay. For the kinds whose pass sorts
by the tokenizer in the model's folder (:data:`TOKENIZED_KINDS`), the host counts the same tokens with that
file, so its batches are the pass's own.

The counting is the model's: the order follows the lengths its code is fed, and the model cannot reorder the
set beyond what its own tokenizer does to its own inputs (the pass pays for the same lengths). The file comes
from the submitter, so it is read in a child process with a time and memory bound (a pattern that backtracks,
a file of gigabytes): anything wrong there, and the host orders by characters as before, saying why.
"""

from __future__ import annotations

import json
import os
import stat
import subprocess
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any, NamedTuple

from dynadesk.orchestration.loadgen_fresh import host_order, read_examples

if TYPE_CHECKING:
    from dynadesk.evaluator.schema import Spec

TOKENIZED_KINDS = ("hf-sequence-classification", "onnx-sequence-classification")
"""Kinds whose adapter tokenizes with the folder's ``tokenizer.json`` and whose pass sorts by token count."""

TOKENIZER_FILE = "tokenizer.json"
MAX_TOKENIZER_BYTES = 64 << 20  # a real one is 0.5-20 MB
TIMEOUT_S = 60.0
MEMORY_BYTES = 4 << 30  # the child's address space
DEFAULT_MAX_LENGTH = 256  # the classifier adapters' (evaluator/adapters.py), when the manifest names none


class SetOrder(NamedTuple):
    """A test set as the host's windows take it."""

    examples: list[dict[str, Any]]
    order: list[int]  # example indices by length (:func:`host_order`)
    how: str  # ``"tokens"``, or ``"characters: <why>"``
    tokens: list[int] | None  # each example's token count where ``how`` is tokens (what a batch pads to)


def order_test_sets(spec: Spec, data_dir: Path, model_dir: Path | None, inputs: list[str]) -> dict[str, SetOrder]:
    """Each test set's :class:`SetOrder`; a set the host cannot read is left out (the load generator reports it
    when it reads the set itself)."""
    manifest = spec.model.get("manifest") or {}
    manifest = manifest if isinstance(manifest, dict) else {}
    given = manifest.get("inputs")
    fields = [str(f) for f in given] if isinstance(given, list) and given else inputs
    read: dict[str, list[dict[str, Any]]] = {}
    for ds in spec.datasets:
        if ds.role != "test":
            continue
        try:
            read[ds.name] = read_examples(Path(data_dir) / ds.file)
        except (OSError, ValueError):
            continue
    columns = [[[str(ex.get(f, "")) for ex in examples] for f in fields] for examples in read.values()]
    counted = sets_token_lengths(model_dir, manifest, columns)
    return {name: SetOrder(examples, host_order(examples, inputs, tokens), how, tokens)
            for (name, examples), (tokens, how) in zip(read.items(), counted)}


def token_lengths(model_dir: Path | None, manifest: dict[str, Any],
                  columns: Sequence[Sequence[str]]) -> tuple[list[int] | None, str]:
    """Each example's token count as the model's pass counts it (truncated, special tokens added), and how the
    order was made: ``(lengths, "tokens")``, or ``(None, "characters: <why>")`` to order by characters.

    ``columns``: one list of texts per input field (one or two fields, the adapter's text and pair)."""
    return sets_token_lengths(model_dir, manifest, [columns])[0]


def sets_token_lengths(model_dir: Path | None, manifest: dict[str, Any],
                       sets: Sequence[Sequence[Sequence[str]]]) -> list[tuple[list[int] | None, str]]:
    """:func:`token_lengths` of each of a run's test sets (``sets``: each set's columns), counted in one child.

    One child per run, not one per set: each cost ~0.25 s of start-up and tokenizer loading, so the demo's 4 sets
    took 1.14-1.22 s before its worker started, one child 0.33-0.38 s. The file and its bounds are the same for
    every set; a child past its time or memory leaves every set by characters (one per set had paid the 60 s
    limit once a set), a set the tokenizer fails on leaves that set alone."""
    if not sets:
        return []
    why = _cannot_count(model_dir, manifest, sets)
    if why:
        return [(None, why)] * len(sets)
    assert model_dir is not None
    request = {"tokenizer": str(Path(model_dir) / TOKENIZER_FILE), "max_length": max_length(model_dir, manifest),
               "sets": [[list(c) for c in columns] for columns in sets]}
    try:
        done = subprocess.run([sys.executable, "-m", "dynadesk.orchestration.token_order"], input=json.dumps(request),
                              capture_output=True, text=True, timeout=TIMEOUT_S, check=False)
    except subprocess.TimeoutExpired:
        return [(None, f"characters: counting the tokens took over {TIMEOUT_S:g} s")] * len(sets)
    except OSError as exc:
        return [(None, f"characters: cannot count the tokens ({exc})")] * len(sets)
    try:
        answer = json.loads(done.stdout) if done.returncode == 0 else None
    except ValueError:
        answer = None
    failed = (done.stderr.strip().splitlines() or ["no answer"])[-1][:200]
    answers = answer if isinstance(answer, list) and len(answer) == len(sets) else [failed] * len(sets)
    return [(lengths, "tokens") if _lengths_of(lengths, len(columns[0])) else
            (None, f"characters: cannot count the tokens with {TOKENIZER_FILE} "
                   f"({' '.join(str(lengths).split())[:200] if isinstance(lengths, str) else 'no answer'})")
            for lengths, columns in zip(answers, sets)]


def _lengths_of(lengths: Any, n: int) -> bool:
    """The child's answer for a set of ``n`` examples is ``n`` integer counts."""
    return isinstance(lengths, list) and len(lengths) == n and all(type(x) is int for x in lengths)


def _cannot_count(model_dir: Path | None, manifest: dict[str, Any],
                  sets: Sequence[Sequence[Sequence[str]]]) -> str | None:
    """Why the host orders by characters before asking a child (the kind, the fields, the file), else None."""
    if model_dir is None or manifest.get("kind") not in TOKENIZED_KINDS:
        return "characters: the model's pass does not sort by a tokenizer the host can read"
    fields = {len(columns) for columns in sets}
    if not fields <= {1, 2}:
        return f"characters: {max(fields)} input fields (a classifier takes one or two)"
    try:
        info = os.lstat(Path(model_dir) / TOKENIZER_FILE)
    except OSError:
        return f"characters: no {TOKENIZER_FILE} in the model's folder"
    if not stat.S_ISREG(info.st_mode) or info.st_size > MAX_TOKENIZER_BYTES:
        return f"characters: {TOKENIZER_FILE} is not a regular file of at most {MAX_TOKENIZER_BYTES >> 20} MiB"
    return None


def max_length(model_dir: Path, manifest: dict[str, Any]) -> int:
    """The adapter's truncation length: the manifest's ``max_length`` (else the default), capped by the
    tokenizer's ``model_max_length`` (``tokenizer_config.json``), as ``adapter_base._max_length``."""
    given = manifest.get("max_length")
    limit = given if type(given) is int and given > 0 else DEFAULT_MAX_LENGTH
    try:
        config = json.loads((Path(model_dir) / "tokenizer_config.json").read_text(encoding="utf-8"))
    except (OSError, ValueError):
        config = {}
    model_max = config.get("model_max_length") if isinstance(config, dict) else None
    if type(model_max) is int and 0 < model_max < limit:
        limit = model_max
    return limit


def _count() -> None:
    """The child: a request on stdin, the lengths on stdout; bounded in memory before the file is read."""
    import resource

    resource.setrlimit(resource.RLIMIT_AS, (MEMORY_BYTES, MEMORY_BYTES))
    request = json.loads(sys.stdin.read())
    from tokenizers import Tokenizer

    tokenizer = Tokenizer.from_file(request["tokenizer"])
    tokenizer.no_padding()
    tokenizer.enable_truncation(int(request["max_length"]))
    counts: list[list[int] | str] = []
    for columns in request["sets"]:  # a set the tokenizer fails on (it panics on a pattern that backtracks) alone
        inputs = list(zip(*columns)) if len(columns) == 2 else list(columns[0])
        try:
            counts.append([len(e.ids) for e in tokenizer.encode_batch(inputs, add_special_tokens=True)])
        except BaseException as exc:  # noqa: BLE001  # the Rust panic is a BaseException; the set is reported
            counts.append(f"{type(exc).__name__}: {exc}")
    print(json.dumps(counts))


if __name__ == "__main__":
    _count()
