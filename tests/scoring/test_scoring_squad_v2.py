"""SQuAD 2.0 as published: unanswerable questions kept (opt-in) and scored with the official v2.0 rule.

The reference below is written from the official ``evaluate-v2.0.py`` logic (normalize_answer,
get_tokens, compute_exact, compute_f1, get_raw_scores with its filter of golds that normalise to
empty and its ``['']`` for an unanswerable question, then the mean over every question with no
no-answer probabilities, i.e. threshold 1.0), not from DynaDesk's code.
"""

from __future__ import annotations

import collections
import json
import random
import re
import string

import pytest

from dynadesk.data import FileReading, import_file
from dynadesk.errors import ValidationError
from dynadesk.evaluator.metrics import squad_f1, squad_v2_exact, squad_v2_f1, task_score
from dynadesk.formats.squad import UNANSWERABLE
from dynadesk.tasks import get_task


# ----------------------------------------------------------------- the official v2.0 logic, independently
def ref_normalize(s: str) -> str:
    def remove_articles(text: str) -> str:
        return re.sub(re.compile(r"\b(a|an|the)\b", re.UNICODE), " ", text)

    def white_space_fix(text: str) -> str:
        return " ".join(text.split())

    def remove_punc(text: str) -> str:
        exclude = set(string.punctuation)
        return "".join(ch for ch in text if ch not in exclude)

    return white_space_fix(remove_articles(remove_punc(s.lower())))


def ref_tokens(s: str) -> list[str]:
    return ref_normalize(s).split() if s else []


def ref_exact(a_gold: str, a_pred: str) -> int:
    return int(ref_normalize(a_gold) == ref_normalize(a_pred))


def ref_f1(a_gold: str, a_pred: str) -> float:
    gold_toks, pred_toks = ref_tokens(a_gold), ref_tokens(a_pred)
    common = collections.Counter(gold_toks) & collections.Counter(pred_toks)
    num_same = sum(common.values())
    if len(gold_toks) == 0 or len(pred_toks) == 0:
        return int(gold_toks == pred_toks)
    if num_same == 0:
        return 0
    precision = 1.0 * num_same / len(pred_toks)
    recall = 1.0 * num_same / len(gold_toks)
    return (2 * precision * recall) / (precision + recall)


def ref_evaluate(dataset: list[dict], preds: dict[str, str]) -> dict[str, float]:
    exact, f1 = {}, {}
    for article in dataset:
        for p in article["paragraphs"]:
            for qa in p["qas"]:
                qid = qa["id"]
                gold_answers = [a["text"] for a in qa["answers"] if ref_normalize(a["text"])]
                if not gold_answers:
                    gold_answers = [""]
                a_pred = preds[qid]
                exact[qid] = max(ref_exact(a, a_pred) for a in gold_answers)
                f1[qid] = max(ref_f1(a, a_pred) for a in gold_answers)
    total = len(exact)
    return {"exact": 100.0 * sum(exact.values()) / total, "f1": 100.0 * sum(f1.values()) / total}


# ----------------------------------------------------------------- a dev-v2.0-shaped sample
CONTEXT = "The Normans gave their name to Normandy, a region in France. The the Seine flows past Rouen."


def _dev(rng: random.Random, n: int) -> tuple[list[dict], dict[str, str]]:
    words = CONTEXT.split()
    qas, preds = [], {}
    for i in range(n):
        qid = f"q{i:04d}"
        kind = rng.random()
        if kind < 0.45:  # unanswerable, as about half of the dev set
            qas.append({"id": qid, "question": f"Question {i}?", "is_impossible": True, "answers": [],
                        "plausible_answers": [{"text": "Normandy", "answer_start": 31}]})
        else:
            answers = []
            for _ in range(rng.randint(1, 3)):
                a = rng.randrange(len(words))
                text = " ".join(words[a:a + rng.randint(1, 3)])
                answers.append({"text": text, "answer_start": CONTEXT.index(text)})
            if kind > 0.9:  # a gold that normalises to empty beside real golds
                answers.insert(0, {"text": "The", "answer_start": 0})
            qas.append({"id": qid, "question": f"Question {i}?", "is_impossible": False, "answers": answers})
        r = rng.random()
        if r < 0.3:
            preds[qid] = ""
        elif r < 0.35:
            preds[qid] = "the"
        else:
            a = rng.randrange(len(words))
            preds[qid] = " ".join(words[a:a + rng.randint(1, 4)])
    return [{"title": "Normans", "paragraphs": [{"context": CONTEXT, "qas": qas}]}], preds


