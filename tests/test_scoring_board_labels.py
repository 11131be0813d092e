"""What a robustness, fairness or QA figure rests on is said wherever it is shown.

- coverage: how many source examples the suites changed, beside the robustness and fairness values (CLI table
  and --json, the demo's board, the app's table, the bundle's metrics, the server's API and board page);
- answerable-only: a SQuAD 2.0 file imported without --squad-v2 (the dataset record, the bundle, the board);
- the robustness suite set (DynaDesk's own or the reference's AugLy families) in the bundle and on the server page.
"""

from __future__ import annotations

import hashlib
import json
import random
from pathlib import Path

import pytest
import requests
from _board_helpers import chromium
from _sync_helpers import free_port, start_server, stop_server
from click.testing import CliRunner
from test_scoring_squad_v2 import _dev
from test_tasks_server import admin

from dynadesk.cli import cli
from dynadesk.store.evaluations import MetricValue
from dynadesk.workspace import Workspace


def _qa_run(home: Path, tmp_path: Path) -> int:
    """An answerable-only SQuAD 2.0 test set with the reference's AugLy suites, and a succeeded run on it whose
    robustness rests on 12 source examples (low confidence) and fairness on 31."""
    dataset, _preds = _dev(random.Random(3), 40)
    path = tmp_path / "dev-v2.0.json"
    path.write_text(json.dumps({"version": "v2.0", "data": dataset}))
    runner = CliRunner()
    res = runner.invoke(cli, ["data", "import", str(path), "--task", "qa", "--name", "squad-dev"])
    assert res.exit_code == 0, res.output
    res = runner.invoke(cli, ["perturb", "squad-dev", "--suite-set", "dynaboard-augly"])
    assert res.exit_code == 0, res.output
    store = Workspace(home).open_store()
    try:
        examples = store.datasets.examples("squad-dev")
        digest = "sha256:" + hashlib.sha256(b"qa-model").hexdigest()
        store.models.add("qa-model", "qa", "hf-question-answering", "/models/qa-model", digest, {"task": "qa"})
        ev = store.evaluations.create(store.models.get("qa-model").id, "qa", "docker", True, {"seed": 13},
                                      ["squad-dev"], status="running")
        run_dir = Path(store.path).parent / "runs" / str(ev)
        run_dir.mkdir(parents=True, exist_ok=True)
        pred = run_dir / "predictions.jsonl"
        pred.write_text("".join(json.dumps({"dataset": "squad-dev", "id": e["id"], "prediction": {"answer": "x"}},
                                           sort_keys=True) + "\n" for e in examples))
        values = {"perf": 40.0, "squad_f1": 40.0, "exact_match": 30.0, "robustness": 70.0, "robustness_sources": 12,
                  "robustness_low_confidence": 1, "fairness": 90.0, "fairness_sources": 31,
                  "fairness_low_confidence": 0}
        units = {"robustness_sources": "examples", "fairness_sources": "examples",
                 "robustness_low_confidence": "flag", "fairness_low_confidence": "flag"}
        store.evaluations.set_metrics(
            ev, [MetricValue("squad-dev", m, float(v), units.get(m, "score"), True) for m, v in values.items()]
            + [MetricValue("", "throughput", 50.0, "examples/s", False), MetricValue("", "memory", 0.5, "GiB", False)],
            status="succeeded", image_id="sha256:" + "ab" * 32, evaluator_version="sha256:" + "cd" * 32,
            run_dir=str(run_dir), predictions_digest="sha256:" + hashlib.sha256(pred.read_bytes()).hexdigest(),
            environment={"cpu": "Test CPU", "cores": 2, "python": "3.11.2", "torch": "2.13.0", "gpu": None})
        return ev
    finally:
        store.close()


