"""Malformed annotation packs as files (tests/assets/malformed/, written by ``support.make_assets``): a merge
refuses each with an error naming the file and what is wrong, and merges nothing.

Packs edited and signed again by a trusted key (only the record checks can refuse them) are built in
test_annotation_pack.py and test_annotation_pack_attacks.py."""

from __future__ import annotations

import shutil

import pytest
from support import ASSETS

from dynadesk import annotation as ann
from dynadesk.errors import SignatureError, ValidationError
from dynadesk.workspace import Workspace

MALFORMED = ASSETS / "malformed"

# file -> (error, what the message names)
REFUSED = {
    "pack_truncated.pack": (ValidationError, "not valid JSON"),
    "pack_other_format.pack": (ValidationError, "not a DynaDesk annotation pack"),
    "pack_version_1_unsigned.pack": (ValidationError, "unsigned version 1 pack"),
    "pack_version_9.pack": (ValidationError, "pack version 9 is not supported"),
    "pack_not_utf8.pack": (ValidationError, "not valid UTF-8"),
    "pack_unsigned.pack": (SignatureError, "carries no Ed25519 signature"),
    "pack_edited.pack": (SignatureError, "edited after it was signed"),
}


def test_every_malformed_pack_file_has_a_case():
    assert {p.name for p in MALFORMED.glob("pack_*.pack")} == set(REFUSED)


@pytest.mark.parametrize("name", sorted(REFUSED))
def test_a_malformed_pack_is_refused_naming_the_file_and_merges_nothing(name, tmp_path):
    store = Workspace(tmp_path / "ws").open_store()
    ann.add_annotator(store, "bea")
    path = tmp_path / name
    shutil.copyfile(MALFORMED / name, path)
    error, match = REFUSED[name]
    with pytest.raises(error, match=match) as refused:
        ann.merge(store, path)
    assert str(path) in str(refused.value)
    assert [a.name for a in ann.list_annotators(store)] == ["bea"]
    store.close()
