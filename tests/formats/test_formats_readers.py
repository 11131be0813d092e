"""Public data formats, written exactly as published (field names, nesting, label spellings), imported
with detection: counts, labels, answers, dropped rows and digests; export -> import keeps the digest."""

from __future__ import annotations

import importlib.util
import json
from pathlib import Path
from typing import Any

import pytest

from dynadesk.data import FileReading, export_dataset, import_file
from dynadesk.datasets import dataset_digest
from dynadesk.errors import ValidationError
from dynadesk.formats import detect_format
from dynadesk.formats.squad import UNANSWERABLE


def _jsonl(path: Path, rows: list[dict[str, Any]]) -> Path:
    path.write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    return path


def _round_trip(store: Any, name: str, task: str, tmp_path: Path) -> None:
    """Export as JSONL and as CSV, re-import each: the digest and the examples are the same."""
    original = store.datasets.get(name)
    for fmt in ("jsonl", "csv"):
        out = tmp_path / f"{name}-export.{fmt}"
        export_dataset(store, name, out)
        again = import_file(store, task, out, name=f"{name}-again-{fmt}")
        assert again.format == fmt and again.detected
        assert again.summary.digest == original.digest
        assert store.datasets.examples(f"{name}-again-{fmt}") == store.datasets.examples(name)


ANLI_ROWS = [
    {"uid": "0fd0abfb-659e-4453-b196-c3a64d2d8267",
     "context": "The Parma trolleybus system comprises four urban routes.",
     "hypothesis": "The trolleybus system has over 2 urban routes", "label": "e",
     "reason": "The context states four routes, which is over 2.", "model_label": "n", "emturk": False,
     "genre": "wiki", "tag": "Numerical"},
    {"uid": "7ed72ff4-40b7-4f8a-b1b9-6c612aa62c84", "context": "Alexandra Lendon Bastedo was an English actress.",
     "hypothesis": "Sharron Macready was a popular character.", "label": "n", "reason": "Not stated."},
    {"uid": "5d2930a3-562b-4a4b-9fda-7b7d2dcb4c11", "context": "Alexandra Lendon Bastedo was an English actress.",
     "hypothesis": "Bastedo was French.", "label": "c", "reason": "She was English."},
]


def test_anli_dynabench_jsonl(store, tmp_path):
    path = _jsonl(tmp_path / "anli_r1_dev.jsonl", ANLI_ROWS)
    assert detect_format(path) == "dynabench"
    outcome = import_file(store, "nli", path, name="anli")
    assert outcome.format == "dynabench" and outcome.detected and outcome.dropped == {}
    s = outcome.summary
    assert s.size == 3 and s.label_counts == {"entailment": 1, "neutral": 1, "contradiction": 1}
    first = {"id": ANLI_ROWS[0]["uid"], "context": ANLI_ROWS[0]["context"], "hypothesis": ANLI_ROWS[0]["hypothesis"],
             "label": "entailment", "metadata": {"reason": ANLI_ROWS[0]["reason"], "model_label": "n",
                                                 "emturk": False, "genre": "wiki", "tag": "Numerical"}}
    examples = store.datasets.examples("anli")
    assert examples[0] == first
    assert [e["label"] for e in examples] == ["entailment", "neutral", "contradiction"]
    assert s.digest == dataset_digest(examples)
    _round_trip(store, "anli", "nli", tmp_path)