def _score(store, tmp_path, dataset, preds, name="dev-v2", squad_v2=True):
    path = tmp_path / f"{name}.json"
    path.write_text(json.dumps({"version": "v2.0", "data": dataset}), encoding="utf-8")
    from dynadesk.formats import Mapping

    outcome = import_file(store, "qa", path, name=name, reading=FileReading(mapping=Mapping(squad_v2=squad_v2)))
    examples = list(store.datasets.iter_examples(outcome.summary.name))
    task = get_task("qa").to_dict()
    return outcome, task_score(task, [{"answer": preds[e["id"]]} for e in examples], examples)


def test_v2_scores_equal_the_official_logic_on_a_mixed_sample(store, tmp_path):
    dataset, preds = _dev(random.Random(20), 400)
    outcome, scores = _score(store, tmp_path, dataset, preds)
    assert outcome.summary.size == 400 and not outcome.dropped
    ref = ref_evaluate(dataset, preds)
    assert scores["squad_f1"] == pytest.approx(ref["f1"], abs=1e-9)
    assert scores["exact_match"] == pytest.approx(ref["exact"], abs=1e-9)


def test_unanswerable_and_empty_normalising_gold_cases():
    assert squad_v2_f1("", []) == 100.0 and squad_v2_exact("", []) == 100.0
    assert squad_v2_f1("Normandy", []) == 0.0 and squad_v2_exact("Normandy", []) == 0.0
    # A gold that normalises to empty beside a real gold: v1.1 gives 100, v2.0 drops it and gives 0.
    assert squad_f1("", ["The", "Paris"]) == 100.0
    assert squad_v2_f1("", ["The", "Paris"]) == 0.0 and squad_v2_exact("", ["The", "Paris"]) == 0.0
    assert squad_v2_f1("", ["The", "Paris"]) == 100 * ref_f1("Paris", "")


def test_a_small_hand_case_with_every_kind(store, tmp_path):
    dataset = [{"title": "T", "paragraphs": [{"context": CONTEXT, "qas": [
        {"id": "a", "question": "Where?", "is_impossible": False,
         "answers": [{"text": "France", "answer_start": 54}]},
        {"id": "b", "question": "Who?", "is_impossible": True, "answers": []},
        {"id": "c", "question": "Who2?", "is_impossible": True, "answers": []},
        {"id": "d", "question": "What?", "is_impossible": False,
         "answers": [{"text": "The", "answer_start": 0}, {"text": "Normans", "answer_start": 4}]},
    ]}]}]
    preds = {"a": "France", "b": "", "c": "Rouen", "d": ""}
    _outcome, scores = _score(store, tmp_path, dataset, preds, name="hand")
    assert scores["exact_match"] == 50.0 and scores["squad_f1"] == 50.0  # a: 1, b: 1, c: 0, d: 0
    assert ref_evaluate(dataset, preds) == {"exact": 50.0, "f1": 50.0}


