"""The server's board is the shared ScoreBoard: it answers what ``board.compute`` answers on the same table,
built once per stored board and asked one page per query."""

from __future__ import annotations

import os
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from dynadesk.errors import ValidationError
from dynadesk.scoring.board import ScoreBoard, Weighting, compute, score_input
from dynadesk.scoring.dynascore import default_metrics
from dynadesk.sync.rules import board as B

EXAMPLES = 400 if os.environ.get("DYNADESK_LONG") == "1" else 60
DATASETS = ["ds-a", "ds-b", "ds-c"]
TASK_DATASETS = [{"name": d, "split": "test", "digest": "x"} for d in DATASETS]
GOOD = st.floats(min_value=0.01, max_value=3000, allow_nan=False, allow_infinity=False)
ODD = st.one_of(GOOD, st.integers(-5, 5), st.sampled_from([float("nan"), float("inf"), True, "7", None]))


@st.composite
def boards(draw: st.DrawFn) -> list[dict[str, Any]]:
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


def _answer(board: B.PreparedBoard, mw: dict[str, float], dw: dict[str, float], limit: int, offset: int) -> Any:
    try:
        out = B.compute_board("sentiment", board, TASK_DATASETS, Weighting(mw, dw), B.BoardView(limit, offset))
    except ValidationError as exc:
        return f"ValidationError: {exc}"
    return out["total"], out["amrs"], out["left_off"], out["notes"], [
        (r["model"], r["rank"], r["dynascore"], r["values"], r["converted"]) for r in out["rows"]]


def _reference(board: B.PreparedBoard, mw: dict[str, float], dw: dict[str, float], limit: int, offset: int) -> Any:
    """The same table as a ``dynadesk dynascore`` document scored by ``board.compute``."""
    models = {label: score_input({k: s["values"] for k, s in r["metrics"].items() if k in B.BOARD_METRICS})
              for label, r in board.rows.items()}
    specs = default_metrics()
    for k, w in mw.items():
        specs[k] = type(specs[k])(specs[k].direction, specs[k].offset, w)
    try:
        res = compute(models, specs, dataset_weights={k: v for k, v in dw.items() if k in board.board.datasets})
    except ValidationError as exc:
        return f"ValidationError: {exc}"
    return len(res.models), res.amrs, res.left_off, res.notes, [
        (m.name, m.rank, m.dynascore, m.values, m.converted) for m in res.models[offset:offset + limit]]


@settings(max_examples=EXAMPLES, deadline=None)
@given(rows=boards(), mw=st.dictionaries(st.sampled_from(B.BOARD_METRICS), st.sampled_from([0.0, 0.5, 1.0, 3.0])),
       dw=st.dictionaries(st.sampled_from(DATASETS), st.sampled_from([0.0, 0.5, 1.0, 2.0])),
       limit=st.integers(1, 20), offset=st.integers(0, 5))
def test_server_board_equals_dynascore_compute(rows: list[dict[str, Any]], mw: dict[str, float],
                                               dw: dict[str, float], limit: int, offset: int) -> None:
    board = B.prepare(rows)
    assert repr(_answer(board, mw, dw, limit, offset)) == repr(_reference(board, mw, dw, limit, offset))


def _complete_rows(n: int) -> list[dict[str, Any]]:
    return [{"model": f"m{i}", "key_fingerprint": "k", "submitter": "s", "bundle_id": "b", "created_at": "t",
             "model_digest": "d", "metrics": {name: {"unit": "u", "deterministic": True,
                                                     "values": {"ds-a": 50.0 + i, "ds-b": 60.0 - i}}
                                              for name in B.BOARD_METRICS}} for i in range(n)]


def test_one_board_per_stored_board_and_one_page_per_query() -> None:
    board = B.prepare(_complete_rows(5))
    assert isinstance(board.board, ScoreBoard) and board.board.names == [f"m{i}" for i in range(5)]
    scored = board.board.score(offset=1, limit=3)
    assert scored.total == 5 and len(scored.page()) == 3
    assert [m.name for m in scored.page()] == scored.names[1:4]
    two = [{"name": "ds-a", "split": "s", "digest": "d"}, {"name": "ds-b", "split": "s", "digest": "d"}]
    with pytest.raises(ValidationError, match="every dataset of metric 'perf' has weight 0"):
        B.compute_board("t", board, two, Weighting({}, {"ds-a": 0, "ds-b": 0}))


@pytest.mark.parametrize(("mw", "dw", "limit", "offset", "named"), [
    ({"perf": 1e308}, {}, 100, 0, "weight of metric 'perf'"),
    ({"memory": float("inf")}, {}, 100, 0, "weight of metric 'memory'"),
    ({"fairness": -1.0}, {}, 100, 0, "weight of metric 'fairness'"),
    ({}, {"ds-a": 1e308}, 100, 0, "dataset weight for 'ds-a'"),
    ({}, {"ds-b": float("nan")}, 100, 0, "dataset weight for 'ds-b'"),
    ({}, {}, 0, 0, "page limit"),
    ({}, {}, 1001, 0, "page limit"),
    ({}, {}, 10, -1, "page offset"),
])
def test_absurd_inputs_are_refused_naming_the_parameter(mw: dict[str, float], dw: dict[str, float], limit: int,
                                                        offset: int, named: str) -> None:
    """1e308 used to be accepted and zeroed every other weight (every score became the weighted perf alone)."""
    board = B.prepare(_complete_rows(4))
    with pytest.raises(ValidationError, match=named):
        B.compute_board("t", board, TASK_DATASETS, Weighting(mw, dw), B.BoardView(limit, offset))


@pytest.mark.parametrize(("params", "named"), [
    ({"weight.perf": "1e308"}, "weight of metric 'perf'"),
    ({"weight.memory": "-1"}, "weight of metric 'memory'"),
    ({"dataset.vader-movies-test": "inf"}, "dataset weight for 'vader-movies-test'"),
    ({"memory_budget": "1e308"}, "memory budget"),
    ({"memory_budget": "0"}, "memory budget"),
    ({"memory_budget": "lots"}, "memory_budget"),
    ({"limit": "5000"}, "page limit"),
])
def test_the_server_answers_the_boards_refusals_as_400(tmp_path, params: dict[str, str], named: str) -> None:
    """The real app (in process, real SQLite file): the board's ValidationError becomes a JSON 400."""
    from fastapi.testclient import TestClient

    from dynadesk.sync.server.app import create_app
    from dynadesk.sync.server.db import ServerDB

    ServerDB(tmp_path / "server.db")
    with TestClient(create_app(tmp_path / "server.db"), raise_server_exceptions=False) as client:
        ok = client.get("/api/leaderboard/sentiment", params={"memory_budget": "32"})
        assert ok.status_code == 200, ok.text
        assert ok.json()["rows"] == [] and ok.json()["metrics"]["memory"]["offset"] == 32
        bad = client.get("/api/leaderboard/sentiment", params=params)
        assert bad.status_code == 400, bad.text
        assert bad.json()["error"] == "invalid_request" and named in bad.json()["detail"]
