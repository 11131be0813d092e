"""The host's windows batch a test set as the pass does (issue 50 item 2).

The stored batched figure read 0.8x the prediction pass on a loaded machine (MiniLM, 256 texts): the host cut
its batches from an order by characters and from alternate examples, so each held inputs whose token counts
differed more than a pass batch's, and padded more. Now the host counts the model's own tokens (in a bounded
child process: the tokenizer file is the submitter's) and gives each mode whole batches of that order. Real
tokenizers and the real adapter; the hostile files are real files.
"""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest
from support.eval import LABELS, sentences
from support.tiny_models import make_tiny_classifier

from dynadesk.orchestration import token_order
from dynadesk.orchestration.loadgen_fresh import Fresh, host_order, split_lead, split_modes
from dynadesk.orchestration.token_order import token_lengths


def _texts(n: int) -> list[str]:
    words = sentences(2 * n, 3)
    return [" ".join(words[i:i + 1 + i % 9]) for i in range(0, 2 * n, 2)]


@pytest.fixture(scope="module")
def tiny(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return make_tiny_classifier(tmp_path_factory.mktemp("tok") / "tiny", LABELS, task="sentiment", max_length=24)


def _adapter(folder: Path, inputs: list[str]):
    from dynadesk.evaluator.adapters import load_adapter

    manifest = json.loads((folder / "dynadesk-model.json").read_text())
    adapter = load_adapter(folder, manifest)
    adapter.inputs = inputs
    return adapter, manifest


@pytest.mark.parametrize("fields", [1, 2])
def test_the_host_counts_the_tokens_the_adapter_feeds_the_model(tiny: Path, fields: int) -> None:
    """One and two inputs (a pair), texts past ``max_length`` (truncated as the adapter truncates)."""
    texts = _texts(120) + ["word " * 80]
    columns = [texts, texts[::-1]][:fields]
    adapter, manifest = _adapter(tiny, ["a", "b"][:fields])
    batch = [{k: col[i] for k, col in zip(adapter.inputs, columns)} for i in range(len(texts))]
    want = [len(e["input_ids"]) for e in adapter.encode(batch)]
    got, how = token_lengths(tiny, manifest, columns)
    assert how == "tokens" and got == want
    assert max(want) == 24  # the long one was truncated


def test_each_batched_unit_is_one_of_the_passs_batches(tiny: Path, tmp_path: Path) -> None:
    """The host's order by tokens, halved by whole batches: every unit the batched windows can take is a batch
    the worker's pass predicts (its token sort, cut every batch size); by characters most were not."""
    from dynadesk.evaluator.schema import DatasetSpec, Settings, Spec
    from dynadesk.evaluator.worker import Worker

    texts = _texts(192)  # twelve batches of 16 (a last, lone batch is split by examples: a half-batch unit)
    examples = [{"id": str(i), "statement": t, "label": LABELS[i % 3]} for i, t in enumerate(texts)]
    manifest = json.loads((tiny / "dynadesk-model.json").read_text())
    spec = Spec(task={"inputs": [{"name": "statement"}]}, model={"manifest": manifest},
                datasets=[DatasetSpec("t", "t.jsonl", "", len(examples))], settings=Settings(batch_size=16))
    worker = Worker(spec, tiny, tmp_path, tmp_path, emit_fn=lambda e: None)
    worker.load_model()
    order = worker.batch_order(examples, worker.encoded(examples))
    pass_batches = {tuple(order[i:i + 16]) for i in range(0, len(order), 16)}
    tokens, how = token_lengths(tiny, manifest, [texts])
    assert how == "tokens"
    by_tokens = host_order(examples, ["statement"], tokens)
    _, many = split_modes(by_tokens, 16)
    units = Fresh(many, 16, set()).units()
    assert len(units) >= 6 and all(tuple(u) in pass_batches for u in units)
    _, many = split_modes(host_order(examples, ["statement"]), 16)
    by_chars = Fresh(many, 16, set()).units()
    assert sum(tuple(u) in pass_batches for u in by_chars) < len(by_chars) / 2


def test_the_modes_get_disjoint_whole_batches_in_turn_the_same_every_run() -> None:
    order = list(range(100))[::-1]
    one, many = split_modes(order, 10)
    assert sorted(one + many) == sorted(order) and not set(one) & set(many)
    batches = [order[i:i + 10] for i in range(0, 100, 10)]
    assert many == batches[0] + batches[3] + batches[4] + batches[7] + batches[8]  # ABBA: a trend cancels
    assert split_modes(order, 10) == (one, many)  # a run and its audit time the same batches
    one, many = split_modes(list(range(85)), 10)  # nine batches: the last, lone one split by alternate examples
    assert one[-3:] == [80, 82, 84] and many[-2:] == [81, 83]
    one, many = split_modes([5, 3, 8], 10)  # under eight batches: alternate examples
    assert (one, many) == ([5, 8], [3])
    one, many = split_modes(list(range(48)), 32)  # two batches: each half spans the lengths
    assert (one, many) == (list(range(0, 48, 2)), list(range(1, 48, 2)))
    assert split_modes([7], 10) == ([7], [7])  # one example: both modes share it


def test_a_windows_lead_spans_the_samples_lengths() -> None:
    """A window repeats its lead to last ``min_seconds``: the first half of a length-sorted sample repeated
    its shorter units (a quiet fast model's figure above the pass); every other unit spans the sample."""
    sample = [[1], [2], [3], [4], [5]]
    assert split_lead(sample) == ([[1], [3], [5]], [[2], [4]])
    assert split_lead([[1]]) == ([[1]], [])


def _hostile(folder: Path, tmp_path: Path, change) -> Path:
    bad = tmp_path / "bad"
    bad.mkdir()
    for f in folder.iterdir():
        if f.is_file() and f.name != "tokenizer.json":
            (bad / f.name).write_bytes(f.read_bytes())
    change(bad, json.loads((folder / "tokenizer.json").read_text()))
    return bad


def _backtracking(bad: Path, spec: dict) -> None:
    spec["pre_tokenizer"] = {"type": "Split", "pattern": {"Regex": "(\\w+)+$"}, "behavior": "Isolated",
                             "invert": False}
    (bad / "tokenizer.json").write_text(json.dumps(spec))


def _huge(bad: Path, spec: dict) -> None:
    with open(bad / "tokenizer.json", "wb") as fh:  # sparse: 65 MiB of size, no disk
        fh.truncate(token_order.MAX_TOKENIZER_BYTES + (1 << 20))


def _link(bad: Path, spec: dict) -> None:
    os.symlink("/etc/hostname", bad / "tokenizer.json")


def _garbage(bad: Path, spec: dict) -> None:
    (bad / "tokenizer.json").write_text('{"model": 3')


@pytest.mark.parametrize(("change", "why"), [
    (_backtracking, "cannot count the tokens"), (_huge, "not a regular file of at most 64 MiB"),
    (_link, "not a regular file"), (_garbage, "cannot count the tokens")])
def test_a_hostile_tokenizer_file_leaves_the_order_by_characters(tiny: Path, tmp_path: Path, change, why) -> None:
    """The submitter's tokenizer file: a pattern that backtracks on a long word (the regex engine gives up and
    panics: in the host's own process, that was its thread), a file of gigabytes, a link to a host file, a
    broken file. Each: characters, and the reason in one line; the host process is unharmed."""
    bad = _hostile(tiny, tmp_path, change)
    manifest = json.loads((tiny / "dynadesk-model.json").read_text())
    texts = ["a" * 40 + "!", "short one"]
    got, how = token_lengths(bad, manifest, [texts])
    assert got is None and how.startswith("characters: ") and why in how and "\n" not in how, how


def test_a_runs_sets_are_counted_in_one_child_each_as_alone(tiny: Path, tmp_path: Path,
                                                           monkeypatch: pytest.MonkeyPatch) -> None:
    """A run's test sets go to one tokenizer child (each child cost ~0.2 s of a run's fixed time), with the
    counts each set gets alone; a set the tokenizer fails on is ordered by characters, the others by tokens."""
    import subprocess

    children, real = [], subprocess.run

    def counted(*args, **kwargs):  # the real child, counted
        children.append(args[0])
        return real(*args, **kwargs)

    monkeypatch.setattr(token_order.subprocess, "run", counted)
    manifest = json.loads((tiny / "dynadesk-model.json").read_text())
    sets = [[_texts(40)], [_texts(7)[::-1], _texts(7)], [["one more"]]]
    alone = [token_lengths(tiny, manifest, columns) for columns in sets]
    children.clear()
    assert token_order.sets_token_lengths(tiny, manifest, sets) == alone and len(children) == 1
    assert all(how == "tokens" for _, how in alone)
    bad = _hostile(tiny, tmp_path, _backtracking)
    got = token_order.sets_token_lengths(bad, manifest, [[["short one"]], [["a" * 40 + "!", "b"]], [["c d"]]])
    assert [how for _, how in got][::2] == ["tokens", "tokens"] and got[0][0] and got[2][0], got
    assert got[1][0] is None and got[1][1].startswith("characters: cannot count the tokens") and "\n" not in got[1][1]
    assert len(children) == 2


def test_counting_is_bounded_in_time(tiny: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(token_order, "TIMEOUT_S", 0.01)
    manifest = json.loads((tiny / "dynadesk-model.json").read_text())
    got, how = token_lengths(tiny, manifest, [_texts(50)])
    assert got is None and how == "characters: counting the tokens took over 0.01 s"


def test_other_kinds_keep_the_order_by_characters(tiny: Path) -> None:
    """A kind whose pass sorts by characters (no tokenizer the host reads as its adapter does)."""
    got, how = token_lengths(tiny, {"kind": "hf-question-answering"}, [["x"]])
    assert got is None and how.startswith("characters: ")
    got, how = token_lengths(None, {"kind": "hf-sequence-classification"}, [["x"]])
    assert got is None


def test_the_host_has_counted_the_tokens_before_the_worker_starts(tiny: Path, tmp_path: Path) -> None:
    """The runners start the worker as soon as the load generator listens; the token count (a tokenizer child
    on every core) must be over by then. Counted beside the worker's start, the worker's thread choice read it
    as other processes' work and took 1 passive thread on a quiet machine: the demo's MiniLM runs stored
    154 examples/s batched where their 2 threads give ~250, the figure set by a race with the host."""
    from dynadesk.evaluator.schema import DatasetSpec, Settings, Spec
    from dynadesk.orchestration.loadgen import start_loadgen

    texts = _texts(400)
    (tmp_path / "data").mkdir()
    (tmp_path / "data" / "d000.jsonl").write_text(
        "".join(json.dumps({"id": f"e{i}", "statement": t, "label": LABELS[0]}) + "\n" for i, t in enumerate(texts)))
    manifest = json.loads((tiny / "dynadesk-model.json").read_text())
    spec = Spec(task={"inputs": [{"name": "statement"}]}, model={"manifest": manifest},
                datasets=[DatasetSpec("s", "d000.jsonl", "0" * 64, len(texts))], settings=Settings(batch_size=16))
    (tmp_path / "spec").mkdir()
    spec.write(tmp_path / "spec" / "spec.json")
    (tmp_path / "out").mkdir()
    lg = start_loadgen(tmp_path / "spec" / "spec.json", tmp_path / "data", tmp_path / "out", tiny)
    try:
        examples, order, how, tokens = lg.orders["s"]  # no thread still counting: the order is there on return
        assert how == "tokens" and sorted(order) == list(range(len(texts))) and len(examples) == len(texts)
        assert tokens is not None and [tokens[i] for i in order] == sorted(tokens)  # what the length factor reads
    finally:
        lg.close()
