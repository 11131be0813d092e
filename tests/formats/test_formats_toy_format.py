"""DEVELOPERS.md "a data format", followed literally: a toy format (``label|text`` lines in a .txt file) gets a
reader, a converter and a detect hook, is registered once, and ``dynadesk data import`` detects and reads it.

A .txt file is a TSV to the built-in hooks; the toy's hook is asked first (its detect_order), so detection must go
through the registry for the file to import: before registration the same file is refused.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

import pytest
from click.testing import CliRunner

from dynadesk import formats as F
from dynadesk.cli import cli
from dynadesk.formats.base import Format, SourceRow, convert_native
from dynadesk.formats.delimited import read_text

ROWS = [("positive", "what a great film"), ("negative", "a dull and awful book"), ("neutral", "it was a film"),
        ("positive", "really very good food")]


# Step 1: a reader (file -> source rows, each with where it is) ...
def read_pipe_rows(path: Path, problems: list[str]) -> Iterator[SourceRow]:
    for n, line in enumerate(read_text(path).splitlines(), start=1):
        if not line.strip():
            continue
        label, sep, text = line.partition("|")
        if not sep:
            problems.append(f"line {n}: expected 'label|text'")
            continue
        yield SourceRow(f"line {n}", {"statement": text, "label": label}, str(n))


# ... and a detect hook over the Sniff (suffix, first object, header by delimiter, each read once).
def is_pipe_file(sniff: F.Sniff) -> bool:
    return sniff.suffix == ".txt" and len(sniff.columns("|")) == 2 and len(sniff.columns("\t")) == 1


TOY = Format("toy-pipe", "label|text lines", read_pipe_rows, convert_native, ("sentiment",), detect=is_pipe_file)


@pytest.fixture
def pipe_file(tmp_path):
    path = tmp_path / "reviews.txt"
    path.write_text("".join(f"{label}|{text}\n" for label, text in ROWS), encoding="utf-8")
    return path


@pytest.fixture
def toy_format(monkeypatch):
    # Step 2: register it (a built-in one: one more Format(...) in dynadesk/formats/__init__.py)
    monkeypatch.setitem(F.FORMATS, TOY.name, TOY)
    return TOY


def test_without_the_format_the_file_is_a_tsv_and_refused(home, pipe_file):
    assert F.detect_format(pipe_file) == "tsv"
    out = CliRunner().invoke(cli, ["data", "import", str(pipe_file), "--task", "sentiment"])
    assert out.exit_code != 0 and "toy-pipe" not in out.output


def test_a_toy_format_added_by_the_guide_is_detected_and_imported(home, pipe_file, toy_format):
    assert F.detect_format(pipe_file) == "toy-pipe"
    shown = CliRunner().invoke(cli, ["data", "import", "--help"])
    assert "toy-pipe" in shown.output  # the --format choices are the registry

    out = CliRunner().invoke(cli, ["data", "import", str(pipe_file), "--task", "sentiment", "--name", "toy", "--json"])
    assert out.exit_code == 0, out.output
    result = json.loads(out.output)
    assert result["format"] == "toy-pipe" and result["format_detected"] is True

    from dynadesk.workspace import Workspace

    store = Workspace(home).open_store()
    try:
        examples = store.datasets.examples("toy")
    finally:
        store.close()
    assert [(e["label"], e["statement"]) for e in examples] == ROWS

    explicit = pipe_file.with_name("reviews.dat")  # no hook says yes to this name: --format names it
    explicit.write_bytes(pipe_file.read_bytes())
    out = CliRunner().invoke(cli, ["data", "import", str(explicit), "--task", "sentiment", "--name", "toy2",
                                   "--format", "toy-pipe", "--json"])
    assert out.exit_code == 0 and json.loads(out.output)["format_detected"] is False, out.output


def test_a_tsv_stays_a_tsv_with_the_toy_registered(tmp_path, toy_format):
    tsv = tmp_path / "plain.txt"
    tsv.write_text("statement\tlabel\ngood|bad\tpositive\n", encoding="utf-8")
    assert F.detect_format(tsv) == "tsv"