def test_default_import_is_answerable_only_and_says_so(store, tmp_path):
    dataset, preds = _dev(random.Random(3), 40)
    outcome, _scores = _score(store, tmp_path, dataset, preds, name="answerable", squad_v2=False)
    (reason,) = outcome.dropped
    assert reason == UNANSWERABLE and "answerable-only" in reason and "--squad-v2" in reason
    assert outcome.summary.size == 40 - outcome.dropped[reason]
    # the dataset record says so, for good (data show, --json), and a --squad-v2 import does not
    stored = store.datasets.get("answerable")
    assert stored.answerable_only and stored.unanswerable_left_out == outcome.dropped[reason] > 0
    assert store.datasets.get(_score(store, tmp_path, dataset, preds, name="v2")[0].summary.name).answerable_only \
        is False


def test_data_show_says_answerable_only(home, tmp_path):
    from click.testing import CliRunner

    from dynadesk.cli import cli

    dataset, _preds = _dev(random.Random(3), 40)
    path = tmp_path / "dev-v2.0.json"
    path.write_text(json.dumps({"version": "v2.0", "data": dataset}))
    runner = CliRunner()
    out = runner.invoke(cli, ["data", "import", str(path), "--task", "qa", "--name", "squad-dev", "--json"])
    assert out.exit_code == 0, out.output
    left = json.loads(out.output)["unanswerable_left_out"]
    shown = runner.invoke(cli, ["data", "show", "squad-dev"])
    assert f"answerable-only: {left} unanswerable question(s) left out" in shown.output, shown.output
    doc = json.loads(runner.invoke(cli, ["data", "show", "squad-dev", "--json"]).output)
    assert doc["answerable_only"] is True and doc["unanswerable_left_out"] == left > 0
    assert runner.invoke(cli, ["data", "import", str(path), "--task", "qa", "--name", "squad-v2",
                               "--squad-v2"]).exit_code == 0
    assert "answerable-only" not in runner.invoke(cli, ["data", "show", "squad-v2"]).output


def test_squad_v2_round_trips_and_is_refused_elsewhere(store, tmp_path):
    from dynadesk.data import export_dataset
    from dynadesk.formats import Mapping

    dataset, preds = _dev(random.Random(5), 30)
    outcome, _ = _score(store, tmp_path, dataset, preds, name="rt")
    out = tmp_path / "rt.jsonl"
    export_dataset(store, "rt", out)
    again = import_file(store, "qa", out, name="rt2")
    assert again.summary.digest == outcome.summary.digest
    nli = tmp_path / "n.jsonl"
    nli.write_text(json.dumps({"context": "a", "hypothesis": "b", "label": "neutral"}) + "\n")
    with pytest.raises(ValidationError, match="--squad-v2 applies to qa files"):
        import_file(store, "nli", nli, reading=FileReading(mapping=Mapping(squad_v2=True)))
    plain = tmp_path / "p.jsonl"
    plain.write_text(json.dumps({"context": "a b", "question": "q?", "answers": []}) + "\n")
    with pytest.raises(ValidationError, match="unanswerable questions .*--squad-v2 keeps them"):
        import_file(store, "qa", plain)  # only a dataset kept as SQuAD 2.0 may hold an unanswerable question


def test_hf_squad_v2_rows_keep_unanswerable(store, tmp_path):
    from dynadesk.formats import Mapping

    path = tmp_path / "squad_v2-validation.jsonl"
    path.write_text("\n".join(json.dumps(r) for r in [
        {"id": "x1", "title": "N", "context": CONTEXT, "question": "Where?",
         "answers": {"text": ["France"], "answer_start": [54]}},
        {"id": "x2", "title": "N", "context": CONTEXT, "question": "Who?", "answers": {"text": [], "answer_start": []}},
    ]) + "\n")
    outcome = import_file(store, "qa", path, reading=FileReading(mapping=Mapping(squad_v2=True)))
    examples = list(store.datasets.iter_examples(outcome.summary.name))
    assert [e["answers"] for e in examples] == [["France"], []]
    scores = task_score(get_task("qa").to_dict(), [{"answer": "France"}, {"answer": ""}], examples)
    assert scores["squad_f1"] == 100.0
