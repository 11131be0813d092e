"""Perturbation suites: determinism, derived datasets in a real store, QA spans, no copies."""

from __future__ import annotations

import json
import random

import pytest
from click.testing import CliRunner

from dynadesk.cli import cli
from dynadesk.data import import_dataset
from dynadesk.datasets import DatasetOrigin, validate_example
from dynadesk.errors import AlreadyExistsError, ValidationError
from dynadesk.scoring import gender, textops
from dynadesk.scoring.augly_suite import AUGLY_OPS
from dynadesk.scoring.perturb import (
    OPS,
    SUITES,
    derived_name,
    generate_suites,
    perturb_examples,
)
from dynadesk.tasks import get_task

SENTENCES = [
    "He said his movie was not great, but I do not believe him.",
    "John gave her the book and she thanked James for it.",
    "It's a really weird film; I can't recommend it to my friends.",
    "The actress and her husband were definitely amazing tonight!",
    "Maria told Ahmed that the government is not listening to people.",
    "What a terrible, horrible experience at the restaurant with my brother.",
    "ok",
]


@pytest.fixture
def sentiment_file(tmp_path):
    path = tmp_path / "sent.jsonl"
    labels = ["negative", "neutral", "positive"]
    path.write_text("".join(json.dumps({"id": f"s{i}", "statement": s, "label": labels[i % 3],
                                        "tags": ["t"], "metadata": {"origin": "test"}}) + "\n"
                            for i, s in enumerate(SENTENCES)))
    return path


@pytest.fixture
def qa_file(tmp_path):
    ctx = "Maria Lopez founded the company in 1998. She said her brother John ran it until 2005."
    rows = [{"id": "q1", "context": ctx, "question": "Who did she say ran it until 2005?", "answers": ["John"]},
            {"id": "q2", "context": ctx, "question": "When did Maria found the company?", "answers": ["1998"]},
            {"id": "q3", "context": ctx, "question": "Who is her brother?", "answers": ["John"]}]
    path = tmp_path / "qa.jsonl"
    path.write_text("".join(json.dumps(r) + "\n" for r in rows))
    return path


def test_same_seed_same_digest_different_seed_differs(store, sentiment_file, tmp_path):
    import_dataset(store, "sentiment", sentiment_file, name="sent")
    first = {r.suite: r.digest for r in generate_suites(store, "sent", seed=3)}
    # A second, independent workspace built from the same file gives the same digests.
    from dynadesk.store import Store
    other = Store.open(tmp_path / "other.db")
    import_dataset(other, "sentiment", sentiment_file, name="sent")
    second = {r.suite: r.digest for r in generate_suites(other, "sent", seed=3)}
    assert first == second and None not in {first["typos"], first["case"]}
    again = generate_suites(store, "sent", seed=3)
    assert {r.status for r in again} <= {"unchanged", "empty"}
    different = {r.suite: r.digest for r in generate_suites(other, "sent", seed=4)}
    for suite in ("typos", "homoglyphs", "whitespace", "zero_width"):
        assert different[suite] != first[suite], suite
    other.close()


def test_derived_datasets_point_at_their_source(store, sentiment_file):
    source = import_dataset(store, "sentiment", sentiment_file, name="sent")
    results = generate_suites(store, "sent", suites=["gender", "typos"], seed=0)
    assert [r.name for r in results] == [derived_name("sent", "gender", 0), "sent.typos.s0"]
    derived = {d.name: d for d in store.datasets.derived("sent")}
    gw = derived["sent.gender.s0"]
    assert gw.derivation["kind"] == "fairness" and gw.derivation["suite"] == "gender"
    assert gw.derivation["seed"] == 0 and gw.derivation["source_digest"] == source.digest
    assert derived["sent.typos.s0"].derivation["kind"] == "robustness"
    originals = {ex["id"]: ex for ex in store.datasets.examples("sent")}
    for name in derived:
        for ex in store.datasets.examples(name):
            src = originals[ex["metadata"]["source_id"]]
            assert ex["statement"] != src["statement"]           # never an unchanged copy
            assert ex["label"] == src["label"] and ex["tags"] == src["tags"]
            assert ex["metadata"]["origin"] == "test"
    # gender words: "He ... his ... him" -> "She ... her ... her"
    by_src = {ex["metadata"]["source_id"]: ex for ex in store.datasets.examples("sent.gender.s0")}
    assert by_src["s0"]["statement"] == "She said her movie was not great, but I do not believe her."
    assert by_src["s3"]["statement"].startswith("The actor and his wife")
    swapped = by_src["s4"]["statement"].split()  # "Maria told Ahmed ...": both lone names change gender
    assert gender.NAMES[swapped[0]][1] == "male" and gender.NAMES[swapped[2]][1] == "female"
    assert "s6" not in by_src  # "ok" has nothing gendered: dropped, not copied


