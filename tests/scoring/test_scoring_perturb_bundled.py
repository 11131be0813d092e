"""The suites on the four bundled test sets: protected spans, gender consistency, coverage,
the reviewed sample, and a real demo model's robustness/fairness against the reference."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest
from support import ASSETS, REPO
from test_scoring_consistency_reference import reference_unperturbed_percent

from dynadesk.evaluator import metrics as M
from dynadesk.scoring.augly_suite import AUGLY_OPS
from dynadesk.scoring.gender import gendered_tokens
from dynadesk.scoring.perturb import SUITES, generate_suites
from dynadesk.scoring.textops import protected_tokens
from dynadesk.tasks import get_task
from dynadesk.workspace import Workspace

SAMPLE = ASSETS / "perturb_sample.jsonl"
TEST_SETS = [f"vader-{s}-test" for s in ("movies", "tweets", "amazon", "nyt")]
TASK = get_task("sentiment")


@pytest.fixture(scope="module")
def bundled(tmp_path_factory):
    """A workspace with the bundled data, every suite generated (seed 0) for the four test sets."""
    from dynadesk.recipes import fetch_default_data

    ws = Workspace(tmp_path_factory.mktemp("bundled") / "ws").ensure()
    store = ws.open_store()
    cache = REPO / ".cache" / "downloads"
    cache.mkdir(parents=True, exist_ok=True)
    fetch_default_data(store, cache)
    results = {name: generate_suites(store, name, seed=0) for name in TEST_SETS}
    yield ws, store, results
    store.close()


def _pairs(store, results):
    """(suite, source example, perturbed example) over every stored perturbed example."""
    for name, rows in results.items():
        originals = {ex["id"]: ex for ex in store.datasets.examples(name)}
        for r in rows:
            if r.size:
                for ex in store.datasets.examples(r.name):
                    yield r.suite, originals[ex["metadata"]["source_id"]], ex


def test_no_url_handle_hashtag_emoticon_emoji_or_number_changes(bundled):
    _, store, results = bundled
    checked = 0
    for suite, src, ex in _pairs(store, results):
        assert protected_tokens(ex["statement"]) == protected_tokens(src["statement"]), (suite, src["statement"])
        checked += 1
    assert checked > 40_000
    tweets = [src for _, src, _ in _pairs(store, {"vader-tweets-test": results["vader-tweets-test"]})]
    kinds = " ".join(t for src in tweets for t in protected_tokens(src["statement"]))
    for sample in ("http://url_removed", "@anonymous", "#", ":)"):
        assert sample in kinds  # the check above really covered each kind


def test_gendered_words_agree_with_the_swapped_names(bundled):
    _, store, results = bundled
    flip = {"male": "female", "female": "male"}
    swapped_names = 0
    for suite, src, ex in _pairs(store, results):
        if suite != "gender":
            continue
        before, after = gendered_tokens(src["statement"]), gendered_tokens(ex["statement"])
        assert after == [flip[g] for g in before], (src["statement"], ex["statement"])
        swapped_names += "names=;" not in ex["metadata"]["perturbation"]["changes"]["statement"]
    assert swapped_names > 0


def test_public_figures_and_his_hers_grammar(bundled):
    _, store, results = bundled
    for suite, src, ex in _pairs(store, results):
        if suite in ("gender", "ethnic_names"):
            assert "Michael Moore" not in src["statement"]  # named in full: text left alone
            assert not re.search(r"\bhers \w", ex["statement"]) or re.search(r"\bhers (and|or|is|was)\b",
                                                                              ex["statement"])


def test_no_clause_final_contraction(bundled):
    _, store, results = bundled
    for suite, _src, ex in _pairs(store, results):
        if suite == "contractions":
            assert not re.search(r"\b(i'm|you're|we're|they're|he's|she's|i've|we've|they've|you've|"
                                 r"i'll|we'll|they'll|you'll|he'll|she'll|i'd)(?=\s*([,.;:!?)]|$))",
                                 ex["statement"], re.IGNORECASE), ex["statement"]


def test_every_suite_reports_its_coverage(bundled):
    _, store, results = bundled
    table = {name: {r.suite: (r.size, r.coverage) for r in rows} for name, rows in results.items()}
    for name, rows in table.items():
        assert set(rows) == set(SUITES) - set(AUGLY_OPS)  # the default set; dynaboard-augly is opt-in
        size = store.datasets.get(name).size
        for _suite, r in zip(rows, results[name]):
            assert r.size + r.dropped == size and 0 <= r.coverage <= 100
    assert table["vader-amazon-test"]["gender"][0] > 0  # Amazon's fairness suite is not empty
    assert all(table[n]["gender"][0] >= M.MIN_CONSISTENCY_SOURCES for n in TEST_SETS if "amazon" not in n)


def _sample(store, results) -> list[dict]:
    rows = []
    for name, suite_rows in results.items():
        originals = {ex["id"]: ex for ex in store.datasets.examples(name)}
        for r in suite_rows:
            if r.size:
                for ex in store.datasets.examples(r.name)[:3]:
                    rows.append({"dataset": name, "suite": r.suite, "id": ex["id"],
                                 "source": originals[ex["metadata"]["source_id"]]["statement"],
                                 "perturbed": ex["statement"]})
    return rows


def test_reviewed_sample_is_reproduced(bundled):
    """tests/assets/perturb_sample.jsonl was read by a person; any change to a suite shows here."""
    _, store, results = bundled
    got = _sample(store, results)
    want = [json.loads(line) for line in SAMPLE.read_text(encoding="utf-8").splitlines()]
    assert got == want


def test_demo_model_robustness_and_fairness_equal_the_reference(bundled):
    from dynadesk.evaluator.adapters import load_adapter
    from dynadesk.models.zoo import BOW, ZooConfig, build_demo_zoo, predict_dataset

    ws, store, results = bundled
    (row,) = build_demo_zoo(store, ws, config=ZooConfig(bow_epochs=2, bow_train_per_source=300, dev_per_source=40),
                            only=[BOW])
    adapter = load_adapter(Path(row["path"]))
    task = TASK.to_dict()
    seen = 0
    for name, rows in results.items():
        exs = store.datasets.examples(name)
        original = {ex["id"]: p for ex, p in zip(exs, predict_dataset(adapter, exs, ["statement"]))}
        for kind in ("robustness", "fairness"):
            by_source: dict[str, list] = {}
            for r in rows:
                if r.kind == kind and r.size:
                    pex = store.datasets.examples(r.name)
                    for ex, p in zip(pex, predict_dataset(adapter, pex, ["statement"])):
                        by_source.setdefault(ex["metadata"]["source_id"], []).append(p["label"])
            if not by_source:
                continue
            ids = list(by_source)
            want = reference_unperturbed_percent([by_source[i] for i in ids],
                                                 [original[i]["label"] for i in ids], "macro_f1")
            report = M.consistency_report(task, original, by_source)
            assert report["value"] == pytest.approx(want, abs=1e-9), (name, kind)
            assert report["sources"] == len(ids)
            seen += 1
    assert seen == 8  # robustness and fairness on each of the four sets
