"""Every note tells the truth (issue 44, item 8): each note the scoring board gives (the one ScoreBoard the local
board, the CLI, the app and the public board rank with) and each note a rate edition gives (the public board, the
local board scored with ``--rates``, the app), shown appearing when, and only when, its condition holds.

Seen failing first: a board of one model said "no two models differ in performance by more than 0.0001 x the best"
(there are no two models); a rate edition, or provisional rates, with a rate of 0 for a metric (its reference rows do
not differ in it) turned that metric into 0 for every row without a word."""

from __future__ import annotations

from typing import Any

import pytest
from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey

from dynadesk.scoring.board import SCORE_METRICS, ScoreBoard, Weighting
from dynadesk.sync.format.rate_edition import sign_edition

NO_PAIR = "no two models differ in performance by more than"
SINGLE = "a single model: there is nothing to compare it with"
FLAT = "does not change between models of different performance"
WEIGHT0 = "has weight 0 and some models lack it"


def row(perf: float, throughput: float = 900.0, memory: float = 1.0, robustness: float = 70.0,
        fairness: float = 80.0, **extra: float) -> dict[str, float]:
    return {"perf": perf, "throughput": throughput, "memory": memory, "robustness": robustness,
            "fairness": fairness, **extra}


def notes(rows: dict[str, dict[str, float]], **kw: Any) -> str:
    return " | ".join(ScoreBoard(rows, list(SCORE_METRICS) + ["latency"]).score(**kw).notes)


def test_no_pair_note_only_when_two_models_exist_and_none_differ():
    assert NO_PAIR in notes({"a": row(70), "b": row(70)})
    assert NO_PAIR not in notes({"a": row(70), "b": row(60)})
    one = notes({"a": row(70)})
    assert NO_PAIR not in one, one  # was said of a board of one model
    assert SINGLE in one


def test_single_model_note_only_for_one_model_under_the_rows_rule():
    assert SINGLE in notes({"a": row(70)})
    assert SINGLE not in notes({"a": row(70), "b": row(60)})
    fixed = {"perf": 1.0, "throughput": 0.01, "memory": 1.0, "robustness": 1.0, "fairness": 1.0}
    # fixed rates convert every metric: not perf alone
    assert SINGLE not in notes({"a": row(70)}, weighting=Weighting(rates=fixed))


def test_flat_metric_note_only_for_a_metric_that_does_not_change():
    flat = notes({"a": row(70, robustness=60), "b": row(60, robustness=60)})
    assert "metric 'robustness' " + FLAT in flat and "metric 'fairness' " + FLAT in flat
    moving = notes({"a": row(70, 800, 1.2, robustness=80, fairness=85), "b": row(60, 900, 1.0, 60, 75)})
    assert FLAT not in moving


def test_weight_zero_note_only_when_a_model_lacks_that_metric():
    spared = {"a": row(70, latency=3.0), "b": row(60)}
    assert "metric 'latency' " + WEIGHT0 in " | ".join(
        ScoreBoard(spared, list(SCORE_METRICS) + ["latency"]).score(
            {**_specs(), "latency": _spec("latency", 0.0)}).notes)
    both = {"a": row(70, latency=3.0), "b": row(60, latency=4.0)}
    assert WEIGHT0 not in " | ".join(ScoreBoard(both, list(SCORE_METRICS) + ["latency"]).score(
        {**_specs(), "latency": _spec("latency", 0.0)}).notes)


def _specs():
    from dynadesk.scoring.dynascore import default_metrics

    return dict(default_metrics())


def _spec(name: str, weight: float):
    from dynadesk.scoring.dynascore import MetricSpec

    return MetricSpec(direction=-1.0, offset=0.0, weight=weight)


