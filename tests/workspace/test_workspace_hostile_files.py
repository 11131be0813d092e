"""Workspace files against hand-made input: permissions, formula cells, deep JSON, hostile names."""

from __future__ import annotations

import csv
import io
import json
import stat
from pathlib import Path

import pytest
from click.testing import CliRunner

from dynadesk.errors import DynaDeskError, ValidationError
from dynadesk.workspace import Workspace

DEPTH = 100_000


def _cli(home: Path, *args: str):
    from dynadesk.cli import cli

    res = CliRunner().invoke(cli, ["--home", str(home), *args])
    res.text = res.output + ("" if res.exception is None else str(res.exception))  # type: ignore[attr-defined]
    return res


def _mode(path: Path) -> int:
    return stat.S_IMODE(path.stat().st_mode)


def _deep(depth: int = DEPTH) -> str:
    return "[" * depth + "]" * depth


def test_database_is_0600_and_folders_0700_even_when_created_loose(tmp_path: Path) -> None:
    home = tmp_path / "ws"
    st = Workspace(home).open_store()
    from dynadesk import annotation as ann

    ann.add_annotator(st, "alice")  # the HMAC secret is minted in the database
    ann.verify(st)
    st.close()
    ws = Workspace(home)
    for folder in (ws.home, ws.cache_dir, ws.models_dir, ws.runs_dir, ws.keys_dir, ws.bundles_dir, ws.images_dir):
        assert _mode(folder) == 0o700, folder
    for f in home.glob("dynadesk.db*"):
        assert _mode(f) == 0o600, f
    # a workspace made by an older version (world-readable) is tightened when opened
    (home / "dynadesk.db").chmod(0o644)
    ws.runs_dir.chmod(0o755)
    Workspace(home).open_store().close()
    assert _mode(home / "dynadesk.db") == 0o600 and _mode(ws.runs_dir) == 0o700


def test_deep_json_is_refused_with_file_and_depth_at_every_entry_point(tmp_path: Path) -> None:
    home = tmp_path / "ws"
    deep_line = tmp_path / "deep.jsonl"
    deep_line.write_text('{"statement": "x", "label": "positive", "metadata": ' + _deep() + "}\n")
    res = _cli(home, "data", "import", str(deep_line), "--task", "sentiment", "--name", "deep", "--split", "test")
    assert res.exit_code == 1 and not isinstance(res.exception, RecursionError), res.text
    assert "deep.jsonl" in res.text and "nested" in res.text and "line 1" in res.text

    deep_csv = tmp_path / "deep.csv"
    deep_csv.write_text('statement,label,metadata\nx,positive,"' + _deep() + '"\n')
    res = _cli(home, "data", "import", str(deep_csv), "--task", "sentiment", "--name", "deepcsv", "--split", "test")
    assert res.exit_code == 1 and not isinstance(res.exception, RecursionError), res.text
    assert "deep.csv" in res.text and "line 2" in res.text and "nested deeper than 64" in res.text, res.text

    deep = tmp_path / "deep.json"
    deep.write_text(_deep())
    res = _cli(home, "dynascore", str(deep))
    assert res.exit_code == 1 and "deep.json" in res.text and "nested" in res.text, res.text
    res = _cli(home, "annotate", "merge", str(deep))
    assert res.exit_code == 1 and "deep.json" in res.text and "nested" in res.text, res.text

    from dynadesk.audit.proofs import read_proof_file

    with pytest.raises(DynaDeskError, match="deep.json.*nested"):
        read_proof_file(deep)


def test_jsonio_counts_depth_outside_strings_and_keeps_shallow_documents(tmp_path: Path) -> None:
    from dynadesk.jsonio import JSONDepthError, check_depth, load_file, loads_bounded

    brackets_in_text = json.dumps({"a": "[[[[[[[[[[", "b": [1, {"c": []}]})  # 4 deep; 14 brackets
    assert loads_bounded(brackets_in_text, "x.json", max_depth=4)["b"] == [1, {"c": []}]
    check_depth(brackets_in_text.encode(), "x.json", max_depth=4)
    with pytest.raises(JSONDepthError, match=r"x\.json: JSON nested deeper than 3 levels"):
        loads_bounded(brackets_in_text, "x.json", max_depth=3)
    with pytest.raises(JSONDepthError, match=r"x\.json: JSON nested deeper than 5"):
        loads_bounded(_deep(6), "x.json", max_depth=5)
    assert loads_bounded(_deep(5), "x.json", max_depth=5) == [[[[[]]]]]
    check_depth("not json [[[[[[", "x.json", max_depth=2)  # the caller's parser reports non-JSON
    (tmp_path / "d.json").write_text(_deep())
    with pytest.raises(JSONDepthError, match="d.json: JSON nested deeper than 64"):
        load_file(tmp_path / "d.json")


