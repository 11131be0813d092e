"""`dynadesk data import` with --format/--map/--label-map, the stated format, hints that name the fix,
`dynadesk tasks show` listing the file schema, and context pools keeping the ids files give."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from dynadesk import annotation as ann
from dynadesk.errors import ValidationError
from dynadesk.formats.contexts import context_id


def run_cli(home: Path, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-c", "from dynadesk.cli import main; main()", "--home", str(home), *args],
                          capture_output=True, text=True, check=False)


def test_unknown_fields_suggest_the_mapping_that_fixes_them(home, tmp_path):
    src = tmp_path / "tweets.csv"
    src.write_text("tweet_id,tweet,sentiment\nt1,what a day,2\nt2,so bad,0\nt3,it is a day,1\n", encoding="utf-8")
    bad = run_cli(home, "data", "import", str(src), "--task", "sentiment")
    assert bad.returncode == 1
    assert "line 1: header lacks column(s) statement, label" in bad.stderr  # once, not once per row
    assert "pass --map statement=tweet --map label=sentiment --map id=tweet_id" in bad.stderr
    fixed = run_cli(home, "data", "import", str(src), "--task", "sentiment", "--map", "statement=tweet",
                    "--map", "label=sentiment", "--map", "id=tweet_id", "--json")
    assert fixed.returncode == 1 and "label 2 is a number" in fixed.stderr and "--label-map 2=LABEL" in fixed.stderr
    ok = run_cli(home, "data", "import", str(src), "--task", "sentiment", "--map", "statement=tweet",
                 "--map", "label=sentiment", "--map", "id=tweet_id", "--label-map", "0=negative",
                 "--label-map", "1=neutral", "--label-map", "2=positive")
    assert ok.returncode == 0, ok.stderr
    assert "format: csv (CSV with a header, detected)" in ok.stdout
    assert "imported 3 examples as 'tweets'" in ok.stdout
    shown = json.loads(run_cli(home, "data", "show", "tweets", "--json").stdout)
    assert shown["label_counts"] == {"negative": 1, "neutral": 1, "positive": 1}
    assert [e["id"] for e in shown["head"]] == ["t1", "t2", "t3"]


def test_label_map_for_an_unlisted_spelling_and_a_bad_pair(home, tmp_path):
    src = tmp_path / "dynasent.jsonl"
    src.write_text(json.dumps({"text_id": "r1-0001", "sentence": "Good food.", "gold_label": "positive"}) + "\n"
                   + json.dumps({"text_id": "r1-0002", "sentence": "It was fine and bad.", "gold_label": "mixed"})
                   + "\n",
                   encoding="utf-8")
    ternary = run_cli(home, "data", "import", str(src), "--task", "sentiment", "--name", "ternary")
    assert ternary.returncode == 0, ternary.stderr  # DynaSent's rule: only ternary gold labels are kept
    assert "format: dynasent" in ternary.stdout and "left out: 1 mixed-sentiment rows" in ternary.stdout
    ok = run_cli(home, "data", "import", str(src), "--task", "sentiment", "--map", "id=text_id",
                 "--label-map", "mixed=neutral", "--json")
    assert ok.returncode == 0, ok.stderr
    out = json.loads(ok.stdout)
    assert out["format"] == "dynasent" and out["label_counts"] == {"negative": 0, "neutral": 1, "positive": 1}
    pair = run_cli(home, "data", "import", str(src), "--task", "sentiment", "--map", "id")
    assert pair.returncode == 1 and "--map 'id': expected NAME=VALUE" in pair.stderr
    missing = run_cli(home, "data", "import", str(src), "--task", "sentiment", "--map", "statement=tweet")
    assert "--map statement=tweet: the row has no field 'tweet'" in missing.stderr
    jsonl = tmp_path / "tweets.jsonl"
    jsonl.write_text(json.dumps({"tweet_id": "t1", "tweet": "what a day", "sentiment": "positive"}) + "\n",
                     encoding="utf-8")
    rows = run_cli(home, "data", "import", str(jsonl), "--task", "sentiment")
    assert "line 1: unknown field(s) sentiment, tweet, tweet_id" in rows.stderr
    assert "pass --map statement=tweet --map label=sentiment --map id=tweet_id" in rows.stderr


def test_forced_format_is_stated_and_dropped_rows_counted(home, tmp_path):
    src = tmp_path / "dev.data"
    rows = [{"pairID": "p1", "sentence1": "A dog runs.", "sentence2": "An animal moves.", "gold_label": "entailment"},
            {"pairID": "p2", "sentence1": "A dog runs.", "sentence2": "A cat sleeps.", "gold_label": "-"}]
    src.write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    proc = run_cli(home, "data", "import", str(src), "--task", "nli", "--format", "snli")
    assert proc.returncode == 0, proc.stderr
    assert "format: snli (SNLI/MultiNLI JSON lines, as given)" in proc.stdout
    assert "left out: 1 no-consensus rows (gold_label '-')" in proc.stdout


def test_tasks_show_lists_the_file_schema(home):
    proc = run_cli(home, "tasks", "show", "nli")
    assert proc.returncode == 0, proc.stderr
    lines = proc.stdout.splitlines()
    assert any(line.split()[:1] == ["context"] and "premise, sentence1" in line for line in lines)
    assert "label aliases: e -> entailment, n -> neutral, c -> contradiction" in proc.stdout
    data = json.loads(run_cli(home, "tasks", "show", "qa", "--json").stdout)
    fields = {f["name"]: f for f in data["file_schema"]["fields"]}
    assert fields["answers"]["required"] and fields["answers"]["type"] == "non-empty list of strings"
    assert fields["question"]["type"] == "non-empty string" and "query" in fields["question"]["aliases"]


def _nli_round_store(store, tmp_path: Path) -> None:
    from support.tiny_models import make_tiny_classifier

    from dynadesk.models import register_model

    folder = make_tiny_classifier(tmp_path / "tiny-nli", ["entailment", "neutral", "contradiction"], task="nli")
    register_model(store, folder, "nli", name="tiny-nli")


def test_context_pool_keeps_given_ids_and_refuses_duplicates(store, tmp_path):
    _nli_round_store(store, tmp_path)
    pool = tmp_path / "pool.jsonl"
    pool.write_text('{"id": "wiki-17", "text": "A man plays a guitar."}\n'
                    '{"id": 18, "context": "Two dogs run in a park."}\n'
                    '{"text": "A woman reads."}\n', encoding="utf-8")
    rnd = ann.new_round(store, "nli", ["tiny-nli"], pool)
    assert [cid for cid, _ in store.annotation.contexts(rnd.id)] == ["wiki-17", "18", context_id("A woman reads.")]
    dup = tmp_path / "dup.jsonl"
    dup.write_text('{"id": "a", "text": "One."}\n{"id": "b", "text": "Two."}\n{"id": "a", "text": "Three."}\n'
                   '{"id": "x/y", "text": "Four."}\n', encoding="utf-8")
    with pytest.raises(ValidationError) as err:
        ann.new_round(store, "nli", ["tiny-nli"], dup)
    assert err.value.problems[0] == "line 3: duplicate context id 'a' (first: line 1)"
    assert err.value.problems[1].startswith("line 4: field 'id'")
    assert len(ann.list_rounds(store, "nli")) == 1  # the refused pool opened no round