SNLI_ROWS = [
    {"annotator_labels": ["neutral", "entailment", "neutral", "neutral", "neutral"], "captionID": "4705552913.jpg#2",
     "gold_label": "neutral", "pairID": "4705552913.jpg#2r1n",
     "sentence1": "Two women are embracing while holding to go packages.",
     "sentence1_binary_parse": "( ( Two women ) ( ( are ( embracing ( while ( holding ( to ( go packages ) ) ) ) ) )"
                               " . ) )",
     "sentence1_parse": "(ROOT (S (NP (CD Two) (NNS women)) (VP (VBP are) (VP (VBG embracing))) (. .)))",
     "sentence2": "The sisters are hugging goodbye while holding to go packages after just eating lunch.",
     "sentence2_binary_parse": "( ( The sisters ) ( ( are ( hugging goodbye ) ) . ) )",
     "sentence2_parse": "(ROOT (S (NP (DT The) (NNS sisters)) (VP (VBP are)) (. .)))"},
    {"annotator_labels": ["entailment", "entailment", "entailment", "entailment", "entailment"],
     "captionID": "4705552913.jpg#2", "gold_label": "entailment", "pairID": "4705552913.jpg#2r1e",
     "sentence1": "Two women are embracing while holding to go packages.", "sentence1_binary_parse": "( x )",
     "sentence1_parse": "(ROOT x)", "sentence2": "Two woman are holding packages.", "sentence2_binary_parse": "( y )",
     "sentence2_parse": "(ROOT y)"},
    {"annotator_labels": ["contradiction", "neutral", "entailment", "neutral", "contradiction"],
     "captionID": "2407214681.jpg#0", "gold_label": "-", "pairID": "2407214681.jpg#0r1c",
     "sentence1": "Two young children in blue jerseys are standing on wooden steps.", "sentence1_binary_parse": "( x )",
     "sentence1_parse": "(ROOT x)", "sentence2": "Two kids in jackets walk to school.",
     "sentence2_binary_parse": "( y )", "sentence2_parse": "(ROOT y)"},
    {"annotator_labels": ["contradiction"], "captionID": "2407214681.jpg#0", "gold_label": "contradiction",
     "pairID": "2407214681.jpg#0r1c2", "sentence1": "Two young children in blue jerseys are standing on wooden steps.",
     "sentence1_binary_parse": "( x )", "sentence1_parse": "(ROOT x)", "sentence2": "The kids are sleeping.",
     "sentence2_binary_parse": "( y )", "sentence2_parse": "(ROOT y)"},
]


def test_snli_jsonl_drops_and_counts_no_consensus(store, tmp_path):
    path = _jsonl(tmp_path / "snli_1.0_dev.jsonl", SNLI_ROWS)
    assert detect_format(path) == "snli"
    outcome = import_file(store, "nli", path, name="snli")
    assert outcome.dropped == {"no-consensus rows (gold_label '-')": 1}
    examples = store.datasets.examples("snli")
    assert [e["id"] for e in examples] == ["4705552913.jpg#2r1n", "4705552913.jpg#2r1e", "2407214681.jpg#0r1c2"]
    assert examples[0] == {"id": "4705552913.jpg#2r1n", "context": SNLI_ROWS[0]["sentence1"],
                           "hypothesis": SNLI_ROWS[0]["sentence2"], "label": "neutral",
                           "metadata": {"annotator_labels": SNLI_ROWS[0]["annotator_labels"],
                                        "captionID": "4705552913.jpg#2"}}
    assert outcome.summary.label_counts == {"entailment": 1, "neutral": 1, "contradiction": 1}
    assert outcome.summary.digest == dataset_digest(examples)
    _round_trip(store, "snli", "nli", tmp_path)


def test_mnli_jsonl_keeps_genre_and_prompt(store, tmp_path):
    row = {"annotator_labels": ["neutral"], "genre": "government", "gold_label": "neutral", "pairID": "31193n",
           "promptID": "31193",
           "sentence1": "Conceptually cream skimming has two basic dimensions - product and geography.",
           "sentence1_binary_parse": "( x )", "sentence1_parse": "(ROOT x)",
           "sentence2": "Product and geography are what make cream skimming work. ",
           "sentence2_binary_parse": "( y )", "sentence2_parse": "(ROOT y)"}
    outcome = import_file(store, "nli", _jsonl(tmp_path / "multinli_1.0_dev_matched.jsonl", [row]), name="mnli")
    assert outcome.format == "snli"
    assert store.datasets.examples("mnli") == [
        {"id": "31193n", "context": row["sentence1"], "hypothesis": row["sentence2"], "label": "neutral",
         "metadata": {"annotator_labels": ["neutral"], "genre": "government", "promptID": "31193"}}]


