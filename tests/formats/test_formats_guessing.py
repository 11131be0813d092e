"""Readers that never guess: a lone quote that would merge rows is refused naming its physical line (or read
as text with --quoting none), later refusals name their own lines, gzip and a BOM read transparently."""

from __future__ import annotations

import gzip
import json
from pathlib import Path

import pytest
from test_formats_cli import run_cli

from dynadesk.data import FileReading, import_file
from dynadesk.errors import ValidationError
from dynadesk.formats import Mapping, detect_format

# SST/tweet-style TSV: row 2's text opens with a lone '"' (a quotation that is never closed in the cell).
TWEETS_TSV = ("id\tstatement\tlabel\n"
              "t1\tgreat film\tpositive\n"
              "t2\t\"the best\" is not what I would call it\tnegative\n"
              "t3\t\"so-called fun\tnegative\n"
              "t4\tfine, I guess\tneutral\n"
              "t5\tloved it\tpositive\n")


def test_a_lone_quote_in_a_tsv_is_refused_naming_its_line_and_the_option(store, tmp_path):
    path = tmp_path / "tweets.tsv"
    path.write_text(TWEETS_TSV, encoding="utf-8")
    with pytest.raises(ValidationError) as err:
        import_file(store, "sentiment", path, name="tweets")
    problems = err.value.problems
    assert len(problems) == 1 and problems[0].startswith("line 4: a cell opens a quote"), problems
    assert "--quoting none" in problems[0] and "line 5 reads as a row by itself" in problems[0]
    assert "tweets" not in [d.name for d in store.datasets.list()]


def test_quoting_none_reads_every_row_with_its_own_label(store, tmp_path):
    path = tmp_path / "tweets.tsv"
    path.write_text(TWEETS_TSV, encoding="utf-8")
    outcome = import_file(store, "sentiment", path, name="tweets",
                          reading=FileReading(mapping=Mapping(quoting="none")))
    examples = store.datasets.examples("tweets")
    assert outcome.summary.size == 5
    assert [(e["id"], e["label"]) for e in examples] == [
        ("t1", "positive"), ("t2", "negative"), ("t3", "negative"), ("t4", "neutral"), ("t5", "positive")]
    assert examples[2]["statement"] == '"so-called fun'


def test_an_unclosed_csv_quote_is_refused_in_the_cli_and_later_errors_name_their_physical_lines(home, tmp_path):
    path = tmp_path / "reviews.csv"
    path.write_text("id,statement,label\n"
                    "b1,\"a fine, quoted cell\",positive\n"
                    "b2,\"unclosed quote here,negative\n"
                    "b3,\"ok\",neutral\n"
                    "b4,\"spans\ntwo lines\",positive\n"
                    "b5,too,many,cells\n", encoding="utf-8")
    res = run_cli(home, "data", "import", str(path), "--task", "sentiment")
    assert res.returncode == 1
    assert "line 3: a cell opens a quote" in res.stderr and "--quoting none" in res.stderr
    assert "line 7: more cells than header columns" in res.stderr  # the physical line, after a 2-line cell
    assert "- line 4" not in res.stderr and "- line 5" not in res.stderr  # b3 and b4 are good rows
    listed = run_cli(home, "data", "list", "--json")
    assert json.loads(listed.stdout) == [] or all(d["name"] != "reviews" for d in json.loads(listed.stdout))


def test_a_quoted_cell_spanning_lines_is_still_read_when_no_row_is_swallowed(store, tmp_path):
    path = tmp_path / "notes.csv"
    path.write_text("id,statement,label\nn1,\"first line\nsecond line\",positive\nn2,plain,negative\n",
                    encoding="utf-8")
    outcome = import_file(store, "sentiment", path, name="notes")
    assert outcome.summary.size == 2
    assert store.datasets.examples("notes")[0]["statement"] == "first line\nsecond line"


def _gzip(path: Path, data: bytes) -> Path:
    with gzip.open(path, "wb") as fh:
        fh.write(data)
    return path


ROWS = [{"id": "s1", "statement": "good", "label": "positive"}, {"id": "s2", "statement": "bad", "label": "negative"}]


def test_gzip_and_a_bom_read_transparently_for_json_lines_and_tables(store, tmp_path):
    text = "".join(json.dumps(r) + "\n" for r in ROWS).encode("utf-8")
    bom = b"\xef\xbb\xbf"
    plain = import_file(store, "sentiment", _write(tmp_path / "plain.jsonl", text), name="plain").summary
    for name, path in [("bom", _write(tmp_path / "bom.jsonl", bom + text)),
                       ("gz", _gzip(tmp_path / "gz.jsonl.gz", text)),
                       ("gzbom", _gzip(tmp_path / "gzbom.jsonl.gz", bom + text))]:
        assert detect_format(path) == "jsonl"
        outcome = import_file(store, "sentiment", path, name=name)
        assert outcome.summary.digest == plain.digest and outcome.summary.size == 2
    table = b"id,statement,label\ns1,good,positive\ns2,bad,negative\n"
    path = _gzip(tmp_path / "t.csv.gz", bom + table)
    assert detect_format(path) == "csv"
    outcome = import_file(store, "sentiment", path)
    assert outcome.summary.digest == plain.digest and outcome.summary.name == "t"  # named as t.csv would be


def test_a_damaged_gzip_file_is_refused_in_one_line(store, tmp_path):
    data = gzip.compress(b"".join(json.dumps(r).encode() + b"\n" for r in ROWS * 50))
    path = _write(tmp_path / "cut.jsonl.gz", data[: len(data) // 2])
    with pytest.raises(ValidationError, match="gzip stream is damaged or cut short"):
        import_file(store, "sentiment", path, name="cut", reading=FileReading("jsonl"))


def _write(path: Path, data: bytes) -> Path:
    path.write_bytes(data)
    return path


GLUE_MNLI_TEST = ("index\tpromptID\tpairID\tgenre\tsentence1_binary_parse\tsentence2_binary_parse\tsentence1_parse\t"
                  "sentence2_parse\tsentence1\tsentence2\n"
                  "0\t31193\t31193n\tgovernment\t( x )\t( y )\t(ROOT x)\t(ROOT y)\t"
                  "Conceptually cream skimming has two basic dimensions.\t"
                  "Product and geography are what make it work.\n")


def test_the_glue_test_split_hint_never_proposes_an_id_column_as_the_label(home, tmp_path):
    path = tmp_path / "test_matched.tsv"
    path.write_text(GLUE_MNLI_TEST, encoding="utf-8")
    res = run_cli(home, "data", "import", str(path), "--task", "nli")
    assert res.returncode == 1
    assert "label=promptID" not in res.stderr and "label=index" not in res.stderr
    assert "no column holds the gold label" in res.stderr


def test_a_swallowed_row_with_its_own_quoted_comma_is_still_named(store, tmp_path):
    path = tmp_path / "r.csv"
    path.write_text('id,statement,label\nb2,"unclosed quote here,negative\nb3,"ok, fine",neutral\n'
                    "b4,good,positive\n", encoding="utf-8")
    with pytest.raises(ValidationError) as err:
        import_file(store, "sentiment", path, name="r")
    assert err.value.problems == [err.value.problems[0]] and err.value.problems[0].startswith(
        "line 2: a cell opens a quote ('\"') that is not closed on this line, so lines 2-")
    assert "line 3 reads as a row by itself" in err.value.problems[0]
