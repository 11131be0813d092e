"""Readers for the data formats labs already have, and their detection.

``read_examples(task, path, fmt=None, mapping=Mapping())`` reads a file in any
of :data:`FORMATS` (detected when ``fmt`` is None) into validated examples,
all or nothing. docs/data-formats.md shows one example file per format.
"""

from __future__ import annotations

from pathlib import Path

from dynadesk.errors import ValidationError
from dynadesk.evaluator.registry import Registry
from dynadesk.formats.base import (
    Format,
    Mapping,
    ReadResult,
    build_examples,
    convert_native,
    parse_pairs,
)
from dynadesk.formats.delimited import (
    csv_sample,
    read_csv_rows,
    read_csv_rows_unquoted,
    read_tsv_rows,
    read_tsv_rows_unquoted,
    tsv_sample,
)
from dynadesk.formats.detect import Sniff
from dynadesk.formats.dynabench import DYNASENT_KEYS, convert_dynabench, convert_dynasent
from dynadesk.formats.dynabench_export import convert_dynabench_export, is_export_array, read_export_rows
from dynadesk.formats.dynahate import (
    convert_dynahate,
    is_dynahate,
    read_dynahate_rows,
    read_dynahate_rows_unquoted,
)
from dynadesk.formats.hf import convert_hf, convert_hf_v2, read_parquet_rows
from dynadesk.formats.jsonl import read_jsonl_rows
from dynadesk.formats.snli import convert_snli, fits_snli, read_snli_tsv_rows
from dynadesk.formats.squad import convert_squad, convert_squad_v2, fits_squad, is_squad, read_squad_rows
from dynadesk.tasks import Task

_SNLI_KEYS = {"sentence1", "sentence2", "gold_label"}
_DYNABENCH_INPUTS = {"hypothesis", "statement", "question"}


def _aqa_row(s: Sniff) -> bool:
    """A SQuAD-style question per line: ``answers`` a list of ``{text, answer_start}`` objects."""
    answers = s.first.get("answers") if isinstance(s.first, dict) else None
    return {"context", "question"} <= s.keys and isinstance(answers, list) and all(
        isinstance(a, dict) for a in answers)


def _hf_row(s: Sniff) -> bool:
    first = s.first if isinstance(s.first, dict) else {}
    return isinstance(first.get("answers"), dict) or "premise" in s.keys or isinstance(first.get("label"), int)


# The format registry: name -> Format (title, reader, converter, detect hook). The CLI's --format choices, the
# app's format box, `dynadesk tasks schema` and detection all read it. Detection asks each hook in detect_order:
# the specific formats first, then the generic ones (csv, tsv by suffix; jsonl for anything else).
# Third-party formats: a Format as a `dynadesk.formats` entry point (evaluator/registry.py).
FORMATS: Registry[Format] = Registry(
    "formats", "data format", Format,
    check=lambda name, fmt: None if fmt.name == name else f"is registered as '{name}' but names itself '{fmt.name}'")


def register_format(fmt: Format) -> Format:
    """Add (or replace) a data format; ``dynadesk data import`` detects and reads it from now on."""
    FORMATS.add(fmt.name, fmt)
    return fmt


for _fmt in (
    Format("jsonl", "DynaDesk JSON lines", read_jsonl_rows, convert_native, detect=lambda s: True, detect_order=9),
    Format("csv", "CSV with a header", read_csv_rows, convert_native, sample=csv_sample,
           detect=lambda s: s.suffix == ".csv", detect_order=5, read_unquoted=read_csv_rows_unquoted),
    Format("tsv", "TSV with a header", read_tsv_rows, convert_native, sample=tsv_sample,
           detect=lambda s: s.suffix in (".tsv", ".txt"), detect_order=5, read_unquoted=read_tsv_rows_unquoted),
    Format("dynabench", "Dynabench/ANLI JSON lines", read_jsonl_rows, convert_dynabench,
           detect=lambda s: "uid" in s.keys and bool(s.keys & _DYNABENCH_INPUTS), detect_order=3),
    Format("dynabench-export", "Dynabench platform round export (input_json/context_json)", read_export_rows,
           convert_dynabench_export, detect=lambda s: "input_json" in s.keys or (
               s.suffix in (".json", ".jsonl", "") and is_export_array(s.path))),
    Format("dynasent", "DynaSent JSON lines (rounds 1 and 2)", read_jsonl_rows, convert_dynasent,
           ("sentiment",), pre_labels=True, detect=lambda s: DYNASENT_KEYS <= s.keys, detect_order=2),
    Format("dynahate", "DynaHate CSV", read_dynahate_rows, convert_dynahate, ("hate_speech",),
           detect=lambda s: s.suffix == ".csv" and is_dynahate(s.path), read_unquoted=read_dynahate_rows_unquoted),
    Format("snli", "SNLI/MultiNLI JSON lines", read_jsonl_rows, convert_snli, ("nli",),
           detect=lambda s: _SNLI_KEYS <= s.keys, detect_order=1, fits=fits_snli),
    Format("snli-tsv", "SNLI/MultiNLI TSV", read_snli_tsv_rows, convert_snli, ("nli",),
           detect=lambda s: s.suffix in (".tsv", ".txt") and _SNLI_KEYS <= set(s.columns("\t")), fits=fits_snli,
           read_unquoted=read_snli_tsv_rows),  # always read unquoted, as published
    Format("squad", "SQuAD v1.1/v2.0 JSON", read_squad_rows, convert_squad, ("qa",), convert_v2=convert_squad_v2,
           detect=lambda s: s.suffix == ".json" and is_squad(s.path), fits=fits_squad),
    Format("aqa", "AdversarialQA / Dynabench QA JSON lines (aqa_v1.0)", read_jsonl_rows, convert_squad, ("qa",),
           convert_v2=convert_squad_v2, detect=_aqa_row, detect_order=1, fits=fits_squad),
    Format("hf", "Hugging Face datasets JSON lines", read_jsonl_rows, convert_hf, convert_v2=convert_hf_v2,
           detect=_hf_row, detect_order=4),
    Format("hf-parquet", "Hugging Face datasets Parquet", read_parquet_rows, convert_hf, convert_v2=convert_hf_v2,
           detect=lambda s: s.suffix == ".parquet"),
):
    register_format(_fmt)

__all__ = ["FORMATS", "Format", "Mapping", "ReadResult", "Sniff", "detect_format", "parse_pairs", "read_examples",
           "register_format"]


def detect_format(path: Path) -> str:
    """The format name of ``path``: the first format whose detect hook says yes, in the registry's detect order."""
    sniff = Sniff(path)
    for fmt in sorted(FORMATS.values(), key=lambda f: f.detect_order):
        if fmt.detect is not None and fmt.detect(sniff):
            return fmt.name
    raise ValidationError(f"{path}: no data format recognises this file (use --format; formats: "
                          f"{', '.join(FORMATS)})")


def read_examples(task: Task, path: str | Path, fmt: str | None = None,
                  mapping: Mapping | None = None) -> ReadResult:
    """Every example of ``path`` for ``task``; one :class:`ValidationError` lists every bad row."""
    path = Path(path)
    if not path.is_file():
        raise ValidationError(f"{path}: no such file")
    if fmt is not None and fmt not in FORMATS:
        raise ValidationError(f"{path}: unknown format '{fmt}' (use one of {', '.join(FORMATS)})")
    name = fmt or detect_format(path)
    return build_examples(task, FORMATS[name], path, mapping or Mapping(), detected=fmt is None)
