"""Constant baselines beyond macro-F1 (issue 44, item 4): on the extractive QA task (a span output, SQuAD F1) a model
that answers the same string for every example, or abstains on every one, is a baseline row, unranked, its
robustness and fairness labelled trivial, on the local board (library and CLI) and on the public board (a real
server, SQLite and PostgreSQL). Seen failing first: the per-example SQuAD scores recorded no answers, so both
constant answerers were ranked (the abstainer at 600,000 examples/s above the weak trained model)."""

from __future__ import annotations

import json

import pytest
import requests
from click.testing import CliRunner
from support.qa_runs import make_qa_run, right
from support.sync import NO_LIMITS, free_port, start_server, stop_server, workspace_with_key

from dynadesk.cli import cli
from dynadesk.scoring import baselines as BL
from dynadesk.scoring.leaderboard import build_leaderboard


def half_right(example):
    i = int(example["id"].rsplit("-", 1)[1])
    return right(example) if i % 2 else "May"


def qa_workspace(root):
    ws, store = workspace_with_key(root / "ws")
    runs = {"trained": make_qa_run(store, ws.runs_dir, "trained", right, throughput=900.0, robustness=70.0),
            "weak": make_qa_run(store, ws.runs_dir, "weak", half_right, throughput=1100.0, robustness=50.0),
            "constant": make_qa_run(store, ws.runs_dir, "constant", lambda e: "Paris", throughput=400000.0),
            "abstains": make_qa_run(store, ws.runs_dir, "abstains", lambda e: "", throughput=600000.0)}
    return ws, store, runs


def test_constant_answers_and_abstentions_are_baselines_on_the_local_board(tmp_path):
    ws, store, _ = qa_workspace(tmp_path)
    board = build_leaderboard(store, "qa")
    assert [r.model for r in board.rows] == ["trained", "weak"], [(r.model, r.dynascore) for r in board.rows]
    assert sorted(r.model for r in board.baselines) == ["abstains", "constant"]
    for r in board.baselines:
        assert r.baseline == {"reason": BL.CONSTANT, "constant": True, "trivial": ["robustness", "fairness"]}
    notes = " ".join(board.notes)
    assert "abstains: robustness and fairness trivial" in notes and "constant: robustness and fairness trivial" in notes
    # the note about trivial figures appears only for the constant rows
    assert "trained: robustness" not in notes and "weak: robustness" not in notes
    out = CliRunner().invoke(cli, ["--home", str(ws.home), "leaderboard", "qa", "--json"])
    assert out.exit_code == 0, out.output
    doc = json.loads(out.output)
    assert [r["model"] for r in doc["rows"]] == ["trained", "weak"]
    assert sorted(r["model"] for r in doc["baselines"]) == ["abstains", "constant"]
    store.close()


@pytest.mark.parametrize("backend", ["sqlite", "postgresql"])
def test_constant_answers_are_baselines_on_the_public_board(tmp_path, request, backend):
    from dynadesk.sync.client.create import create_bundle
    from dynadesk.sync.client.upload import sync_queue
    from dynadesk.sync.format.keys import key_info
    from dynadesk.sync.server.admin import import_workspace_datasets
    from dynadesk.sync.server.db import ServerDB

    ws, store, runs = qa_workspace(tmp_path)
    for ev in runs.values():
        create_bundle(ws, store, ev)
    target = tmp_path / "board.db" if backend == "sqlite" else request.getfixturevalue("pg_url")
    db = ServerDB(target)
    info = key_info(ws.keys_dir)
    db.add_key(info.fingerprint, bytes.fromhex(info.public_key_hex), "qa lab")
    import_workspace_datasets(db, ws.home)
    db.close()
    port = free_port()
    proc = start_server(target, port, (*NO_LIMITS, "--key", str(tmp_path / "server.key")))
    try:
        url = f"http://127.0.0.1:{port}"
        assert sync_queue(store, url).ok
        board = requests.get(f"{url}/api/leaderboard/qa?limit=1000&audit=all", timeout=30).json()
        assert [r["label"] for r in board["rows"]] == ["trained", "weak"]
        assert sorted(r["label"] for r in board["baselines"]) == ["abstains", "constant"]
        assert all(r["baseline"]["trivial"] == ["robustness", "fairness"] for r in board["baselines"])
        assert "abstains: robustness and fairness trivial" in " ".join(board["notes"])
    finally:
        stop_server(proc)
        store.close()
