"""The dynaboard-augly suite set: the reference's AugLy families, settings and pre/post-processing."""

from __future__ import annotations

import random

from dynadesk.scoring.augly_suite import (
    AUGLY_OPS,
    PUNCTUATION_CHARS,
    WHITESPACE_CHARS,
    ZERO_WIDTH_CHARS,
    insert_chars,
    perturb_text,
    postprocess,
    preprocess,
)

TEXT = "The quick brown fox couldn't jump over the green, grassy hill."


def test_pre_and_post_processing_are_dynabench_s():
    assert preprocess("Hi, it's me!") == "Hi ,  it ' s me ! "
    assert postprocess(preprocess("Hi, it's me!")) == "Hi,  it' s me!"  # the reference's own residue


def test_insertion_every_ten_characters_with_varied_chars():
    text = "abcdefghijklmnopqrstuvwxyz"
    out = insert_chars(text, ZERO_WIDTH_CHARS, random.Random(0))
    assert out.replace("\u200b", "").translate({ord(c): None for c in ZERO_WIDTH_CHARS}) == text
    parts = [out[0:10], out[11:21], out[22:]]
    assert parts == ["abcdefghij", "klmnopqrst", "uvwxyz"] and out[10] in ZERO_WIDTH_CHARS
    assert out[21] in ZERO_WIDTH_CHARS
    assert insert_chars("abc", PUNCTUATION_CHARS, random.Random(0)) == "abc"  # no gap under ten characters


def test_every_family_changes_a_sentence_and_is_seeded():
    first = perturb_text(TEXT, 0, "ex1")
    assert [s for s, _ in first] == list(AUGLY_OPS)
    assert first == perturb_text(TEXT, 0, "ex1")
    assert first != perturb_text(TEXT, 1, "ex1")
    shown = dict(first)
    assert any(c in shown["augly_whitespace"] for c in "\t\v\f\r\n")
    # fun fonts apply to about 30 % of the texts (AugLy's aug_p), in one of its font kinds: a letter style, small
    # capitals or a combining mark
    funs = [dict(perturb_text(TEXT, 0, f"ex{k}")).get("augly_fun_fonts", "") for k in range(20)]
    styled = [f for f in funs if any(0x1D400 <= ord(c) <= 0x1D6A3 or 0x1D00 <= ord(c) <= 0x1D22
                                     or 0x0300 <= ord(c) <= 0x036F for c in f)]
    assert 2 <= len(styled) <= 12
    assert any(c in shown["augly_upside_down"] for c in "ɐǝɹʇʎɥ")
    tokens = preprocess(TEXT).split()  # every third token of the pre-processed text, as the reference sees it
    upper = {t.upper() for i, t in enumerate(tokens) if i % 3 == 2 and t.isalpha()}
    assert upper == {"BROWN", "OVER"} and all(u in shown["augly_case"] for u in upper)
    assert "quick" in shown["augly_case"]
    assert sum(1 for c in shown["augly_similar_unicode"] if ord(c) > 127) >= 2
    assert all(c in "".join(PUNCTUATION_CHARS) + TEXT for c in shown["augly_punctuation"])
    assert set(WHITESPACE_CHARS) >= {" ", "\t", "\v"}


# ----------------------------------------------------------------- opt-in, named on datasets, runs and the board
import json  # noqa: E402

import pytest  # noqa: E402
from click.testing import CliRunner  # noqa: E402

from dynadesk.cli import cli  # noqa: E402
from dynadesk.datasets import dataset_digest, label_counts  # noqa: E402
from dynadesk.errors import ValidationError  # noqa: E402
from dynadesk.scoring.leaderboard import build_leaderboard  # noqa: E402
from dynadesk.scoring.perturb import generate_suites, robustness_suite_sets  # noqa: E402
from dynadesk.store.evaluations import MetricValue  # noqa: E402
from dynadesk.tasks import get_task  # noqa: E402

ROWS = [{"id": f"t{i}", "statement": s, "label": lab} for i, (s, lab) in enumerate([
    ("I really loved this wonderful film, it was great.", "positive"),
    ("The service was slow and the food was cold.", "negative"),
    ("It is a film about a man and his dog.", "neutral"),
    ("Absolutely terrible, I couldn't stand watching it.", "negative"),
])]


def _dataset(store, name):
    task = get_task("sentiment")
    store.datasets.add(name, "sentiment", "test", ROWS, dataset_digest(ROWS), label_counts(task, ROWS))


def _run(store, model, dataset, robustness):
    store.models.add(model, "sentiment", "majority", f"/m/{model}", f"sha256:{model}", {"task": "sentiment"})
    run = store.evaluations.create(store.models.get(model).id, "sentiment", runner="local", sandboxed=False,
                                   datasets=[dataset],
                                   status="running")
    values = [MetricValue("", m, v, "%", True) for m, v in
              {"perf": 50.0 if model == "a" else 70.0, "macro_f1": 50.0, "robustness": robustness,
               "fairness": 90.0}.items()]
    values += [MetricValue("", "throughput", 10.0, "examples/s", False),
               MetricValue("", "memory", 1.0, "GiB", False)]
    store.evaluations.set_metrics(run, values, status="succeeded")