def test_qa_perturbs_only_the_question_and_keeps_spans(store, qa_file):
    import_dataset(store, "qa", qa_file, name="qa")
    task = get_task("qa")
    originals = {ex["id"]: ex for ex in store.datasets.examples("qa")}
    results = generate_suites(store, "qa", seed=1)
    assert {r.suite for r in results if r.size} >= {"typos", "case", "gender", "ethnic_names"}
    for r in results:
        if r.status == "empty":
            assert not store.datasets.exists(r.name)
            continue
        for ex in store.datasets.examples(r.name):
            src = originals[ex["metadata"]["source_id"]]
            assert ex["context"] == src["context"] and ex["answers"] == src["answers"]
            assert ex["question"] != src["question"]
            assert all(a in ex["context"] for a in ex["answers"])
            validate_example(task, ex, ex["id"])


def test_every_suite_changes_text_it_applies_to():
    rng = random.Random(0)
    samples = {"typos": "completely", "char_typos": "completely", "misspellings": "I definitely believe it",
               "case": "Hello there", "punctuation": "Hello there", "whitespace": "a b", "zero_width": "cat",
               "contractions": "I do not know", "homoglyphs": "cat", "split_words": "completely",
               "gender": "my father", "ethnic_names": "Please ask Priya"}
    assert set(samples) == set(SUITES) - set(AUGLY_OPS) == set(OPS) - set(AUGLY_OPS)  # augly: test_scoring_augly_suite
    for suite, text in samples.items():
        new, change = OPS[suite](text, rng)
        assert new != text and change, suite
    assert textops.misspellings("I definitely believe it", rng)[0] == "I definately beleive it"
    assert gender.gender("She gave HIM her keys.", rng)[0] == "He gave HER his keys."
    new, _ = gender.gender("ask Priya and Priya", rng)
    first, second = new.split()[1], new.split()[3]
    assert first == second and first in gender.FIRST_NAMES["south_asian"]["male"]
    new, _ = gender.ethnic_names("ask Priya", rng)
    assert new.split()[1] not in gender.FIRST_NAMES["south_asian"]["female"]
    assert any(new.split()[1] in g["female"] for g in gender.FIRST_NAMES.values())


# --------------------------------------------------------------------------- regressions (issue 16)

def test_pronouns_follow_the_swapped_name():
    new, _ = gender.gender("Emma loves his characters, he writes them well.", random.Random(1))
    name = new.split()[0]
    assert gender.NAMES[name][1] == "male" and new.endswith("her characters, she writes them well.")


def test_his_becomes_her_or_hers_by_part_of_speech():
    rng = random.Random(0)
    assert gender.gender("It was his 1st year.", rng)[0] == "It was her 1st year."
    assert gender.gender("The book is his.", rng)[0] == "The book is hers."
    assert gender.gender("I told her that he hurt himself.", rng)[0] == "I told him that she hurt herself."
    assert gender.gender("Her mother and her uncle met her.", rng)[0] == "His father and his aunt met him."
    assert gender.gender("taking his or her first class", rng)[0] == "taking her or his first class"
    # a person named by surname alone ("Nelson's"): "his" may be that person's, so the text is left alone (issue 49)
    assert gender.gender("his (Nelson's) screenplay", rng)[0] == "his (Nelson's) screenplay"


def test_public_figures_named_in_full_are_left_alone():
    rng = random.Random(0)
    for text in ("Michael Moore shows his anger.", "Saddam Hussein's army", "George W. Bush said he would.",
                 "Mr. Bush said he would.", "I miss Jesse St. James and his songs.", "Dave Bond plays. Go Dave!"):
        assert gender.gender(text, rng) == (text, ""), text
        assert "Michael Moore" in gender.ethnic_names("Michael Moore shows his anger.", rng)[0]
    assert gender.ethnic_names("Dave Bond plays. Go Dave!", rng) == ("Dave Bond plays. Go Dave!", "")


def test_contractions_only_where_grammar_allows():
    rng = random.Random(0)
    assert textops.contractions("as i am, i think", rng) == ("as i am, i think", "")
    assert textops.contractions("how tired I am of coughing", rng) == ("how tired I am of coughing", "")
    assert textops.contractions("I am angry", rng)[0] == "I'm angry"
    assert textops.contractions("Why do you have to go", rng) == ("Why do you have to go", "")
    assert textops.contractions("I have a car", rng) == ("I have a car", "")
    assert textops.contractions("I have been there", rng)[0] == "I've been there"
    assert textops.contractions("he's been ill", rng) == ("he's been ill", "")


