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
    orders = {}
    for ds in spec.datasets:
        if ds.role != "test":
            continue
        try:
            examples = read_examples(Path(data_dir) / ds.file)
        except (OSError, ValueError):
            continue
        tokens, how = token_lengths(model_dir, manifest, [[str(ex.get(f, "")) for ex in examples] for f in fields])
        orders[ds.name] = SetOrder(examples, host_order(examples, inputs, tokens), how, tokens)
    return orders


def token_lengths(model_dir: Path | None, manifest: dict[str, Any],
                  columns: Sequence[Sequence[str]]) -> tuple[list[int] | None, str]:
    """Each example's token count as the model's pass counts it (truncated, special tokens added), and how the
    order was made: ``(lengths, "tokens")``, or ``(None, "characters: <why>")`` to order by characters.

    ``columns``: one list of texts per input field (one or two fields, the adapter's text and pair)."""
    if model_dir is None or manifest.get("kind") not in TOKENIZED_KINDS:
        return None, "characters: the model's pass does not sort by a tokenizer the host can read"
    if not 1 <= len(columns) <= 2:
        return None, f"characters: {len(columns)} input fields (a classifier takes one or two)"
    path = Path(model_dir) / TOKENIZER_FILE
    try:
        info = os.lstat(path)
    except OSError:
        return None, f"characters: no {TOKENIZER_FILE} in the model's folder"
    if not stat.S_ISREG(info.st_mode) or info.st_size > MAX_TOKENIZER_BYTES:
        return None, f"characters: {TOKENIZER_FILE} is not a regular file of at most {MAX_TOKENIZER_BYTES >> 20} MiB"
    request = {"tokenizer": str(path), "max_length": max_length(model_dir, manifest),
               "columns": [list(c) for c in columns]}
    try:
        done = subprocess.run([sys.executable, "-m", "dynadesk.orchestration.token_order"], input=json.dumps(request),
                              capture_output=True, text=True, timeout=TIMEOUT_S, check=False)
    except subprocess.TimeoutExpired:
        return None, f"characters: counting the tokens took over {TIMEOUT_S:g} s"
    except OSError as exc:
        return None, f"characters: cannot count the tokens ({exc})"
    try:
        lengths = json.loads(done.stdout) if done.returncode == 0 else None
    except ValueError:
        lengths = None
    n = len(columns[0])
    if not isinstance(lengths, list) or len(lengths) != n or not all(type(x) is int for x in lengths):
        why = (done.stderr.strip().splitlines() or ["no answer"])[-1][:200]
        return None, f"characters: cannot count the tokens with {TOKENIZER_FILE} ({why})"
    return lengths, "tokens"


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
    columns = request["columns"]
    inputs = list(zip(*columns)) if len(columns) == 2 else list(columns[0])
    encodings = tokenizer.encode_batch(inputs, add_special_tokens=True)
    print(json.dumps([len(e.ids) for e in encodings]))


if __name__ == "__main__":
    _count()
