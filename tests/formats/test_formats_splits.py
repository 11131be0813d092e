"""Splits as published: DynaHate's CSV holds train, dev and test rows in one file (a `split` column); an import
takes the split asked for (or each under its own name) and says how many rows of each it found. A quoted "NA"
is the text NA; only R's bare NA is a missing cell."""

from __future__ import annotations

from pathlib import Path

import pytest
from test_formats_cli import run_cli

from dynadesk.data import import_file
from dynadesk.errors import ValidationError

# As R's write.csv writes Dynamically Generated Hate Dataset v0.2.3.csv: every string quoted, NA bare.
DYNAHATE = (
    '"","acl.id","X1","text","label","type","target","level","split","round.base","annotator","round",'
    '"acl.id.matched"\n'
    '"1","acl1",1,"dalits are lowlife scum","hate","notgiven","notgiven","original","train",1,"GNZuCtwed3","1",NA\n'
    '"2","acl10",2,"I love my neighbours","nothate","none",NA,"original","test",1,"GNZuCtwed3","1",NA\n'
    '"3","acl11",3,"NA","nothate","none",NA,"original","dev",1,"GNZuCtwed3","1",NA\n'
    '"4","acl12",4,"they should all be deported","hate","notgiven","notgiven","original","train",1,"GNZuCtwed3",'
    '"1",NA\n'
    '"5","acl13",5,"women are brilliant","nothate","none",NA,"original","test",1,"GNZuCtwed3","1",NA\n')


def _file(tmp_path: Path) -> Path:
    path = tmp_path / "Dynamically Generated Hate Dataset v0.2.3.csv"
    path.write_text(DYNAHATE, encoding="utf-8")
    return path


def test_the_test_split_of_a_dynahate_file_holds_only_its_test_rows_and_says_what_it_found(store, tmp_path):
    outcome = import_file(store, "hate_speech", _file(tmp_path), name="dh", split="test")
    assert outcome.splits_found == {"train": 2, "test": 2, "dev": 1}
    assert [e["id"] for e in store.datasets.examples("dh")] == ["acl10", "acl13"]
    assert store.datasets.get("dh").split == "test"


def test_all_splits_imports_each_split_under_its_own_name(home, tmp_path):
    res = run_cli(home, "data", "import", str(_file(tmp_path)), "--task", "hate_speech", "--name", "dh",
                  "--all-splits")
    assert res.returncode == 0, res.stderr
    assert "splits in the file: train 2, test 2, dev 1" in res.stdout
    for name, split, size in [("dh-train", "train", 2), ("dh-test", "test", 2), ("dh-dev", "dev", 1)]:
        assert f"imported {size} examples as '{name}' (split {split})" in res.stdout


def test_a_split_the_file_does_not_hold_is_refused_naming_the_ones_it_does(store, tmp_path):
    path = tmp_path / "train_only.csv"
    path.write_text(DYNAHATE.split("\n")[0] + "\n" + DYNAHATE.split("\n")[1] + "\n", encoding="utf-8")
    with pytest.raises(ValidationError, match="holds 1 train rows and none of 'test': pass --split train"):
        import_file(store, "hate_speech", path, name="dh")
    assert store.datasets.list() == []


def test_a_quoted_na_is_a_text_and_a_bare_na_is_missing(store, tmp_path):
    import_file(store, "hate_speech", _file(tmp_path), name="dh", split="dev")
    (ex,) = store.datasets.examples("dh")
    assert ex["statement"] == "NA" and ex["label"] == "not-hateful"
    assert "target" not in ex["metadata"] and "acl.id.matched" not in ex["metadata"]


def test_all_splits_stores_nothing_when_one_name_is_taken(store, tmp_path):
    import_file(store, "hate_speech", _file(tmp_path), name="dh-dev", split="dev")
    with pytest.raises(ValidationError, match="dh-dev already exist"):
        import_file(store, "hate_speech", _file(tmp_path), name="dh", all_splits=True)
    assert sorted(d.name for d in store.datasets.list()) == ["dh-dev"]


def test_rows_without_a_split_beside_rows_with_one_are_refused_naming_them(store, tmp_path):
    path = tmp_path / "mixed.csv"
    path.write_text(DYNAHATE.replace('"original","dev",', '"original",NA,'), encoding="utf-8")
    with pytest.raises(ValidationError, match=r"1 row\(s\) name no split \(ids acl11\)"):
        import_file(store, "hate_speech", path, name="dh")
    assert store.datasets.list() == []