SNLI_TSV = (
    "gold_label\tsentence1_binary_parse\tsentence2_binary_parse\tsentence1_parse\tsentence2_parse\tsentence1\t"
    "sentence2\tcaptionID\tpairID\tlabel1\tlabel2\tlabel3\tlabel4\tlabel5\n"
    "neutral\t( ( Two women ) )\t( ( The sisters ) )\t(ROOT x)\t(ROOT y)\t"
    "Two women are embracing while holding to go packages.\t"
    "The sisters are hugging goodbye while holding to go packages after just eating lunch.\t"
    "4705552913.jpg#2\t4705552913.jpg#2r1n\tneutral\tentailment\tneutral\tneutral\tneutral\n"
    "-\t( x )\t( y )\t(ROOT x)\t(ROOT y)\tTwo young children in blue jerseys.\tTwo kids walk.\t"
    "2407214681.jpg#0\t2407214681.jpg#0r1c\tcontradiction\tneutral\tentailment\tneutral\tcontradiction\n"
    "contradiction\t( x )\t( y )\t(ROOT x)\t(ROOT y)\tA \"quoted\" man sleeps.\tThe man runs.\t"
    "1.jpg#0\t1.jpg#0r1c\tcontradiction\t\t\t\t\n")

MNLI_TSV = (
    "index\tpromptID\tpairID\tgenre\tsentence1_binary_parse\tsentence2_binary_parse\tsentence1_parse\t"
    "sentence2_parse\tsentence1\tsentence2\tlabel1\tlabel2\tlabel3\tlabel4\tlabel5\tgold_label\n"
    "0\t63735\t63735n\tslate\t( x )\t( y )\t(ROOT x)\t(ROOT y)\t"
    "The new rights are nice enough\tEveryone really likes the newest benefits \t"
    "neutral\tentailment\tneutral\tneutral\tneutral\tneutral\n"
    "1\t91383\t91383c\tgovernment\t( x )\t( y )\t(ROOT x)\t(ROOT y)\t"
    "This site includes a list of all award winners and a searchable database of Government Executive articles.\t"
    "The Government Executive articles housed on the website are not able to be searched .\t"
    "contradiction\tcontradiction\tcontradiction\tcontradiction\tcontradiction\tcontradiction\n")


def test_snli_and_mnli_tsv(store, tmp_path):
    snli = tmp_path / "snli_1.0_dev.txt"
    snli.write_text(SNLI_TSV, encoding="utf-8")
    assert detect_format(snli) == "snli-tsv"
    outcome = import_file(store, "nli", snli, name="snli-tsv")
    assert outcome.dropped == {"no-consensus rows (gold_label '-')": 1}
    examples = store.datasets.examples("snli-tsv")
    assert examples[0]["metadata"] == {"captionID": "4705552913.jpg#2",
                                       "annotator_labels": ["neutral", "entailment", "neutral", "neutral", "neutral"]}
    assert examples[1]["context"] == 'A "quoted" man sleeps.'  # published TSV cells are not quoted
    assert examples[1]["metadata"]["annotator_labels"] == ["contradiction"]
    assert outcome.summary.digest == dataset_digest(examples)
    mnli = tmp_path / "dev_matched.tsv"
    mnli.write_text(MNLI_TSV, encoding="utf-8")
    m = import_file(store, "nli", mnli, name="mnli-tsv")
    assert m.format == "snli-tsv" and m.summary.size == 2
    assert m.summary.label_counts == {"entailment": 0, "neutral": 1, "contradiction": 1}
    assert store.datasets.examples("mnli-tsv")[1]["metadata"]["genre"] == "government"
    _round_trip(store, "mnli-tsv", "nli", tmp_path)


CONTEXT = ("The Normans were the people who in the 10th and 11th centuries gave their name to Normandy, "
           "a region in France.")


