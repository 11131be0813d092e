"""The public board's JSON and pages over a real server: what the page relies on, checked without a browser.

Hardware class selects the rows ranked (default: the class with the most models, as on the
local board), runner and sandbox filter before scoring, contributions add up to the Dynascore,
and every bad parameter is a 4xx naming what is wrong; on both server backends (SQLite, PostgreSQL).
"""

from __future__ import annotations

import math

import pytest
import requests
from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey
from support.board import BIG, SMALL, UNUSED_SET, serve_board
from support.payloads import typed

from dynadesk.evaluator.environment import hardware_class_of
from dynadesk.scoring.leaderboard import NOT_COMPARABLE
from dynadesk.sync.format.attestation import sign_attestation
from dynadesk.sync.format.keys import fingerprint, public_raw
from dynadesk.sync.format.timestamps import utc_now_text
from dynadesk.sync.rules.board_facts import facts_of

SMALL_CLASS = hardware_class_of({"hardware": SMALL})
BIG_CLASS = hardware_class_of({"hardware": BIG})


@pytest.fixture(scope="module", params=["sqlite", "postgresql"])
def board(request, tmp_path_factory):
    """The same board on each server backend (the PostgreSQL one in the session's cluster, tests/support/pg.py)."""
    target = request.getfixturevalue("postgres").new_database() if request.param == "postgresql" else None
    served, stop = serve_board(tmp_path_factory.mktemp("board"), db_target=target)
    yield served
    stop()


def get(board, path: str, **params: str) -> requests.Response:
    return requests.get(board.url + path, params=params, timeout=10)


def test_default_board_ranks_the_class_with_most_models(board):
    answer = get(board, "/api/leaderboard/sentiment").json()
    assert answer["hardware_class"] == SMALL_CLASS and answer["comparable"] is True
    assert {c["class"]: c["models"] for c in answer["hardware_classes"]} == {SMALL_CLASS: 4, BIG_CLASS: 1}
    assert {c["label"] for c in answer["hardware_classes"]} >= {"Test CPU 9000, 16 cores, 64 GiB, no GPU, cpu"}
    assert answer["total"] == 4 and answer["submissions"] == 5
    assert "bob-bigbox" not in [r["model"] for r in answer["rows"]]
    assert answer["runners"] == ["docker", "local"]
    assert answer["perf_metric"] == {"metric": "macro_f1", "unit": "score"}
    assert answer["measured_metrics"] == ["memory", "throughput"]
    by_model = {r["model"]: r for r in answer["rows"]}
    assert by_model["bob-local"]["runner"] == "local" and by_model["bob-local"]["sandboxed"] is False
    assert by_model["middle"]["per_dataset"]["perf"] == {"": 69.5,  # the whole-run row a real run folder gives
                                                         "vader-movies-test": 68.0, "vader-tweets-test": 71.0}
    assert by_model["middle"]["model_url"] == f"/models/{board.bundles['alice/middle']}"
    assert {d["name"]: d["submitted"] for d in answer["datasets"]} == {
        "vader-movies-test": True, "vader-tweets-test": True, UNUSED_SET: False}


def test_contributions_add_up_to_the_dynascore(board):
    answer = get(board, "/api/leaderboard/sentiment", **{"weight.throughput": "3", "stability": "yes"}).json()
    for row in answer["rows"]:
        assert math.isclose(sum(row["contributions"].values()), row["dynascore"], rel_tol=1e-9, abs_tol=1e-9)
        s = row["stability"]
        assert s["min_rank"] <= row["rank"] <= s["max_rank"]
    assert "stability" not in get(board, "/api/leaderboard/sentiment").json()["rows"][0]


def test_all_classes_says_measured_metrics_do_not_compare(board):
    answer = get(board, "/api/leaderboard/sentiment", hardware_class="all").json()
    assert answer["total"] == 5 and answer["comparable"] is False
    assert answer["notes"][0] == NOT_COMPARABLE.format(n=2)
    only_big = get(board, "/api/leaderboard/sentiment", hardware_class=BIG_CLASS).json()
    assert [r["model"] for r in only_big["rows"]] == ["bob-bigbox"]