# ---------------------------------------------------------------- a rate edition's notes
def edition(amrs: dict[str, float | None], factor: float | None = 2.0, orgs: tuple[str, ...] = ("A", "B", "C"),
            word: str = "") -> Any:
    ref = [{"row_id": f"m{i}", "bundle_id": f"{i:064x}", "submitter": o, "organisation": o, "why": "pinned",
            **({"operator_word": word} if word else {})} for i, o in enumerate(orgs)]
    payload = {"task": "sentiment", "edition": 1, "previous": None, "created_at": "2026-01-01T00:00:00.000Z",
               "server": {}, "perf_metric": "perf", "amrs": amrs,
               "rates": {k: {"metric": k, "rate": v, "rows": [], "left_out": {}, "why": None if v is not None else
                             "1 reference row is usable"} for k, v in amrs.items()},
               "reference": ref, "estimator": "x", "factor": factor, "min_rows": 3, "note": ""}
    key = Ed25519PrivateKey.generate()
    from dynadesk.sync.format import keys as K

    payload["server"] = {"key_fingerprint": K.fingerprint(K.public_raw(key))}
    return sign_edition(payload, key)


FULL = {"perf": 1.0, "throughput": 100.0, "memory": 0.05, "robustness": 1.5, "fairness": 2.0}


@pytest.mark.parametrize(("amrs", "factor", "orgs", "word", "want"), [
    (FULL, 2.0, ("A", "B", "C"), "", []),
    ({**FULL, "memory": None}, 2.0, ("A", "B", "C"), "", ["metric 'memory' has no exchange rate in this edition"]),
    ({**FULL, "robustness": 0.0}, 2.0, ("A", "B", "C"), "", ["metric 'robustness' has exchange rate 0"]),
    (FULL, None, ("A", "B", "C"), "", ["follows Dynaboard's rule over its 3 reference rows"]),
    (FULL, 2.0, ("A", "A", "A"), "one lab", ["are of 1 organisation (A), not distinct ones", "'one lab'"]),
])
def test_each_edition_note_appears_only_when_the_edition_shows_it(amrs, factor, orgs, word, want):
    got = edition(amrs, factor, orgs, word).notes()
    text = " | ".join(got)
    for w in want:
        assert w in text, text
    assert len(got) == (len(want) if len(want) < 2 else 1), got  # no note beyond the ones its condition gives
    for other in ("has no exchange rate", "has exchange rate 0", "Dynaboard's rule", "not distinct ones"):
        if not any(other in w for w in want):
            assert other not in text, text


def test_provisional_rates_say_a_zero_rate_and_only_then():
    from dynadesk.scoring.rates import MetricRate
    from dynadesk.sync.server.rate_editions import PROVISIONAL, _notes

    rates = {k: MetricRate(k, v) for k, v in FULL.items()}
    plain = " | ".join(_notes("sentiment", PROVISIONAL, rates, 3))
    assert "exchange rate 0" not in plain and "provisional exchange rates" in plain
    rates["fairness"] = MetricRate("fairness", 0.0)
    zero = " | ".join(_notes("sentiment", PROVISIONAL, rates, 3))
    assert "metric 'fairness' has exchange rate 0" in zero, zero


# ---------------------------------------------------------------- the local board's own notes
def test_not_comparable_only_when_several_classes_are_ranked_together():
    from dynadesk.scoring.leaderboard import ALL_CLASSES, NOT_COMPARABLE, Leaderboard, with_hardware

    def board() -> Leaderboard:
        return Leaderboard("sentiment", {}, {}, {}, {}, {}, [])

    said = NOT_COMPARABLE.format(n=2)
    assert said in with_hardware(board(), ALL_CLASSES, {"4 cores": 2, "8 cores": 1}).notes
    assert not with_hardware(board(), ALL_CLASSES, {"4 cores": 2}).notes  # one class: comparable
    assert not with_hardware(board(), "4 cores", {"4 cores": 2, "8 cores": 1}).notes  # one class ranked


def test_baseline_notes_only_for_baselines_and_trivial_only_for_constant_ones():
    from dynadesk.scoring import baselines as BL

    assert BL.notes({}) == []
    marked = BL.notes({"lexicon": BL.Baseline(BL.MARKED, False)})
    assert len(marked) == 1 and "lexicon: a baseline (the task file names it a baseline)" in marked[0]
    assert "trivial" not in " ".join(marked)  # a marked baseline that answers variously: its figures are real
    constant = BL.notes({"majority": BL.is_baseline("majority", True)})
    assert len(constant) == 2 and "majority: robustness and fairness trivial" in constant[1]
