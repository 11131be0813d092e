"""Task metrics and the consistency score, checked against values worked out by hand."""

from __future__ import annotations

import pytest

from dynadesk.evaluator import metrics as M
from dynadesk.tasks import get_task

SENT = get_task("sentiment").to_dict()
NLI = get_task("nli").to_dict()
QA = get_task("qa").to_dict()


def test_accuracy_accepts_multi_gold_lists():
    preds = ["entailment", "neutral", "contradiction", "neutral"]
    golds = ["entailment", ["entailment", "neutral"], "neutral", ["contradiction"]]
    assert M.accuracy(preds, golds) == pytest.approx(50.0)


def test_macro_f1_by_hand():
    # gold: a a b b c ; pred: a b b b a
    # a: tp1 fp1 fn1 -> 2/4 = .5 ; b: tp2 fp1 fn0 -> 4/5 = .8 ; c: tp0 fp0 fn1 -> 0
    preds = ["a", "b", "b", "b", "a"]
    golds = ["a", "a", "b", "b", "c"]
    assert M.macro_f1(preds, golds, ["a", "b", "c"]) == pytest.approx(100 * (0.5 + 0.8 + 0.0) / 3)


def test_macro_f1_leaves_out_labels_nobody_used():
    # 'c' appears in neither golds nor predictions: averaging over a and b only.
    assert M.macro_f1(["a", "b"], ["a", "b"], ["a", "b", "c"]) == pytest.approx(100.0)


def test_macro_f1_multi_gold_counts_the_predicted_label_when_acceptable():
    assert M.macro_f1(["a", "b"], [["b", "a"], ["a"]], ["a", "b"]) == pytest.approx(100 * (2 / 3 + 0) / 2)


def test_squad_normalisation_and_max_over_golds():
    assert M.normalize_answer("The  Eiffel-Tower!") == "eiffeltower"
    assert M.exact_match("the Eiffel Tower.", ["Eiffel Tower", "Paris"]) == 100.0
    assert M.exact_match("Eiffel", ["Eiffel Tower"]) == 0.0
    # pred "big red dog" vs gold "red dog": P=2/3 R=1 -> F1 = .8 ; vs "cat": 0
    assert M.squad_f1("big red dog", ["cat", "a red dog"]) == pytest.approx(80.0)
    assert M.squad_f1("a", ["the"]) == 100.0  # both normalise to empty
    assert M.squad_f1("", ["dog"]) == 0.0


def test_task_score_label_and_span():
    examples = [{"id": "1", "statement": "x", "label": "positive"},
                {"id": "2", "statement": "y", "label": "negative"}]
    preds = [{"label": "positive", "probs": {}}, {"label": "positive"}]
    # positive: tp1 fp1 -> 2/3 ; negative: fn1 -> 0 -> macro 33.33
    score = M.task_score(SENT, preds, examples)
    assert score == {"perf": pytest.approx(100 / 3), "macro_f1": pytest.approx(100 / 3)}
    qa_ex = [{"id": "q", "context": "a red dog", "question": "what?", "answers": ["red dog"]}]
    qa = M.task_score(QA, [{"answer": "the red dog", "start": 0, "end": 9, "score": 1.0}], qa_ex)
    assert qa == {"perf": 100.0, "squad_f1": 100.0, "exact_match": 100.0}


def test_task_score_rejects_misaligned_or_malformed_input():
    ex = [{"id": "1", "statement": "x", "label": "positive"}]
    with pytest.raises(M.MetricError, match="2 predictions for 1 examples"):
        M.task_score(SENT, ["positive", "negative"], ex)
    with pytest.raises(M.MetricError, match="prediction 0"):
        M.task_score(SENT, [{"answer": "x"}], ex)
    with pytest.raises(M.MetricError, match="does not apply"):
        M.task_score({**SENT, "metric": "squad_f1"}, ["positive"], ex)


def test_tag_breakdown_groups_by_tag():
    examples = [{"id": "1", "hypothesis": "h", "context": "c", "label": "neutral", "tags": ["neg", "long"]},
                {"id": "2", "hypothesis": "h", "context": "c", "label": "entailment", "tags": ["neg"]},
                {"id": "3", "hypothesis": "h", "context": "c", "label": "entailment"}]
    preds = ["neutral", "neutral", "entailment"]
    out = M.tag_breakdown(NLI, preds, examples)
    assert out == {"long": {"n": 1.0, "perf": 100.0, "accuracy": 100.0},
                   "neg": {"n": 2.0, "perf": 50.0, "accuracy": 50.0}}


