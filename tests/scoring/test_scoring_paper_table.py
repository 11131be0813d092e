"""The Dynaboard paper's own numbers through DynaDesk's Dynaboard rule (issue 44, "the Table 2 check").

The rows are the paper's NLI leaderboard (Ma et al. 2021, the NeurIPS version's results table, NLI part: perf,
throughput, memory, fairness, robustness of seven models, rounded as printed). The reference output is what the
scoring of Christopher Potts (a co-author), published as CS224u's ``dynascoring.ipynb`` (Spring 2023), printed for
those rows with weights perf 4 and 1 for each other metric: every converted value and every Dynascore, to the six
decimals it shows. That implementation takes memory as ``memory + 16`` (its comment says "16GB - memory used", the
paper's rule, but its direction multiplier is +1), so the first check uses the same spec; the second scores the
paper's rule (DynaDesk's default: memory saved, ``16 - memory``), where only the memory column moves.
The rows go in as ``dynadesk dynascore FILE.json`` takes them, the command a user checks a board with; that
command, the local board and the public board's ``rates=dynaboard`` view score through one ScoreBoard
(tests/sync/test_sync_one_dynascore.py shows the three bit for bit)."""

from __future__ import annotations

import json

import pytest
from click.testing import CliRunner

from dynadesk.cli import cli
from dynadesk.scoring import board

METRICS = ("perf", "throughput", "memory", "fairness", "robustness")
PAPER_NLI = {  # perf, throughput, memory (GiB), fairness, robustness
    "DeBERTa": (69.54, 7.41, 5.71, 91.97, 75.70),
    "RoBERTa": (69.07, 9.23, 4.82, 90.94, 74.82),
    "ALBERT": (67.29, 9.60, 2.18, 89.94, 74.12),
    "T5": (67.16, 7.10, 10.62, 91.89, 73.47),
    "BERT": (64.82, 9.39, 4.13, 92.11, 66.38),
    "Majority Baseline": (32.41, 77.33, 1.15, 100.00, 100.00),
    "FastText": (31.29, 73.94, 2.20, 83.23, 69.14),
}
# the reference's printed output: converted throughput, memory, fairness, robustness; Dynascore (in its order)
REFERENCE = {
    "DeBERTa": (1.511594, 1.806587, 16.689470, 11.680170, 38.730978),
    "RoBERTa": (1.882863, 1.732527, 16.502560, 11.544390, 38.492792),
    "ALBERT": (1.958340, 1.512840, 16.321093, 11.436383, 37.548582),
    "T5": (1.448356, 2.215171, 16.674953, 11.336091, 37.539321),
    "BERT": (1.915502, 1.675109, 16.714875, 10.242136, 36.228453),
    "Majority Baseline": (15.774840, 1.427129, 18.146646, 15.429551, 22.552271),
    "FastText": (15.083301, 1.514504, 15.103453, 10.667992, 20.941156),
}
PRINTED = 5e-7  # six decimals


def _document(memory_direction: float) -> dict:
    spec = {m: {"direction": 1.0, "offset": 0.0, "weight": 4.0 if m == "perf" else 1.0} for m in METRICS}
    spec["memory"] = {"direction": memory_direction, "offset": 16.0, "weight": 1.0}
    return {"perf_metric": "perf", "metrics": spec,
            "models": {name: dict(zip(METRICS, row, strict=True)) for name, row in PAPER_NLI.items()}}


def _score(tmp_path, doc: dict) -> dict:
    path = tmp_path / "paper.json"
    path.write_text(json.dumps(doc), encoding="utf-8")
    result = CliRunner().invoke(cli, ["dynascore", str(path), "--json"])
    assert result.exit_code == 0, result.output
    return json.loads(result.output)


def test_the_papers_nli_rows_give_the_reference_scoring_to_the_printed_digits(tmp_path):
    out = _score(tmp_path, _document(memory_direction=1.0))
    assert out["ranking"] == list(REFERENCE)  # the reference's order
    for name, (*converted, dynascore) in REFERENCE.items():
        row = out["models"][name]
        assert row["dynascore"] == pytest.approx(dynascore, abs=PRINTED), name
        assert row["converted"]["perf"] == pytest.approx(PAPER_NLI[name][0], abs=PRINTED)
        for metric, value in zip(METRICS[1:], converted, strict=True):
            assert row["converted"][metric] == pytest.approx(value, abs=PRINTED), (name, metric)
    assert out["left_off"] == {}


def test_the_papers_memory_rule_moves_only_the_memory_column(tmp_path):
    as_reference = _score(tmp_path, _document(memory_direction=1.0))
    papers_rule = _score(tmp_path, _document(memory_direction=-1.0))
    default = board.default_metrics()["memory"]
    assert (default.direction, default.offset) == (-1.0, 16.0)  # DynaDesk's default is the paper's rule
    # a rate reads |differences|: the same either way (to the last bit or two: 16 - m and m + 16 round apart)
    assert papers_rule["amrs"] == pytest.approx(as_reference["amrs"], rel=1e-14)
    rate = papers_rule["amrs"]["memory"]
    for name, row in papers_rule["models"].items():
        ref = as_reference["models"][name]
        for metric in METRICS:
            if metric != "memory":
                assert row["converted"][metric] == ref["converted"][metric]
        memory = PAPER_NLI[name][2]
        assert row["converted"]["memory"] == pytest.approx((16.0 - memory) / rate, rel=1e-12)
        # weights 4:1:1:1:1 -> memory's share is 1/8
        assert row["dynascore"] - ref["dynascore"] == pytest.approx(-2 * memory / rate / 8, rel=1e-9)
    # the paper's rule keeps the reference's order; the near-tie of ALBERT and T5 (0.009 apart) widens to 0.185,
    # T5 being the heaviest model
    assert papers_rule["ranking"] == as_reference["ranking"]
    gap = papers_rule["models"]["ALBERT"]["dynascore"] - papers_rule["models"]["T5"]["dynascore"]
    assert gap > 10 * (as_reference["models"]["ALBERT"]["dynascore"] - as_reference["models"]["T5"]["dynascore"])
