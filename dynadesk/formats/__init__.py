"""Readers for the data formats labs already have, and their detection.

``read_examples(task, path, fmt=None, mapping=Mapping())`` reads a file in any
of :data:`FORMATS` (detected when ``fmt`` is None) into validated examples,
all or nothing. docs/data-formats.md shows one example file per format.
"""

from __future__ import annotations

from pathlib import Path

from dynadesk.errors import ValidationError
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
    header,
    read_csv_rows,
    read_tsv_rows,
    tsv_sample,
)
from dynadesk.formats.dynabench import DYNASENT_KEYS, convert_dynabench, convert_dynasent
from dynadesk.formats.dynahate import convert_dynahate, is_dynahate, read_dynahate_rows
from dynadesk.formats.hf import convert_hf, convert_hf_v2, read_parquet_rows
from dynadesk.formats.jsonl import first_object, read_jsonl_rows
from dynadesk.formats.snli import convert_snli, read_snli_tsv_rows
from dynadesk.formats.squad import convert_squad, convert_squad_v2, is_squad, read_squad_rows
from dynadesk.tasks import Task

FORMATS: dict[str, Format] = {f.name: f for f in (
    Format("jsonl", "DynaDesk JSON lines", read_jsonl_rows, convert_native),
    Format("csv", "CSV with a header", read_csv_rows, convert_native, sample=csv_sample),
    Format("tsv", "TSV with a header", read_tsv_rows, convert_native, sample=tsv_sample),
    Format("dynabench", "Dynabench/ANLI JSON lines", read_jsonl_rows, convert_dynabench),
    Format("dynasent", "DynaSent JSON lines (rounds 1 and 2)", read_jsonl_rows, convert_dynasent,
           ("sentiment",), pre_labels=True),
    Format("dynahate", "DynaHate CSV", read_dynahate_rows, convert_dynahate, ("hate_speech",)),
    Format("snli", "SNLI/MultiNLI JSON lines", read_jsonl_rows, convert_snli, ("nli",)),
    Format("snli-tsv", "SNLI/MultiNLI TSV", read_snli_tsv_rows, convert_snli, ("nli",)),
    Format("squad", "SQuAD v1.1/v2.0 JSON", read_squad_rows, convert_squad, ("qa",), convert_v2=convert_squad_v2),
    Format("hf", "Hugging Face datasets JSON lines", read_jsonl_rows, convert_hf, convert_v2=convert_hf_v2),
    Format("hf-parquet", "Hugging Face datasets Parquet", read_parquet_rows, convert_hf, convert_v2=convert_hf_v2),
)}

_SNLI_KEYS = {"sentence1", "sentence2", "gold_label"}
_DYNABENCH_INPUTS = {"hypothesis", "statement", "question"}

__all__ = ["FORMATS", "Format", "Mapping", "ReadResult", "detect_format", "parse_pairs",
           "read_examples"]


def _detect_jsonl(path: Path) -> str:
    obj = first_object(path)
    if not isinstance(obj, dict):
        return "jsonl"
    keys = set(obj)
    if _SNLI_KEYS <= keys:
        return "snli"
    if DYNASENT_KEYS <= keys:
        return "dynasent"
    if "uid" in keys and keys & _DYNABENCH_INPUTS:
        return "dynabench"
    if isinstance(obj.get("answers"), dict) or "premise" in keys or isinstance(obj.get("label"), int):
        return "hf"
    return "jsonl"


def detect_format(path: Path) -> str:
    """The format name of ``path``, from its extension and its first record."""
    suffix = path.suffix.lower()
    if suffix == ".parquet":
        return "hf-parquet"
    if suffix == ".csv":
        return "dynahate" if is_dynahate(path) else "csv"
    if suffix in (".tsv", ".txt"):
        return "snli-tsv" if _SNLI_KEYS <= set(header(path, "\t")) else "tsv"
    if suffix == ".json" and is_squad(path):
        return "squad"
    return _detect_jsonl(path)


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
