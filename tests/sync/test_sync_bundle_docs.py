"""docs/bundle-format.md's payload field table is generated from the typed model
(``python packaging/gen_bundle_docs.py``) and must be up to date."""

from __future__ import annotations

import sys

from support import REPO

sys.path.insert(0, str(REPO / "packaging"))

import gen_bundle_docs

from dynadesk.sync.format.payload import Payload

DOC = REPO / "docs" / "bundle-format.md"


def test_docs_bundle_format_md_is_the_generated_text() -> None:
    assert DOC.read_text(encoding="utf-8") == gen_bundle_docs.render(DOC.read_text(encoding="utf-8")), \
        "docs/bundle-format.md is stale: run python packaging/gen_bundle_docs.py and commit the result"


def test_every_signed_field_has_a_row_and_no_row_names_another() -> None:
    table = gen_bundle_docs.table()
    rows = {line.split("|")[1].strip().strip("`") for line in table.splitlines()[2:]}
    assert rows == {f.name for f in Payload.signed_fields()}
    assert "worker_settings" in rows and "settings" in rows  # both versions' fields, each marked with its version
    assert "version 1 only" in table and "version 2 only" in table
