"""Baselines and the default view cannot be taken (issue 44, items 4, 5, 7, 8), against a real server on SQLite
and on PostgreSQL.

- A lone unsandboxed row: Lab A has four sandboxed rows on one machine class, Lab B syncs one local, not-sandboxed
  run whose class name sorts first. Seen failing first: the default view was Lab B's row alone (one submitter per
  class, the tie broken by the class name).
- The constant-label baseline (one label for every example, its signed outcomes say so) at 630,817 examples/s with
  robustness and fairness 100, reproduced by an auditor. Seen failing first: it ranked #1 in the all-rows view, was
  a reference row, and moved the honest rows' scores. Now it is a baseline row in every view: unranked, outside
  the reference rows, scored at the ranked rows' rates, its robustness and fairness labelled trivial.
- Each note (default-view reason, audit default, baseline, trivial) appears when, and only when, its condition
  holds; the breakdown names its reference.
"""

from __future__ import annotations

import copy
import statistics
from datetime import UTC, datetime
from typing import Any

import pytest
from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey
from support.baselines import constant, mostly_right, outcomes_of
from support.sync import stop_server
from test_server_board_reference import HONEST, RefBoard
from test_server_default_view import _load, _models, attest, page  # noqa: F401 (page: a fixture)

from dynadesk.evaluator.environment import hardware_class_of
from dynadesk.scoring import baselines as BL
from dynadesk.sync.format.envelope import sign_payload
from dynadesk.sync.server import default_view as DV

LONE_ENV = {"cpu_model": "AMD EPYC", "cores": 2, "memory_limit_gib": 24, "gpus": "none", "runtime": "cpu"}


def _target(request, tmp_path):
    return tmp_path / "board.db" if request.param == "sqlite" else request.getfixturevalue("pg_url")


@pytest.fixture(params=["sqlite", "postgresql"])
def lone(request, tmp_path):
    """Lab A: four sandboxed rows on the template's class, no auditor yet (one submitter per class)."""
    b = RefBoard(tmp_path, _target(request, tmp_path), Ed25519PrivateKey.generate())
    b.honest_class = hardware_class_of(b.template["environment"])
    try:
        for _lab, model, perf, tput, mem in HONEST:
            assert b.post(b.bundle("Lab A", model, perf=perf, throughput=tput, memory=mem).raw).status_code == 201
        yield b
    finally:
        stop_server(b.proc)


def _rows(answer: dict[str, Any]) -> list[tuple[str, float]]:
    return [(r["row_id"], round(r["dynascore"], 9)) for r in answer["rows"]]


def test_a_lone_unsandboxed_row_cannot_become_the_default_view(lone):
    b = lone
    before = b.board("?limit=1000")
    assert before["hardware_class"] == b.honest_class and len(before["rows"]) == 4
    p = b.payload("Lab B", "lone-local", perf=90.0, throughput=2000.0, memory=0.2)
    p["environment"] = {**copy.deepcopy(p["environment"]), "hardware": dict(LONE_ENV)}
    p["runner"] = {**p["runner"], "kind": "local", "sandboxed": False}
    lone_class = hardware_class_of(p["environment"])
    assert lone_class < b.honest_class  # the old tie-break (the class name) picks the lone row's class
    assert b.post(sign_payload(p, b.keys["Lab B"]).raw).status_code == 201
    after = b.board("?limit=1000")
    assert after["hardware_class"] == b.honest_class, "the lone unsandboxed row took the default view"
    assert _rows(after) == _rows(before)
    assert before["default_class"]["reason"] == "the only hardware class with rows"
    reason = after["default_class"]["reason"]
    assert reason.startswith("most organisations with sandboxed rows: 1 (next class: 0)"), reason
    assert "class" not in reason.split("(next class")[0].replace("organisations with sandboxed rows", "")
    theirs = b.board(f"?hardware_class={lone_class}")  # still there for whoever asks
    assert [r["model"] for r in theirs["rows"]] == ["lone-local"]


def test_classes_tied_on_every_count_are_shown_together_not_chosen_by_name(lone):
    """Two classes, one organisation each, same counts: no count tells them apart, so neither's name decides."""
    b = lone
    for i, (_lab, model, perf, tput, mem) in enumerate(HONEST):
        p = b.payload("Lab B", f"{model}-b", perf=perf - 1, throughput=tput, memory=mem)
        p["environment"] = {**copy.deepcopy(p["environment"]), "hardware": dict(LONE_ENV)}
        assert b.post(sign_payload(p, b.keys["Lab B"]).raw).status_code == 201, i
    answer = b.board("?limit=1000")
    assert answer["hardware_class"] == "all" and answer["comparable"] is False
    assert answer["default_class"]["reason"].startswith("the hardware classes tie on every count")
    assert len(answer["rows"]) == 8