def test_suite_set_is_opt_in_named_and_never_mixed(store):
    _dataset(store, "tweets")
    _dataset(store, "tweets-augly")
    generate_suites(store, "tweets")
    augly = generate_suites(store, "tweets-augly", suite_set="dynaboard-augly")
    assert {r.suite for r in augly if r.kind == "robustness"} <= set(AUGLY_OPS)
    made = [store.datasets.get(r.name) for r in augly if r.status == "created" and r.kind == "robustness"]
    assert made and all(d.derivation["suite_set"] == "dynaboard-augly" for d in made)
    assert robustness_suite_sets(store, "tweets") == ["dynadesk"]
    assert robustness_suite_sets(store, "tweets-augly") == ["dynaboard-augly"]
    with pytest.raises(ValidationError, match="would pool"):
        generate_suites(store, "tweets", suites=["augly_fun_fonts"])
    with pytest.raises(ValidationError, match="would pool"):
        generate_suites(store, "tweets-augly", suites=["typos"])
    _run(store, "a", "tweets", 74.9)
    _run(store, "b", "tweets-augly", 49.5)
    board = build_leaderboard(store, "sentiment")
    labels = {r.model: r.robustness_suites for r in board.rows}
    assert labels == {"a": ["dynadesk"], "b": ["dynaboard-augly"]}
    assert any("not comparable" in n for n in board.notes)
    out = CliRunner().invoke(cli, ["leaderboard", "sentiment"])
    assert "robustness suites: " in out.output and "b dynaboard-augly (the reference's AugLy families)" in out.output
    assert "a dynadesk (DynaDesk's suites)" in out.output
    rows = json.loads(CliRunner().invoke(cli, ["leaderboard", "sentiment", "--json"]).output)["rows"]
    assert {r["model"]: r["robustness_suites"] for r in rows} == labels


def test_the_families_follow_augly_s_counts_and_kinds():
    """nlpaug's int(30 %) of the tokens (at least one); fun fonts on about 1 - 0.7^3 of the texts, in all 19 of
    AugLy's font kinds; contractions only contract."""
    from dynadesk.scoring.augly_suite import FONTS

    assert len(FONTS) == 19
    text = "one two three four five six seven eight nine ten"  # ten tokens: three of them changed
    for seed in range(5):
        assert len(AUGLY_OPS["augly_split_words"](text, random.Random(seed))[0].split()) == 13  # three split
        for name in ("augly_upside_down", "augly_char_typos", "augly_keyboard_typos"):
            new = AUGLY_OPS[name](text, random.Random(seed))[0]
            assert 1 <= sum(a != b for a, b in zip(text.split(), new.split())) <= 3, (name, new)
    assert AUGLY_OPS["augly_split_words"]("one two six ten", random.Random(0)) == ("one two six ten", "")  # < 4
    plain = "The quick brown fox jumps over the green grassy hill"  # no mark the pre/post-processing would move
    hits = sum(AUGLY_OPS["augly_fun_fonts"](plain, random.Random(i))[1] != "" for i in range(400))
    assert 0.58 < hits / 400 < 0.73  # 1 - 0.7^3 = 0.657
    contracted = AUGLY_OPS["augly_contractions"]("I do not know. It is ok.", random.Random(0))[0]
    assert contracted.split() == "I don't know. It's ok.".split()  # (the reference's post-processing leaves "  ")
    assert "do not" not in AUGLY_OPS["augly_contractions"]("I don't know.", random.Random(0))[0]  # never expands


def test_one_run_reports_one_suite_set(store, tmp_path):
    """A run over test sets perturbed with different suite sets is refused before it starts (its robustness would
    be the mean of two suite sets, reported as one number); each set in its own run goes ahead."""
    from support.eval import run_request, setup_workspace

    from dynadesk.orchestration.evaluate import evaluate
    from dynadesk.workspace import Workspace

    setup_workspace(store, tmp_path, sizes=())
    _dataset(store, "tweets")
    _dataset(store, "tweets-augly")
    generate_suites(store, "tweets")
    generate_suites(store, "tweets-augly", suite_set="dynaboard-augly")
    ws = Workspace(store.path.parent)
    with pytest.raises(ValidationError) as err:
        evaluate(store, ws, run_request("tiny", ["tweets", "tweets-augly"], runner="local"))
    message = str(err.value)
    assert "dynaboard-augly: tweets-augly; dynadesk: tweets" in message and "--dataset tweets-augly" in message
    assert store.evaluations.list() == []  # nothing was started
    run = evaluate(store, ws, run_request("tiny", ["tweets-augly"], runner="local"))
    assert run.status == "succeeded", run.error
