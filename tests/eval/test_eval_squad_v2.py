"""SQuAD 2.0 end to end through ``dynadesk eval``: a ``--squad-v2`` set evaluates (it used to fail in the
host's bootstrap), the QA adapter abstains by the null-score threshold chosen on a dev set (recorded in the run),
HasAns/NoAns are reported, and the point figures and the interval equal an independent computation of the
official ``evaluate-v2.0.py`` rule (written here from the official logic, not from DynaDesk's code)."""

from __future__ import annotations

import collections
import json
import random
import re
import string
import subprocess
import sys
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from support.tiny_models import make_tiny_qa

CONTEXT = ("The Normans gave their name to Normandy, a region in France. The river Seine flows past Rouen, "
           "the capital of Normandy, and Paris, the capital of France.")


def ref_normalize(s: str) -> str:
    s = "".join(ch for ch in s.lower() if ch not in set(string.punctuation))
    return " ".join(re.sub(r"\b(a|an|the)\b", " ", s).split())


def ref_f1(gold: str, pred: str) -> float:
    g, p = ref_normalize(gold).split(), ref_normalize(pred).split()
    if not g or not p:
        return float(g == p)
    same = sum((collections.Counter(g) & collections.Counter(p)).values())
    if same == 0:
        return 0.0
    precision, recall = same / len(p), same / len(g)
    return 2 * precision * recall / (precision + recall)


def ref_scores(qas: list[dict[str, Any]], preds: dict[str, str]) -> dict[str, float]:
    """Per question, the official v2.0 F1 (0-100)."""
    out = {}
    for qa in qas:
        golds = [a["text"] for a in qa["answers"] if ref_normalize(a["text"])] or [""]
        out[qa["id"]] = 100.0 * max(ref_f1(g, preds[qa["id"]]) for g in golds)
    return out


def ref_best_thresh(preds: dict[str, str], scores: dict[str, float], na_probs: dict[str, float],
                    has_ans: dict[str, bool]) -> float:
    """``find_best_thresh`` of evaluate-v2.0.py (abstain when na_prob > threshold)."""
    cur = best = sum(1 for k in has_ans if not has_ans[k])
    thresh = None
    for qid in sorted(na_probs, key=lambda k: na_probs[k]):
        cur += scores[qid] / 100.0 if has_ans[qid] else (-1 if preds[qid] else 0)
        if cur > best:
            best, thresh = cur, na_probs[qid]
    return thresh if thresh is not None else min(na_probs.values()) - 1.0


def _squad_file(path: Path, rng: random.Random, n: int, prefix: str) -> list[dict[str, Any]]:
    words = CONTEXT.split()
    qas = []
    for i in range(n):
        qid = f"{prefix}{i:03d}"
        if rng.random() < 0.45:
            qas.append({"id": qid, "question": f"Who built the {words[i % len(words)]}?", "is_impossible": True,
                        "answers": []})
        else:
            a = rng.randrange(len(words) - 3)
            text = " ".join(words[a:a + rng.randint(1, 3)])
            qas.append({"id": qid, "question": f"What is {words[(i * 7) % len(words)]}?", "is_impossible": False,
                        "answers": [{"text": text, "answer_start": CONTEXT.index(text)}]})
    path.write_text(json.dumps({"version": "v2.0", "data": [{"title": "Normans", "paragraphs": [
        {"context": CONTEXT, "qas": qas}]}]}), encoding="utf-8")
    return qas


def cli(home: Path, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-c", "from dynadesk.cli import main; main()", "--home", str(home), *args],
                          capture_output=True, text=True, timeout=600, check=False)


def _predictions(run: dict[str, Any]) -> dict[str, dict[str, Any]]:
    path = Path(run["run_dir"]) / "out" / "predictions.jsonl"
    return {r["id"]: r["prediction"] for r in map(json.loads, path.read_text().splitlines())}