# ------------------------------------------------------------------ the constant-label baseline

def constant_bundle(b: RefBoard, lab: str, model: str) -> Any:
    """A majority-label bundle whose signed outcomes are its (constant) predictions and whose perf they give."""
    p = b.payload(lab, model, throughput=630817.0, memory=0.01)
    digests = {d["name"]: d["digest"] for d in p["datasets"]}
    found, perf = outcomes_of(b.store, constant, sorted(digests), digest=digests.__getitem__)
    p["outcomes"] = [{"dataset": n, **found[n]} for n in sorted(found)]
    for m in p["metrics"]:
        if m["metric"] in ("perf", "macro_f1"):
            m["value"] = perf[m["dataset"]] if m["dataset"] else statistics.fmean(perf.values())
        elif m["metric"] in ("robustness", "fairness"):
            m["value"] = 100.0
    return sign_payload(p, b.keys[lab])


@pytest.fixture(params=["sqlite", "postgresql"])
def reproduced(request, tmp_path):
    """Four honest rows (Lab A, Lab C), each reproduced by an auditor on its class."""
    auditor = Ed25519PrivateKey.generate()
    b = RefBoard(tmp_path, _target(request, tmp_path), auditor)
    b.auditor = auditor
    b.honest_class = hardware_class_of(b.template["environment"])
    try:
        for lab, model, perf, tput, mem in HONEST:
            bundle = b.bundle(lab, model, perf=perf, throughput=tput, memory=mem)
            assert b.post(bundle.raw).status_code == 201
            attest(b, auditor, bundle.id, b.honest_class)
        yield b
    finally:
        stop_server(b.proc)


VIEWS = ("?limit=1000", "?limit=1000&audit=all", "?limit=1000&hardware_class=all",
         "?limit=1000&hardware_class=all&audit=all", "?limit=1000&audit=all&weight.throughput=5",
         "?limit=1000&audit=all&sandboxed=yes", "?limit=1000&audit=all&memory_budget=1")


def test_the_constant_label_baseline_is_never_ranked_in_any_view(reproduced):
    b = reproduced
    before = {v: b.board(v) for v in VIEWS}
    majority = constant_bundle(b, "Lab B", "majority-sentiment")
    assert b.post(majority.raw).status_code == 201
    attest(b, b.auditor, majority.id, b.honest_class)  # even reproduced, a constant predictor is a baseline
    for view in VIEWS:
        after = b.board(view)
        ranked = [r["model"] for r in after["rows"]]
        assert "majority-sentiment" not in ranked, f"{view}: the baseline was ranked ({ranked})"
        assert _rows(after) == _rows(before[view]), f"{view}: the baseline moved the honest rows"
        assert after["amrs"] == before[view]["amrs"]
        assert "majority-sentiment" not in {r["label"] for r in after["reference"]["rows"]}
        assert before[view]["baselines"] == []  # a note only when its condition holds
        assert not any("baseline" in n or "trivial" in n for n in before[view]["notes"])
        (base,) = after["baselines"]
        assert base["rank"] is None and base["bundle_id"] == majority.id
        assert base["baseline"] == {"reason": BL.CONSTANT, "constant": True, "trivial": ["robustness", "fairness"]}
        assert base["dynascore"] == pytest.approx(sum(base["contributions"].values()))
        notes = [n for n in after["notes"] if n.startswith("majority-sentiment:")]
        assert len(notes) == 2 and BL.CONSTANT in notes[0] and BL.TRIVIAL in notes[1]
        # the breakdown is drawn against the baseline, named
        assert after["breakdown_reference"]["label"] == "majority-sentiment"
        assert after["breakdown_reference"]["kind"] == "the baseline"
        for r in after["rows"]:
            assert r["relative_contributions"] == pytest.approx(
                {k: v - base["contributions"][k] for k, v in r["contributions"].items()})
    # its model page: a baseline, not "no longer on the board"
    import requests

    html = requests.get(f"{b.url}/models/{majority.id}", timeout=30).text
    assert "A <strong>baseline</strong>" in html and "trivial" in html and "no longer on the board" not in html