def test_consistency_is_against_the_models_own_prediction():
    original = {"a": "positive", "b": "negative", "c": "neutral"}
    perturbed = {"a": ["positive", "negative"],  # macro-F1 vs [positive, positive]: (2/3 + 0) / 2
                 "b": ["negative"],               # 100 (gold label is irrelevant)
                 "c": []}                         # no perturbation: not averaged
    # The old "% unchanged" gave (50 + 100) / 2 = 75; the task metric per source gives 66.67.
    assert M.consistency_score(SENT, original, perturbed) == pytest.approx((100 / 3 + 100) / 2)


def test_one_flip_among_three_copies_scores_forty_under_macro_f1():
    # Dynaboard scores the copies with the task metric: F1(kept label) = 2*2/(2*2+1) = .8, F1(flip) = 0.
    report = M.consistency_report(SENT, {"a": "positive"}, {"a": ["positive", "negative", "positive"]})
    assert report["value"] == pytest.approx(40.0)
    assert report["sources"] == 1.0 and report["perturbed"] == 3.0 and report["low_confidence"] == 1.0
    accuracy_task = {**NLI}
    assert M.consistency_score(accuracy_task, {"a": "neutral"}, {"a": ["neutral", "entailment", "neutral"]}) \
        == pytest.approx(200 / 3)


def test_low_confidence_below_the_documented_minimum():
    n = M.MIN_CONSISTENCY_SOURCES
    few = {f"s{i}": ["positive"] for i in range(n - 1)}
    enough = {f"s{i}": ["positive"] for i in range(n)}
    original = {f"s{i}": "positive" for i in range(n)}
    assert M.consistency_report(SENT, original, few)["low_confidence"] == 1.0
    assert M.consistency_report(SENT, original, enough)["low_confidence"] == 0.0
    rows = M.consistency_rows("fairness", M.consistency_report(SENT, original, few))
    assert rows == {"fairness": 100.0, "fairness_sources": float(n - 1), "fairness_low_confidence": 1.0}
    # whole run: sources add up, one low-confidence test set marks the run
    assert M.run_value("fairness_sources", [3.0, 40.0]) == 43.0
    assert M.run_value("fairness_low_confidence", [0.0, 1.0]) == 1.0
    assert M.run_value("fairness", [50.0, 100.0]) == 75.0


def test_consistency_for_qa_uses_the_span_metric():
    original = {"q": {"answer": "red dog"}}
    perturbed = {"q": [{"answer": "big red dog"}, {"answer": "red dog"}]}
    assert M.consistency_score(QA, original, perturbed) == pytest.approx((80.0 + 100.0) / 2)
    em = {**QA, "metric": "exact_match", "secondary_metrics": []}
    assert M.consistency_score(em, original, perturbed) == pytest.approx(50.0)


def test_consistency_errors_are_explicit():
    with pytest.raises(M.MetricError, match="undefined"):
        M.consistency_score(SENT, {"a": "positive"}, {"a": []})
    with pytest.raises(M.MetricError, match="source 'zz'"):
        M.consistency_score(SENT, {"a": "positive"}, {"zz": ["positive"]})


def test_a_real_local_run_stores_coverage_next_to_robustness_and_fairness(home, store, tmp_path):
    """Real worker subprocess and store: the run carries `<kind>_sources` / `<kind>_low_confidence`."""
    from support.eval import metric, run_request, setup_workspace

    from dynadesk.orchestration.evaluate import evaluate
    from dynadesk.workspace import Workspace

    setup_workspace(store, tmp_path, sizes=(40, 12))
    rec = evaluate(store, Workspace(home), run_request("tiny", latency_samples=4, warmup=1))
    assert rec.status == "succeeded", rec.error
    for kind in ("robustness", "fairness"):
        assert metric(rec, f"{kind}_sources", "set0-test") == 40.0
        assert metric(rec, f"{kind}_low_confidence", "set0-test") == 0.0
        assert metric(rec, f"{kind}_sources", "set1-test") == 12.0
        assert metric(rec, f"{kind}_low_confidence", "set1-test") == 1.0  # under MIN_CONSISTENCY_SOURCES
        assert metric(rec, f"{kind}_sources") == 52.0 and metric(rec, f"{kind}_low_confidence") == 1.0
        units = {(m.metric, m.dataset): (m.unit, m.deterministic) for m in rec.metrics}
        assert units[(f"{kind}_sources", "")] == ("examples", True)