def test_protected_spans_survive_every_robustness_op():
    text = "@anonymous LOL :) I HATE this http://url_removed #fail :-( <3 \U0001F600 at 10:30 for $5.99"
    default_set = [s for s in SUITES if s not in AUGLY_OPS]  # the reference's suites guard nothing, as it does
    for suite in default_set:
        for seed in range(20):
            new, _ = OPS[suite](text, random.Random(seed))
            if suite in ("punctuation",):
                continue  # the suite's own guard is in perturb_example; checked below
            assert textops.protected_tokens(new) == textops.protected_tokens(text), (suite, new)
    task = get_task("sentiment")
    for suite in default_set:
        out, _ = perturb_examples(task, [{"id": "x", "statement": text, "label": "negative"}], suite, 0)
        for ex in out:
            assert textops.protected_tokens(ex["statement"]) == textops.protected_tokens(text), suite
    assert textops.protected_tokens(text) == ["@anonymous", ":)", "http://url_removed", "#fail", ":-(", "<3",
                                              "\U0001F600", "10:30", "$5.99"]


def test_typos_keep_first_and_last_letter_and_skip_negations():
    for seed in range(50):
        new, _ = textops.typos("HATE", random.Random(seed))
        assert new[0] == "H" and new[-1] == "E" and new != "ATE"
        assert textops.char_typos("not never", random.Random(seed)) == ("not never", "")


def test_perturbation_is_independent_of_example_order():
    task = get_task("sentiment")
    examples = [{"id": f"s{i}", "statement": s, "label": "neutral"} for i, s in enumerate(SENTENCES)]
    a, _ = perturb_examples(task, examples, "typos", 9)
    b, _ = perturb_examples(task, list(reversed(examples)), "typos", 9)
    assert sorted(a, key=lambda e: e["id"]) == sorted(b, key=lambda e: e["id"])


def test_errors(store, sentiment_file):
    import_dataset(store, "sentiment", sentiment_file, name="sent")
    with pytest.raises(ValidationError, match="unknown perturbation suite"):
        generate_suites(store, "sent", suites=["typo"])
    generate_suites(store, "sent", suites=["case"])
    with pytest.raises(ValidationError, match="itself derived"):
        generate_suites(store, "sent.case.s0")
    # A stale derived dataset (different content under the same name) is not overwritten silently.
    examples = store.datasets.examples("sent.case.s0")[:1]
    store.datasets.add("sent.case.s0", "sentiment", "test", examples, "sha256:stale", {},
                       DatasetOrigin(derived_from="sent", derivation={"suite": "case"}), replace=True)
    with pytest.raises(AlreadyExistsError, match="--replace"):
        generate_suites(store, "sent", suites=["case"])
    assert store.datasets.get("sent.case.s0").digest == "sha256:stale"
    (res,) = generate_suites(store, "sent", suites=["case"], replace=True)
    assert res.status == "replaced" and store.datasets.get("sent.case.s0").size == len(SENTENCES)


def test_suites_of_an_older_version_are_upgraded_or_retired(store, sentiment_file):
    """A workspace perturbed by suite version ops1 (with gender_words) regenerates cleanly, and the
    retired suite no longer feeds fairness."""
    import_dataset(store, "sentiment", sentiment_file, name="sent")
    old = store.datasets.examples("sent")[:2]
    for suite, kind in (("typos", "robustness"), ("gender_words", "fairness")):
        store.datasets.add(f"sent.{suite}.s0", "sentiment", "test", old, "sha256:old", {},
                           DatasetOrigin(derived_from="sent", derivation={"suite": suite, "kind": kind, "seed": 0,
                                                                          "version": "ops1-lists1"}))
    results = {r.suite: r.status for r in generate_suites(store, "sent", seed=0)}
    assert results["typos"] == "upgraded" and results["gender_words"] == "retired"
    names = {d.name for d in store.datasets.derived("sent")}
    assert "sent.gender_words.s0" not in names and "sent.gender.s0" in names
    assert store.datasets.get("sent.typos.s0").derivation["version"] == "ops4-lists4"


def test_cli_perturb_json(home, sentiment_file):
    runner = CliRunner()
    res = runner.invoke(cli, ["data", "import", str(sentiment_file), "--task", "sentiment", "--name", "sent"])
    assert res.exit_code == 0, res.output
    res = runner.invoke(cli, ["perturb", "sent", "--suite", "typos", "--suite", "gender", "--seed", "2",
                              "--json"])
    assert res.exit_code == 0, res.output
    out = json.loads(res.stdout)
    assert [(r["suite"], r["status"]) for r in out] == [("typos", "created"), ("gender", "created")]
    assert out[0]["coverage"] == pytest.approx(100.0 * out[0]["size"] / len(SENTENCES))
    assert out[0]["name"] == "sent.typos.s2" and out[0]["size"] + out[0]["dropped"] == len(SENTENCES)