def test_a_snapshot_shows_the_baseline_excluded_as_a_baseline_and_verifies(reproduced):
    from dynadesk.sync.client.upload import verify_snapshot
    from dynadesk.sync.format import keys as K
    from dynadesk.sync.server.board_view import BoardView
    from dynadesk.sync.server.db import ServerDB
    from dynadesk.sync.server.snapshots import create_snapshot
    from dynadesk.sync.server.task_registry import board_tasks
    from dynadesk.sync.server.values import registry

    b = reproduced
    majority = constant_bundle(b, "Lab B", "majority-sentiment")
    assert b.post(majority.raw).status_code == 201
    db = ServerDB(b.db_path)
    key = Ed25519PrivateKey.generate()
    try:
        tasks = board_tasks(db)
        view = BoardView(db, tasks, {n: registry(t) for n, t in tasks.items()})
        snap, _ = create_snapshot(view, key, "sentiment", "with a baseline", {"audit": "all"}, datetime.now(UTC))
        evidence = view.db and __import__("requests").get(
            f"{b.url}/api/snapshots/{snap.id}/evidence", timeout=30).json()
    finally:
        db.close()
    p = snap.payload
    assert majority.id not in {r["bundle_id"] for r in p["rows"]}
    (why,) = [x["why"] for x in p["excluded"] if x["bundle_id"] == majority.id]
    assert why == f"baseline: {BL.CONSTANT}"
    assert any(n.startswith("majority-sentiment: a baseline") for n in p["notes"])
    assert verify_snapshot(evidence, K.public_raw(key))["rows"] == 4


def test_notes_appear_only_when_their_condition_holds(reproduced):
    b = reproduced
    answer = b.board()
    assert answer["audit_default"] == {"audit": "reproduced", "why": DV.AUDIT_REPRODUCED}
    assert answer["breakdown_reference"]["kind"] == "the lowest-ranked row"
    assert answer["breakdown_reference"]["label"] == answer["rows"][-1]["label"]
    paged = b.board("?limit=2")  # the reference is the lowest row of the view, not of the page
    assert paged["breakdown_reference"]["label"] == answer["rows"][-1]["label"]
    asked = b.board("?audit=all")
    assert asked["audit_default"] == {"audit": "reproduced", "why": "as asked (audit=all)"}
    # a trained model whose outcomes vary is no baseline, whatever its throughput
    p = b.payload("Lab B", "fast-trained", throughput=630817.0, memory=0.01)
    digests = {d["name"]: d["digest"] for d in p["datasets"]}
    found, perf = outcomes_of(b.store, mostly_right, sorted(digests), digest=digests.__getitem__)
    p["outcomes"] = [{"dataset": n, **found[n]} for n in sorted(found)]
    for m in p["metrics"]:
        if m["metric"] in ("perf", "macro_f1"):
            m["value"] = perf[m["dataset"]] if m["dataset"] else statistics.fmean(perf.values())
    assert b.post(sign_payload(p, b.keys["Lab B"]).raw).status_code == 201
    everything = b.board("?audit=all&limit=1000")
    assert "fast-trained" in [r["model"] for r in everything["rows"]] and everything["baselines"] == []
    assert not any("baseline" in n or "trivial" in n for n in everything["notes"])


def test_with_no_reproduced_row_the_default_shows_every_row_and_says_why(lone):
    answer = lone.board()
    assert answer["filters"]["audit"] == "all"
    assert answer["audit_default"] == {"audit": "all", "why": DV.AUDIT_ALL}


@pytest.mark.browser
@pytest.mark.parametrize("reproduced", ["sqlite"], indirect=True)
def test_the_page_lists_the_baseline_apart_and_draws_the_breakdown_against_it(reproduced, page):  # noqa: F811
    b = reproduced
    _load(page, b.url + "/")
    assert page.locator(".baselines-box li").count() == 0  # no baseline: no baselines section
    assert "against" in page.inner_text(".legend-box") and "lowest-ranked row" in page.inner_text(".legend-box")
    majority = constant_bundle(b, "Lab B", "majority-sentiment")
    assert b.post(majority.raw).status_code == 201
    attest(b, b.auditor, majority.id, b.honest_class)
    _load(page, b.url + "/?audit=all")
    assert "majority-sentiment" not in _models(page)
    listed = page.inner_text(".baselines-box")
    assert "majority-sentiment" in listed and "baseline, unranked" in listed and "robustness and fairness trivial" \
        in listed
    legend = page.inner_text(".legend-box")
    assert "against majority-sentiment (the baseline)" in legend and "absolute" in legend
    page.click("#board-sentiment button.details-all")  # the score breakdown is in each row's details
    refs = page.locator("#board-sentiment svg.breakdown").evaluate_all("s => s.map(x => x.dataset.reference)")
    assert refs and set(refs) == {"majority-sentiment"}