def test_the_local_board_shows_coverage_beside_robustness_and_fairness(home: Path, tmp_path: Path) -> None:
    _qa_run(home, tmp_path)
    runner = CliRunner()
    res = runner.invoke(cli, ["leaderboard", "qa"])
    assert res.exit_code == 0, res.output
    line = next(ln for ln in res.output.splitlines() if "qa-model" in ln)
    assert "70.00 (n=12 low)" in line and "90.00 (n=31)" in line, res.output
    assert "n: source examples the robustness/fairness suites changed" in res.output
    assert "qa-model dynaboard-augly" in res.output  # the row's suite set, as before
    (row,) = json.loads(runner.invoke(cli, ["leaderboard", "qa", "--json"]).output)["rows"]
    assert row["coverage"] == {"robustness": {"sources": 12, "low_confidence": True},
                               "fairness": {"sources": 31, "low_confidence": False}}
    assert row["values"]["robustness_sources"] == 12 and row["robustness_suites"] == ["dynaboard-augly"]


@pytest.mark.qt
def test_the_apps_board_shows_coverage_beside_the_values(require_qt, qtbot, home: Path, tmp_path: Path) -> None:
    from gui_support import loaded, make_window

    _qa_run(home, tmp_path)
    services, window = make_window(qtbot, tmp_path, home)
    try:
        page = window.show_page("leaderboard")
        page.select_task("qa")
        loaded(qtbot, page)
        headers = [page.table.horizontalHeaderItem(c).text().split("\n")[0] for c in range(page.table.columnCount())]
        cells = {h: page.table.item(0, c).text() for c, h in enumerate(headers)}
        assert cells["robustness"] == "70 (n=12 low)" and cells["fairness"] == "90 (n=31)", cells
        assert "source examples the robustness/fairness suites changed" in page.notes.text()
    finally:
        window.close()
        services.close()


@pytest.fixture
def browser():
    yield from chromium()


def test_bundle_and_server_say_answerable_only_suite_set_and_coverage(home: Path, tmp_path: Path, browser) -> None:
    ev = _qa_run(home, tmp_path)
    runner = CliRunner()
    assert runner.invoke(cli, ["keys", "init"]).exit_code == 0
    pub = tmp_path / "alice.pub"
    assert runner.invoke(cli, ["keys", "export", "-o", str(pub)]).exit_code == 0
    res = runner.invoke(cli, ["bundle", "create", str(ev), "--json"])
    assert res.exit_code == 0, res.output
    bid = json.loads(res.output)["id"]
    path = Workspace(home).bundles_dir / f"{bid}.json"
    payload = json.loads(path.read_text())["payload"]
    (entry,) = payload["datasets"]
    assert entry["answerable_only"] is True and entry["robustness_suites"] == ["dynaboard-augly"]
    signed = {m["metric"]: m["value"] for m in payload["metrics"] if m["dataset"] == "squad-dev"}
    assert signed["robustness_sources"] == 12 and signed["fairness_sources"] == 31  # coverage travels signed
    shown = runner.invoke(cli, ["bundle", "show", str(path)]).output
    assert "answerable-only; robustness suites dynaboard-augly" in shown, shown

    db = tmp_path / "board.db"
    admin(db, "keys", "add", str(pub), "--name", "alice")
    admin(db, "datasets", "import-workspace", "--home", str(home))
    port = free_port()
    proc = start_server(db, port)
    url = f"http://127.0.0.1:{port}"
    try:
        res = runner.invoke(cli, ["sync", "--server", url, "--json"])
        assert json.loads(res.output)["sent"] == [bid], res.output
        (row,) = requests.get(f"{url}/api/leaderboard/qa", timeout=10).json()["rows"]
        assert row["answerable_only"] == ["squad-dev"] and row["robustness_suites"] == ["dynaboard-augly"]
        assert row["coverage"] == {"robustness": {"sources": 12, "low_confidence": True},
                                   "fairness": {"sources": 31, "low_confidence": False}}
        model = requests.get(f"{url}/models/{bid}", timeout=10).text
        assert "answerable-only: unanswerable questions left out" in model
        assert "robustness suites: dynaboard-augly" in model and "robustness: 12 source examples changed" in model
        page = browser.new_page()
        page.goto(f"{url}/?task=qa")
        page.wait_for_selector("#task-qa[data-loaded] #board-qa tbody tr")
        cells = page.inner_text("#board-qa tbody tr")
        assert "answerable-only: squad-dev" in cells and "n=12 low" in cells and "n=31" in cells, cells
        assert "reference AugLy suites" in cells, cells
        page.close()
    finally:
        stop_server(proc)
