"""Writes the fidelity table of docs/data-formats.md: every published format read, its source, and for its
sample file (the page's own example block, in the published layout) the rows in the file, the rows read and
the rows left out per reason.

The rows in a file are counted independently of the reader (JSON lines: non-empty lines; a table: records
after the header; SQuAD: questions; an export array: its items), and ``tests/formats/test_formats_fidelity.py``
fails when read + left out differs from that count (a row lost without a word) or when the committed table
differs from what this prints. Run ``python packaging/gen_fidelity_table.py`` after changing a reader or a
sample.
"""

from __future__ import annotations

import csv
import io
import json
import re
import sys
import tempfile
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
DOC = ROOT / "docs" / "data-formats.md"
BEGIN, END = "<!-- fidelity:begin -->", "<!-- fidelity:end -->"
EXAMPLE = re.compile(r"<!-- example: (?P<attrs>[^>]*?) -->\n```[a-z]*\n(?P<body>.*?)\n```", re.DOTALL)

# Where each format's layout is published (the sample blocks copy it, field names and label spellings as is).
SOURCES = {
    "jsonl": "DynaDesk's own `data export`",
    "csv": "any CSV with a header (spreadsheets, pandas `to_csv`)",
    "tsv": "any TSV with a header (GLUE-style files)",
    "dynabench": "ANLI v1.0 `R1/dev.jsonl`; Dynabench's own eval files (facebookresearch/dynabench)",
    "dynabench-export": "Dynabench's round export (`get_round_data_for_export`, facebookresearch/dynabench)",
    "dynasent": "DynaSent v1.1 rounds 1 and 2 (cgpotts/dynasent)",
    "dynahate": "Dynamically Generated Hate Dataset v0.2.3 CSV (bvidgen/Dynamically-Generated-Hate-Speech-Dataset)",
    "snli": "SNLI 1.0 / MultiNLI 1.0 `*.jsonl`",
    "snli-tsv": "SNLI 1.0 `*.txt` / MultiNLI 1.0 `*.tsv`",
    "squad": "SQuAD v1.1 / v2.0 JSON (rajpurkar.github.io/SQuAD-explorer)",
    "aqa": "AdversarialQA `aqa_v1.0` rows as Dynabench's QA loader reads them (`round1/test.jsonl`)",
    "hf": "Hugging Face `datasets` `Dataset.to_json()` (squad_v2, snli, glue/sst2)",
}


def examples(text: str) -> list[tuple[dict[str, str], str]]:
    out = []
    for m in EXAMPLE.finditer(text):
        attrs = dict(a.split("=", 1) for a in m.group("attrs").split())
        out.append((attrs, m.group("body") + "\n"))
    return out


def rows_in_file(fmt: str, body: str) -> int:
    """The records of a sample, counted without the reader: what an import must account for, row by row."""
    stripped = body.lstrip()
    if fmt == "squad":
        return sum(len(p["qas"]) for a in json.loads(body)["data"] for p in a["paragraphs"])
    if stripped.startswith("["):
        return len(json.loads(body))
    if fmt in ("csv", "dynahate"):
        return len(list(csv.reader(io.StringIO(body)))) - 1
    if fmt in ("tsv", "snli-tsv"):
        return sum(1 for line in body.splitlines()[1:] if line.strip())
    return sum(1 for line in body.splitlines() if line.strip())


def measure(attrs: dict[str, str], body: str) -> dict[str, Any]:
    """Read one sample as DynaDesk does (its stated format and --label-map): rows read and left out per reason."""
    from dynadesk.data import by_source_split
    from dynadesk.formats import Mapping, parse_pairs, read_examples
    from dynadesk.tasks import get_task

    labels = parse_pairs(attrs["label-map"].split(","), "--label-map") if "label-map" in attrs else {}
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / attrs["file"]
        path.write_text(body, encoding="utf-8")
        result = read_examples(get_task(attrs["task"]), path, attrs["format"], Mapping(labels=labels))
    splits = {s: len(rows) for s, rows in by_source_split(result.examples).items()}
    return {"format": attrs["format"], "task": attrs["task"], "file": attrs["file"],
            "rows": rows_in_file(attrs["format"], body), "read": len(result.examples),
            "dropped": dict(result.dropped), "splits": splits}


def measurements(text: str | None = None) -> list[dict[str, Any]]:
    return [measure(a, b) for a, b in examples(DOC.read_text(encoding="utf-8") if text is None else text)]


def render_table(items: list[dict[str, Any]]) -> str:
    lines = [BEGIN, "| `--format` | published layout (source) | sample (task) | rows in file | rows read | "
             "left out, per reason |", "|---|---|---|---|---|---|"]
    for m in items:
        left = "; ".join(f"{n} {reason}" for reason, n in m["dropped"].items()) or "none"
        read = str(m["read"])
        if len(m["splits"]) > 1:
            read += " (" + ", ".join(f"{n} {s}" for s, n in m["splits"].items()) + ": one split per dataset)"
        lines.append(f"| `{m['format']}` | {SOURCES.get(m['format'], '')} | `{m['file']}` ({m['task']}) | "
                     f"{m['rows']} | {read} | {left} |")
    lines.append(END)
    return "\n".join(lines)


def render(text: str | None = None) -> str:
    """The page with its fidelity table regenerated."""
    text = DOC.read_text(encoding="utf-8") if text is None else text
    start, end = text.index(BEGIN), text.index(END) + len(END)
    return text[:start] + render_table(measurements(text)) + text[end:]


if __name__ == "__main__":
    new = render()
    if "--check" in sys.argv[1:]:
        sys.exit(0 if new == DOC.read_text(encoding="utf-8") else 1)
    DOC.write_text(new, encoding="utf-8")
    print(f"wrote {DOC}")
