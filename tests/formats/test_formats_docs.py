"""Every example file in docs/data-formats.md imports, with its format detected as the page says."""

from __future__ import annotations

import re

import pytest
from support import REPO

from dynadesk.data import FileReading, import_file
from dynadesk.formats import FORMATS, Mapping, parse_pairs

DOC = REPO / "docs" / "data-formats.md"
EXAMPLE = re.compile(r"<!-- example: (?P<attrs>[^>]*?) -->\n```[a-z]*\n(?P<body>.*?)\n```", re.DOTALL)


def _examples() -> list[tuple[dict[str, str], str]]:
    out = []
    for m in EXAMPLE.finditer(DOC.read_text(encoding="utf-8")):
        attrs = dict(a.split("=", 1) for a in m.group("attrs").split())
        out.append((attrs, m.group("body") + "\n"))
    return out


def test_the_page_shows_every_format_and_task():
    shown = _examples()
    assert {a["format"] for a, _ in shown} == set(FORMATS) - {"hf-parquet"}  # Parquet is binary: described only
    assert {a["task"] for a, _ in shown} == {"nli", "sentiment", "hate_speech", "qa"}


@pytest.mark.parametrize("attrs,body", _examples(), ids=lambda v: v.get("file", "") if isinstance(v, dict) else "")
def test_doc_example_imports_with_the_stated_format(store, tmp_path, attrs, body):
    path = tmp_path / attrs["file"]
    path.write_text(body, encoding="utf-8")
    labels = parse_pairs(attrs["label-map"].split(","), "--label-map") if "label-map" in attrs else {}
    outcome = import_file(store, attrs["task"], path, reading=FileReading(mapping=Mapping(labels=labels)))
    assert outcome.format == attrs["format"] and outcome.detected
    assert outcome.summary.size >= 1
