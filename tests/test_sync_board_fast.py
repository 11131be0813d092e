"""The board's matrix fast path answers exactly what ``dynascore.compute`` answers."""

from __future__ import annotations

import dataclasses
import os

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from dynadesk.errors import ValidationError
from dynadesk.sync import board as B

EXAMPLES = 400 if os.environ.get("DYNADESK_LONG") == "1" else 60
DATASETS = ["ds-a", "ds-b", "ds-c"]
GOOD = st.floats(min_value=0.01, max_value=3000, allow_nan=False, allow_infinity=False)
ODD = st.one_of(GOOD, st.integers(-5, 5), st.sampled_from([float("nan"), float("inf"), True, "7", None]))


@st.composite
def boards(draw) -> list[dict]:
    """Stored board rows: mostly complete models, sometimes missing/odd values or mixed forms."""
    odd = draw(st.booleans())
    values = ODD if odd else GOOD
    rows = []
    for i in range(draw(st.integers(0, 12))):
        metrics = {}
        for name in B.BOARD_METRICS:
            if odd and draw(st.integers(0, 9)) == 0:
                continue  # a missing metric: the model is left off
            per_ds = name in ("perf", "robustness", "fairness") and (not odd or draw(st.integers(0, 5)) > 0)
            chosen = DATASETS if not odd else draw(st.lists(st.sampled_from(DATASETS), min_size=1, unique=True))
            vals = {d: draw(values) for d in chosen} if per_ds else {"": draw(values)}
            metrics[name] = {"unit": "u", "deterministic": True, "values": vals}
        model = f"m{draw(st.integers(0, 15)):02d}"  # repeated names: labelled by submitter
        rows.append({"model": model, "key_fingerprint": f"sha256:{i:064d}", "submitter": f"s{i}",
                     "bundle_id": f"{i:064x}", "created_at": "2024-01-01T00:00:00.000Z",
                     "model_digest": "sha256:" + "0" * 64, "metrics": metrics})
    return rows


def _answer(board: B.PreparedBoard, mw, dw, limit, offset):
    try:
        return B.compute_board("sentiment", board, [{"name": d, "split": "test", "digest": "x"} for d in DATASETS],
                               mw, dw, limit, offset)
    except ValidationError as exc:
        return f"ValidationError: {exc}"


@settings(max_examples=EXAMPLES, deadline=None)
@given(rows=boards(), mw=st.dictionaries(st.sampled_from(B.BOARD_METRICS), st.sampled_from([0.0, 0.5, 1.0, 3.0])),
       dw=st.dictionaries(st.sampled_from(DATASETS), st.sampled_from([0.0, 0.5, 1.0, 2.0])),
       limit=st.integers(1, 20), offset=st.integers(0, 5))
def test_fast_board_equals_dynascore_compute(rows, mw, dw, limit, offset):
    fast = B.prepare(rows)
    reference = dataclasses.replace(fast, matrix=None)  # no matrix: compute_board calls dynascore.compute
    assert repr(_answer(fast, mw, dw, limit, offset)) == repr(_answer(reference, mw, dw, limit, offset))


def test_fast_path_is_taken_for_a_complete_board():
    rows = [{"model": f"m{i}", "key_fingerprint": "k", "submitter": "s", "bundle_id": "b", "created_at": "t",
             "model_digest": "d", "metrics": {n: {"unit": "u", "deterministic": True,
                                                  "values": {"ds-a": 50.0 + i, "ds-b": 60.0 - i}}
                                              for n in B.BOARD_METRICS}} for i in range(5)]
    board = B.prepare(rows)
    scored = board.matrix.score(dict(B.dynascore.default_metrics()), "perf", None, 0, 3)
    assert scored is not None and scored.total == 5 and len(scored.page) == 3
    with pytest.raises(ValidationError, match="every dataset of metric 'perf' has weight 0"):
        B.compute_board("t", board, [{"name": "ds-a", "split": "s", "digest": "d"},
                                     {"name": "ds-b", "split": "s", "digest": "d"}], {}, {"ds-a": 0, "ds-b": 0})
