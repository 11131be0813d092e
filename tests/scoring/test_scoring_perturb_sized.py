"""Sized suites (docs/perturbations.md "Sized suites"): a seeded sample of the source, recorded, resized both ways."""

from __future__ import annotations

import json
import random

import pytest

from dynadesk.data import import_dataset
from dynadesk.datasets import DatasetOrigin
from dynadesk.errors import AlreadyExistsError, ValidationError
from dynadesk.scoring.perturb import generate_suites, sample_sources

WORDS = ["He", "said", "the", "movie", "was", "not", "great", "and", "she", "can't", "recommend", "it", "to",
         "John", "Maria", "really", "terrible", "experience", "with", "her", "brother", "today"]


def _write(path, n: int, shuffle: int | None = None) -> None:
    rng = random.Random(7)
    rows = [{"id": f"s{i}", "statement": " ".join(rng.choice(WORDS) for _ in range(9)) + ".",
             "label": ["negative", "neutral", "positive"][i % 3]} for i in range(n)]
    if shuffle is not None:
        random.Random(shuffle).shuffle(rows)
    path.write_text("".join(json.dumps(r) + "\n" for r in rows))


def _sources(store, results) -> set[str]:
    return {ex["metadata"]["source_id"] for r in results if r.digest for ex in store.datasets.examples(r.name)}


def test_a_sized_suite_perturbs_only_its_seeded_sample_and_says_so(store, tmp_path):
    _write(tmp_path / "a.jsonl", 120)
    _write(tmp_path / "b.jsonl", 120, shuffle=3)  # the same examples in another order
    import_dataset(store, "sentiment", tmp_path / "a.jsonl", name="a")
    import_dataset(store, "sentiment", tmp_path / "b.jsonl", name="b")
    sized = generate_suites(store, "a", seed=0, sample=30)
    made = [r for r in sized if r.digest]
    assert made and all(r.size + r.dropped == 30 for r in sized)
    for r in made:
        der = store.datasets.get(r.name).derivation
        assert der["sample"] == 30 and der["perturbed"] + der["dropped"] == 30
    picked = {ex["id"] for ex in sample_sources(store.datasets.examples("a"), 30, 0)}
    assert len(picked) == 30 and _sources(store, made) <= picked
    assert {ex["id"] for ex in sample_sources(store.datasets.examples("b"), 30, 0)} == picked  # order-free
    assert {ex["id"] for ex in sample_sources(store.datasets.examples("a"), 30, 1)} != picked  # seeded
    assert {r.status for r in generate_suites(store, "a", seed=0, sample=30)} <= {"unchanged", "empty"}


def test_resizing_regenerates_both_ways_but_an_edited_source_is_still_refused(store, tmp_path):
    _write(tmp_path / "a.jsonl", 80)
    import_dataset(store, "sentiment", tmp_path / "a.jsonl", name="a")
    generate_suites(store, "a", seed=0, sample=20)
    full = generate_suites(store, "a", seed=0)  # the whole set again: every sized suite is resized
    assert {r.status for r in full if r.digest} == {"resized"}
    assert all(r.size + r.dropped == 80 for r in full)
    assert all("sample" not in store.datasets.get(r.name).derivation for r in full if r.digest)
    assert {r.status for r in generate_suites(store, "a", seed=0, sample=500)} <= {"unchanged", "empty"}  # >= size
    back = generate_suites(store, "a", seed=0, sample=20)
    assert {r.status for r in back if r.digest} == {"resized"}
    # a suite whose stored content is not these suites' output (another version string) is not resized over
    name = next(r.name for r in back if r.digest)
    d = store.datasets.get(name)
    store.datasets.add(name, d.task, d.split, store.datasets.examples(name)[:1], "sha256:" + "0" * 64,
                       d.label_counts, DatasetOrigin(source=d.source, derived_from=d.derived_from,
                                                     derivation={**d.derivation, "version": "hand-made"}),
                       replace=True)
    with pytest.raises(AlreadyExistsError, match="use --replace"):
        generate_suites(store, "a", seed=0, sample=20)


def test_a_bad_sample_size_is_refused_by_name(store, tmp_path):
    _write(tmp_path / "a.jsonl", 10)
    import_dataset(store, "sentiment", tmp_path / "a.jsonl", name="a")
    for bad in (0, -3, True, 2.5):
        with pytest.raises(ValidationError, match="sample must be a positive number"):
            generate_suites(store, "a", sample=bad)