def _squad(version: str) -> dict[str, Any]:
    qas: list[dict[str, Any]] = [
        {"question": "In what country is Normandy located?", "id": "56ddde6b9a695914005b9628",
         "answers": [{"text": "France", "answer_start": 104}, {"text": "France", "answer_start": 104},
                     {"text": "a region in France", "answer_start": 92}]},
        {"question": "When were the Normans in Normandy?", "id": "56ddde6b9a695914005b9629",
         "answers": [{"text": "10th and 11th centuries", "answer_start": 43}]},
    ]
    if version == "v2.0":
        for qa in qas:
            qa["is_impossible"] = False
        qas.append({"plausible_answers": [{"text": "Normans", "answer_start": 4}],
                    "question": "Who gave their name to Normandy in the 1000's and 1100's",
                    "id": "5ad39d53604f3c001a3fe8d1",
                    "answers": [], "is_impossible": True})
    return {"version": version, "data": [{"title": "Normans", "paragraphs": [{"qas": qas, "context": CONTEXT}]}]}


@pytest.mark.parametrize("version", ["1.1", "v2.0"])
def test_squad_json(store, tmp_path, version):
    path = tmp_path / f"dev-{version}.json"
    path.write_text(json.dumps(_squad(version)), encoding="utf-8")
    assert detect_format(path) == "squad"
    outcome = import_file(store, "qa", path, name="squad")
    assert outcome.format == "squad"
    assert outcome.dropped == ({UNANSWERABLE: 1} if version == "v2.0" else {})
    examples = store.datasets.examples("squad")
    assert examples == [
        {"id": "56ddde6b9a695914005b9628", "context": CONTEXT, "question": "In what country is Normandy located?",
         "answers": ["France", "France", "a region in France"],
         "metadata": {"title": "Normans", "answer_start": [104, 104, 92]}},
        {"id": "56ddde6b9a695914005b9629", "context": CONTEXT, "question": "When were the Normans in Normandy?",
         "answers": ["10th and 11th centuries"], "metadata": {"title": "Normans", "answer_start": [43]}}]
    assert outcome.summary.digest == dataset_digest(examples)
    _round_trip(store, "squad", "qa", tmp_path)


def test_squad_structure_errors_name_their_place(store, tmp_path):
    doc = _squad("v2.0")
    doc["data"].append({"title": "Broken", "paragraphs": [{"context": CONTEXT, "qas": [
        {"question": "Where?", "id": "q-bad", "answers": [{"text": "Spain", "answer_start": 0}]}]}, "oops"]})
    path = tmp_path / "broken.json"
    path.write_text(json.dumps(doc), encoding="utf-8")
    with pytest.raises(ValidationError) as err:
        import_file(store, "qa", path, reading=FileReading("squad"))
    assert [p.split(":")[0] for p in err.value.problems] == ["data[1].paragraphs[0].qas[0]", "data[1].paragraphs[1]"]
    assert "Spain" in err.value.problems[0]
    assert store.datasets.list() == []


def test_hf_squad_rows_and_snli_rows(store, tmp_path):
    rows = [
        {"id": "56ddde6b9a695914005b9628", "title": "Normans", "context": CONTEXT,
         "question": "In what country is Normandy located?",
         "answers": {"text": ["France", "a region in France"], "answer_start": [104, 92]}},
        {"id": "5ad39d53604f3c001a3fe8d1", "title": "Normans", "context": CONTEXT,
         "question": "Who gave their name to Normandy in the 1000's and 1100's",
         "answers": {"text": [], "answer_start": []}},
    ]
    path = _jsonl(tmp_path / "squad_v2-validation.jsonl", rows)
    assert detect_format(path) == "hf"
    outcome = import_file(store, "qa", path, name="hf-squad")
    assert outcome.dropped == {UNANSWERABLE: 1}
    assert store.datasets.examples("hf-squad") == [
        {"id": "56ddde6b9a695914005b9628", "context": CONTEXT, "question": "In what country is Normandy located?",
         "answers": ["France", "a region in France"], "metadata": {"title": "Normans", "answer_start": [104, 92]}}]
    nli = _jsonl(tmp_path / "snli-validation.jsonl", [
        {"premise": "Two women are embracing.", "hypothesis": "The sisters are hugging.", "label": 1},
        {"premise": "Two women are embracing.", "hypothesis": "Two women hold packages.", "label": 0},
        {"premise": "Kids on steps.", "hypothesis": "Kids walk.", "label": -1},
        {"premise": "Kids on steps.", "hypothesis": "The kids are sleeping.", "label": 2},
    ])
    h = import_file(store, "nli", nli, name="hf-snli")
    assert h.format == "hf" and h.dropped == {"rows without a gold label (label -1)": 1}
    assert [(e["id"], e["label"]) for e in store.datasets.examples("hf-snli")] == [
        ("1", "neutral"), ("2", "entailment"), ("4", "contradiction")]
    _round_trip(store, "hf-snli", "nli", tmp_path)