def test_runner_and_sandbox_filters_select_the_rows_scored(board):
    local = get(board, "/api/leaderboard/sentiment", runner="local").json()
    assert [r["model"] for r in local["rows"]] == ["bob-local"] and local["total"] == 1
    sandboxed = get(board, "/api/leaderboard/sentiment", sandboxed="yes", hardware_class="all").json()
    assert sorted(r["model"] for r in sandboxed["rows"]) == ["bob-bigbox", "fast-small", "middle", "slow-accurate"]
    assert sandboxed["filters"] == {"runner": None, "sandboxed": True, "audit": "all", "exclude_noisy": False,
                                   "rates": "edition"}
    assert [r["rank"] for r in sandboxed["rows"]] == [1, 2, 3, 4]  # ranked among themselves, not a hidden subset


@pytest.mark.parametrize(("params", "status", "words"), [
    ({"runner": "kubernetes"}, 400, "runner 'kubernetes' has no submissions"),
    ({"sandboxed": "maybe"}, 400, "'sandboxed' must be yes or no"),
    ({"stability": "often"}, 400, "'stability' must be yes or no"),
    ({"hardware_class": "cray"}, 400, "hardware class 'cray' has no runs"),
    ({"weight.perf": "x"}, 400, "'weight.perf' must be a number"),
    ({"colour": "red"}, 400, "unknown query parameter 'colour'"),
])
def test_bad_board_parameters_are_named(board, params, status, words):
    answer = get(board, "/api/leaderboard/sentiment", **params)
    assert answer.status_code == status and words in answer.json()["detail"]


def test_tasks_list_counts_submissions(board):
    counts = {t["name"]: t["submissions"] for t in get(board, "/api/tasks").json()}
    assert counts == {"sentiment": 5, "nli": 0, "qa": 0, "hate_speech": 0}


def test_pages_render_and_refuse_bad_input_without_a_500(board):
    bundle_id = board.bundles["bob/bob-local"]
    page = get(board, f"/models/{bundle_id}")
    assert page.status_code == 200 and "NOT sandboxed" in page.text and "bob-local" in page.text
    assert f'href="/api/bundles/{bundle_id}"' in page.text and f'href="/bundles/{bundle_id}"' in page.text
    readable = get(board, f"/bundles/{bundle_id}")
    assert readable.status_code == 200 and "merkle_root" in readable.text and "ed25519" in readable.text
    log = get(board, "/log", start="2", limit="2")
    assert log.status_code == 200 and 'id="seq-2"' in log.text and 'id="seq-3"' in log.text
    assert 'id="seq-1"' not in log.text and "earlier entries" in log.text
    for path, params, status in (("/models/" + "a" * 64, {}, 404), ("/bundles/ABC", {}, 400),
                                 ("/log", {"start": "0"}, 400), ("/log", {"limit": "99999"}, 400),
                                 ("/", {"task": "nope"}, 404), ("/", {"sort": "rank"}, 400),
                                 ("/", {"sandboxed": "perhaps"}, 400), ("/static/evil.js", {}, 404)):
        answer = get(board, path, **params)
        assert answer.status_code == status, (path, params, answer.text[:200])


def test_facts_of_a_bundle_with_an_empty_environment():
    facts = facts_of(typed({"environment": {}, "runner": {"kind": "local", "sandboxed": False}}))
    assert facts.runner == "local" and facts.sandboxed is False
    assert facts.hardware_class.startswith("cpu=unknown")


def test_model_page_lists_the_attestations_of_its_bundle(board):
    key = Ed25519PrivateKey.generate()
    fp = fingerprint(public_raw(key))
    board.db.add_key(fp, public_raw(key), "carol", role="auditor")
    bundle_id = board.bundles["alice/middle"]
    payload = {"bundle_id": bundle_id, "created_at": utc_now_text(), "verdict": "reproduced",
               "auditor": {"key_fingerprint": fp}, "fields": {"metrics.perf": "identical"},
               "hardware_class": "Test CPU 2000, 2 cores", "evaluator_image": None, "runner": "docker"}
    sent = requests.post(f"{board.url}/api/attestations", data=sign_attestation(payload, key).raw, timeout=10)
    assert sent.status_code == 201, sent.text
    page = get(board, f"/models/{bundle_id}").text
    audit = page[page.index('id="audit"'):page.index('id="log-entry"')]
    assert "carol" in audit and "reproduced" in audit and "metrics.perf" in audit
    assert f'href="/api/attestations/{sent.json()["attestation_id"]}"' in audit
    rows = {r["model"]: r for r in get(board, "/api/leaderboard/sentiment", audit="all").json()["rows"]}
    assert rows["middle"]["audit"]["state"] == "reproduced by 1"
    assert rows["fast-small"]["audit"]["state"] == "not audited"