@pytest.mark.parametrize("bad", ["two\nlines", "x" * 600, "../escape", "a/b", "back\\slash", "tab\there", ""])
def test_names_are_validated_where_they_enter(tmp_path: Path, bad: str) -> None:
    from dynadesk import annotation as ann
    from dynadesk.datasets import dataset_digest

    st = Workspace(tmp_path / "ws").open_store()
    examples = [{"id": "1", "statement": "fine", "label": "positive"}]
    with pytest.raises(ValidationError, match="name"):
        st.datasets.add(bad, "sentiment", "test", examples, dataset_digest(examples), {"positive": 1})
    with pytest.raises(ValidationError, match="name"):
        ann.add_annotator(st, bad)
    from support.tiny_models import make_tiny_classifier

    folder = make_tiny_classifier(tmp_path / "m", ["negative", "neutral", "positive"], task="sentiment")
    from dynadesk.models.registry import register_model

    if bad:  # an empty --name means "the folder's name"
        with pytest.raises(DynaDeskError, match="name"):
            register_model(st, folder, "sentiment", name=bad)
    assert st.datasets.list() == [] and ann.list_annotators(st) == [] and st.models.list() == []
    st.close()


def test_trailing_newline_in_a_model_or_annotator_name_is_refused(tmp_path: Path) -> None:
    res = _cli(tmp_path / "ws", "annotators", "add", "mallory\n")
    assert res.exit_code == 1 and "name" in res.text, res.text


FORMULAS = ["=HYPERLINK(\"http://x\")", "+1+1", "-2+3", "@SUM(A1)", "\tTAB"]


def test_annotation_csv_export_neutralises_formula_cells(tmp_path: Path) -> None:
    from support.tiny_models import make_tiny_classifier

    from dynadesk import annotation as ann
    from dynadesk.models import register_model

    st = Workspace(tmp_path / "ws").open_store()
    folder = make_tiny_classifier(tmp_path / "m", ["negative", "neutral", "positive"], task="sentiment")
    register_model(st, folder, "sentiment", name="tiny")
    ann.add_annotator(st, "alice")
    ann.new_round(st, "sentiment", ["tiny"])
    for text in FORMULAS:
        ann.submit_example(st, "sentiment", "alice", {"statement": text}, "positive",
                           details=ann.ExampleDetails(explanation="=cmd|' /C calc'!A0"))
    out = io.StringIO()
    ann.export_round(st, "sentiment", out, fmt="csv")
    rows = list(csv.reader(io.StringIO(out.getvalue(), newline="")))
    cells = [c for row in rows[1:] for c in row]
    assert not [c for c in cells if c[:1] in ("=", "+", "-", "@", "\t", "\r")]
    statements = [r[rows[0].index("statement")] for r in rows[1:]]
    assert sorted(statements) == sorted("'" + t for t in FORMULAS)
    # a leading CR too (not in the CSV above: write_csv leaves a bare CR unquoted, which splits the row)
    assert ann.neutralise_formulas({"statement": "\rCR", "tags": ["x"]}) == {"statement": "'\rCR", "tags": ["x"]}
    # JSONL (and --register) stay lossless: the statement is kept as written
    out = io.StringIO()
    ann.export_round(st, "sentiment", out, fmt="jsonl")
    assert sorted(json.loads(line)["statement"] for line in out.getvalue().splitlines()) == sorted(FORMULAS)
    st.close()


def test_bundles_and_server_bodies_refuse_deep_json_naming_the_limit(tmp_path: Path) -> None:
    from fastapi.testclient import TestClient

    from dynadesk.errors import BundleFormatError
    from dynadesk.jsonio import MAX_DEPTH
    from dynadesk.sync.format.envelope import parse_bundle
    from dynadesk.sync.server.app import create_app

    deep = _deep().encode()
    with pytest.raises(BundleFormatError, match=f"uploaded: JSON nested deeper than {MAX_DEPTH}"):
        parse_bundle(deep, "uploaded")
    client = TestClient(create_app(tmp_path / "server.db"), raise_server_exceptions=False)
    res = client.post("/api/bundles", content=deep, headers={"Content-Type": "application/json"})
    # the server frames the envelope by position before parsing anything (cheapest check first), so the deep
    # body is refused as malformed without ever reaching a JSON parser
    assert res.status_code == 400 and res.json()["error"] == "malformed_bundle", res.text
    client.close()


def test_deep_manifest_and_context_pool_are_refused(tmp_path: Path) -> None:
    from support.tiny_models import make_tiny_classifier

    from dynadesk import annotation as ann
    from dynadesk.errors import ModelError
    from dynadesk.models.registry import register_model
    from dynadesk.tasks import get_task

    folder = make_tiny_classifier(tmp_path / "m", ["negative", "neutral", "positive"], task="sentiment")
    (folder / "dynadesk-model.json").write_text(_deep())
    st = Workspace(tmp_path / "ws").open_store()
    with pytest.raises(ModelError, match="dynadesk-model.json.*nested deeper"):
        register_model(st, folder, "sentiment", name="deep")
    pool = tmp_path / "pool.jsonl"
    pool.write_text('{"text": "fine context"}\n' + _deep() + "\n")
    with pytest.raises(ValidationError, match="line 2: JSON nested deeper"):
        ann.read_contexts(get_task("qa"), pool)
    st.close()