@pytest.fixture(scope="module")
def squad_run(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    """One tiny QA model, a SQuAD 2.0 test set and a dev set, evaluated with the threshold chosen on dev."""
    tmp = tmp_path_factory.mktemp("squad2")
    home = tmp / "home"
    rng = random.Random(49)
    test_qas = _squad_file(tmp / "test-v2.0.json", rng, 40, "t")
    dev_qas = _squad_file(tmp / "dev-v2.0.json", rng, 30, "d")
    make_tiny_qa(tmp / "tiny-qa", seed=3)
    for args in (("models", "add", str(tmp / "tiny-qa"), "--task", "qa", "--name", "tiny-qa"),
                 ("data", "import", str(tmp / "test-v2.0.json"), "--task", "qa", "--name", "sq2", "--squad-v2"),
                 ("data", "import", str(tmp / "dev-v2.0.json"), "--task", "qa", "--name", "sq2-dev", "--squad-v2",
                  "--split", "dev")):
        proc = cli(home, *args)
        assert proc.returncode == 0, proc.stdout + proc.stderr
    proc = cli(home, "eval", "tiny-qa", "--runner", "local", "--dataset", "sq2", "--null-dev", "sq2-dev", "--json")
    assert proc.returncode == 0, proc.stdout + proc.stderr  # it used to fail: "gold answers: must be ... got []"
    run = json.loads(proc.stdout)
    runs = json.loads(cli(home, "runs", "list", "--json").stdout)
    dev_id = next(r["id"] for r in runs if r["id"] != run["id"])
    dev = json.loads(cli(home, "runs", "show", str(dev_id), "--json").stdout)
    return {"home": home, "run": run, "dev": dev, "test_qas": test_qas, "dev_qas": dev_qas, "stderr": proc.stderr}


def test_the_threshold_is_chosen_on_dev_and_recorded_in_the_run(squad_run):
    run, dev = squad_run["run"], squad_run["dev"]
    assert dev["purpose"] == "calibration" and dev["datasets"] == ["sq2-dev"]
    dev_preds = _predictions(dev)
    has = {qa["id"]: bool(qa["answers"]) for qa in squad_run["dev_qas"]}
    spans = {k: p["span_answer"] for k, p in dev_preds.items()}
    expected = ref_best_thresh(spans, ref_scores(squad_run["dev_qas"], spans),
                               {k: p["null_score_diff"] for k, p in dev_preds.items()}, has)
    settings = run["request"]["settings"]
    assert settings["null_dev"] == "sq2-dev" and settings["null_threshold"] == pytest.approx(expected, abs=1e-9)
    assert run["worker"]["null_threshold"] == settings["null_threshold"]
    assert f"chosen on 'sq2-dev' (calibration run {dev['id']})" in squad_run["stderr"]


def test_the_adapter_abstains_above_the_threshold(squad_run):
    run = squad_run["run"]
    threshold = run["request"]["settings"]["null_threshold"]
    preds = _predictions(run)
    abstained = [p for p in preds.values() if p["null_score_diff"] > threshold]
    answered = [p for p in preds.values() if p["null_score_diff"] <= threshold]
    assert all(p["answer"] == "" and p.get("abstained") for p in abstained)
    assert all(p["answer"] == p["span_answer"] and not p.get("abstained") for p in answered)


def test_point_figures_hasans_noans_and_interval_equal_the_official_rule(squad_run):
    from dynadesk.scoring.bootstrap import RESAMPLES, derive_seed

    run, qas = squad_run["run"], squad_run["test_qas"]
    preds = {k: p["answer"] for k, p in _predictions(run).items()}
    ref = ref_scores(qas, preds)
    has = [qa["id"] for qa in qas if qa["answers"]]
    no = [qa["id"] for qa in qas if not qa["answers"]]
    value = {m["metric"]: m["value"] for m in run["metrics"] if m["dataset"] == "sq2"}
    assert value["squad_f1"] == pytest.approx(sum(ref.values()) / len(ref), abs=1e-9)
    assert value["has_ans"] == pytest.approx(sum(ref[k] for k in has) / len(has), abs=1e-9)
    assert value["no_ans"] == pytest.approx(sum(ref[k] for k in no) / len(no), abs=1e-9)
    # the interval: the documented procedure (seeded percentile bootstrap) over the official per-question scores
    interval = run["profile"]["intervals"]["sq2"]
    data = (Path(run["run_dir"]) / "data").glob("*.jsonl")
    order = [json.loads(line)["id"] for f in data for line in f.read_text().splitlines() if line.strip()]
    import hashlib

    sha = hashlib.sha256(next((Path(run["run_dir"]) / "data").glob("*.jsonl")).read_bytes()).hexdigest()
    seed = derive_seed(run["predictions_digest"], f"sha256:{sha}", "squad_f1")
    idx = np.random.default_rng(seed).integers(0, len(order), size=(RESAMPLES, len(order)), dtype=np.int64)
    scores = np.array([ref[k] for k in order])
    low, high = np.percentile(scores[idx].mean(axis=1), [2.5, 97.5])
    assert interval["low"] == pytest.approx(low, abs=1e-9) and interval["high"] == pytest.approx(high, abs=1e-9)


def test_a_v11_set_never_abstains(tmp_path):
    from dynadesk.evaluator.adapters import load_adapter

    model = make_tiny_qa(tmp_path / "qa", seed=3)
    manifest = json.loads((model / "dynadesk-model.json").read_text())
    batch = [{"context": CONTEXT, "question": "What is Normandy?"}] * 2
    plain = load_adapter(model, manifest).predict(batch)
    assert all(set(p) == {"answer", "start", "end", "score"} and p["answer"] for p in plain)
    strict = load_adapter(model, {**manifest, "null_threshold": -1e9}).predict(batch)
    assert all(p["answer"] == "" and p["abstained"] and p["span_answer"] == plain[0]["answer"] for p in strict)


def test_a_squad_v2_set_evaluates_with_the_default_threshold(squad_run, tmp_path):
    """Without --null-dev the threshold is 0 (recorded); this eval used to fail in the host's bootstrap."""
    proc = cli(squad_run["home"], "eval", "tiny-qa", "--runner", "local", "--dataset", "sq2", "--json")
    assert proc.returncode == 0, proc.stdout + proc.stderr
    run = json.loads(proc.stdout)
    assert run["worker"]["null_threshold"] == 0.0 and "null_dev" not in run["request"]["settings"]
    names = {m["metric"] for m in run["metrics"] if m["dataset"] == "sq2"}
    assert {"has_ans", "no_ans", "squad_f1"} <= names and "sq2" in run["profile"]["intervals"]


NO_SUITES = ("--weight", "robustness=0", "--weight", "fairness=0")  # no perturbation sets: a board without them


def _board_run(squad_run) -> dict[str, Any]:
    """The run the local board ranks for tiny-qa (its newest evaluation) and the board's JSON."""
    proc = cli(squad_run["home"], "leaderboard", "qa", *NO_SUITES, "--json")
    assert proc.returncode == 0, proc.stderr
    board = json.loads(proc.stdout)
    (row,) = board["rows"]
    run = json.loads(cli(squad_run["home"], "runs", "show", str(row["evaluation_id"]), "--json").stdout)
    return {"row": row, "run": run}


def _figures(run: dict[str, Any]) -> dict[str, float]:
    return {m["metric"]: m["value"] for m in run["metrics"] if m["dataset"] == "sq2"}


def test_the_local_board_shows_hasans_and_noans_beside_perf(squad_run):
    got = _board_run(squad_run)
    fig = _figures(got["run"])
    assert got["row"]["values"]["has_ans"] == fig["has_ans"] and got["row"]["values"]["no_ans"] == fig["no_ans"]
    proc = cli(squad_run["home"], "leaderboard", "qa", *NO_SUITES)
    assert proc.returncode == 0, proc.stderr
    assert f"(HasAns {fig['has_ans']:.2f} · NoAns {fig['no_ans']:.2f})" in proc.stdout, proc.stdout


@pytest.mark.qt
def test_the_apps_board_shows_hasans_and_noans_beside_perf(squad_run, require_qt):
    from dynadesk.gui.pages.leaderboard import _shown
    from dynadesk.scoring.board import Weighting
    from dynadesk.scoring.leaderboard import build_leaderboard, parse_weights
    from dynadesk.workspace import Workspace

    fig = _figures(_board_run(squad_run)["run"])
    store = Workspace(squad_run["home"]).open_store()
    try:
        (row,) = build_leaderboard(store, "qa", Weighting(parse_weights(NO_SUITES[1::2], "--weight"))).rows
    finally:
        store.close()
    assert f"(HasAns {fig['has_ans']:.2f} · NoAns {fig['no_ans']:.2f})" in str(_shown(row, "perf"))


def test_the_public_board_and_model_page_show_hasans_and_noans(squad_run, tmp_path):
    """The run's signed bundle (its null threshold in the request and worker settings) is accepted by a real
    server; the board's rows carry HasAns / NoAns and the model page writes them beside perf."""
    from fastapi.testclient import TestClient

    from dynadesk.sync.client.create import create_bundle
    from dynadesk.sync.format.keys import generate_key, key_info
    from dynadesk.sync.server.admin import import_workspace_datasets
    from dynadesk.sync.server.app import create_app
    from dynadesk.sync.server.db import ServerDB
    from dynadesk.workspace import Workspace

    run = squad_run["run"]
    fig = _figures(run)
    ws = Workspace(squad_run["home"])
    generate_key(ws.keys_dir, None, force=True)
    store = ws.open_store()
    try:
        bundle = create_bundle(ws, store, run["id"])
    finally:
        store.close()
    assert bundle.payload.request.settings.null_threshold == run["request"]["settings"]["null_threshold"]
    target = tmp_path / "server.db"
    db = ServerDB(target)
    info = key_info(ws.keys_dir)
    db.add_key(info.fingerprint, bytes.fromhex(info.public_key_hex), "alice")
    import_workspace_datasets(db, ws.home)
    with TestClient(create_app(target, tmp_path / "server.key"), raise_server_exceptions=False) as client:
        posted = client.post("/api/bundles", content=bundle.raw)
        assert posted.status_code == 201, posted.text
        answer = client.get("/api/leaderboard/qa", params={"hardware_class": "all", "weight.robustness": "0",
                                                           "weight.fairness": "0"}).json()
        rows = answer["rows"]
        assert len(rows) == 1, answer
        (row,) = rows
        assert row["per_dataset"]["has_ans"]["sq2"] == fig["has_ans"]
        assert row["per_dataset"]["no_ans"]["sq2"] == fig["no_ans"]
        page = client.get(f"/models/{bundle.id}").text
    db.close()
    assert "SQuAD 2.0 (HasAns / NoAns)" in page
    assert f"sq2: perf {fig['perf']:.2f} (HasAns {fig['has_ans']:.2f} · NoAns {fig['no_ans']:.2f})" in page