def test_parquet_needs_pyarrow_or_reads_rows(store, tmp_path):
    path = tmp_path / "validation.parquet"
    if importlib.util.find_spec("pyarrow") is None:
        path.write_bytes(b"PAR1 not really")
        with pytest.raises(ValidationError, match=r"needs pyarrow.*pip install pyarrow"):
            import_file(store, "nli", path)
        return
    import pyarrow as pa
    import pyarrow.parquet as pq

    pq.write_table(pa.Table.from_pylist([{"premise": "A man sleeps.", "hypothesis": "A man rests.", "label": 0}]),
                   path)
    assert import_file(store, "nli", path).summary.label_counts["entailment"] == 1
    qa = tmp_path / "squad-validation.parquet"  # what datasets' `to_parquet()` writes for SQuAD v2
    pq.write_table(pa.Table.from_pylist([
        {"id": "q1", "title": "Nile", "context": "The Nile flows north into the Mediterranean Sea.",
         "question": "Where does the Nile flow?", "answers": {"text": ["north", "into the Mediterranean Sea"],
                                                               "answer_start": [10, 16]}},
        {"id": "q2", "title": "Nile", "context": "The Nile flows north into the Mediterranean Sea.",
         "question": "Who built the Nile?", "answers": {"text": [], "answer_start": []}}]), qa)
    res = import_file(store, "qa", qa)
    assert res.format == "hf-parquet" and res.summary.size == 1 and sum(res.dropped.values()) == 1
    assert store.datasets.examples(res.summary.name)[0]["answers"] == ["north", "into the Mediterranean Sea"]


def test_csv_and_tsv_with_header_and_public_label_spellings(store, tmp_path):
    csv_path = tmp_path / "reviews.csv"
    csv_path.write_text('id,text,label\nr1,"Loved it, truly",positive\nr2,meh,neutral\n', encoding="utf-8")
    c = import_file(store, "sentiment", csv_path, name="reviews")
    assert c.format == "csv" and c.summary.label_counts == {"negative": 0, "neutral": 1, "positive": 1}
    assert store.datasets.examples("reviews")[0] == {"id": "r1", "statement": "Loved it, truly", "label": "positive"}
    tsv = tmp_path / "dynahate.tsv"
    tsv.write_text("id\ttext\tlabel\nh1\tI love my neighbours\tnothate\nh2\tThey are vermin\thate\n", encoding="utf-8")
    t = import_file(store, "hate_speech", tsv, name="dynahate")
    assert t.format == "tsv" and t.summary.label_counts == {"not-hateful": 1, "hateful": 1}
    _round_trip(store, "dynahate", "hate_speech", tmp_path)


def test_format_for_another_task_is_refused_with_the_fix(store, tmp_path):
    path = _jsonl(tmp_path / "anli.jsonl", ANLI_ROWS)
    with pytest.raises(ValidationError, match="holds nli examples, not qa ones \\(pass --task nli"):
        # dynabench covers every task; its rows then fail by field
        import_file(store, "qa", path, reading=FileReading("snli"))


def test_qa_csv_with_one_answer_column(store, tmp_path):
    path = tmp_path / "qa.csv"
    path.write_text("id,context,question,answer\nq1,Paris is in France.,Where is Paris?,France\n", encoding="utf-8")
    assert store.datasets.examples(import_file(store, "qa", path).summary.name)[0]["answers"] == ["France"]
    bad = tmp_path / "noq.csv"
    bad.write_text("id,context,query_text,answer\nq1,Paris is in France.,Where is Paris?,France\n", encoding="utf-8")
    with pytest.raises(ValidationError,
                       match="line 1: header lacks column\\(s\\) question; .*--map question=query_text"):
        import_file(store, "qa", bad)
