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
from click.testing import CliRunner
from support.sync import admin, free_port, start_server, stop_server
from test_scoring_squad_v2 import _dev

from dynadesk.cli import cli
from dynadesk.store.evaluations import MetricValue, RunChange, RunSetup
from dynadesk.workspace import Workspace


def _qa_run(home: Path, tmp_path: Path) -> tuple[int, dict]:
    """An answerable-only SQuAD 2.0 test set with the reference's AugLy suites and a succeeded run on it: a real run
    folder (the library's own ``prepare``) whose predictions change on every other perturbed copy; returns the run
    and the host's own robustness/fairness values and coverage (what every surface must show)."""
    from dynadesk.evaluator.schema import Settings
    from dynadesk.orchestration.evaluate import prepare
    from dynadesk.orchestration.folder import RunFolder
    from dynadesk.orchestration.recompute import recompute
    from dynadesk.store.evaluations import WorkerSettings
    from dynadesk.tasks import get_task

    dataset, _preds = _dev(random.Random(3), 40)
    for n, qa in enumerate(dataset[0]["paragraphs"][0]["qas"]):  # questions the gender suite can change (some)
        qa["question"] = f"What did she ask in question {n}?" if n % 3 else qa["question"]
    path = tmp_path / "dev-v2.0.json"
    path.write_text(json.dumps({"version": "v2.0", "data": dataset}))
    runner = CliRunner()
    res = runner.invoke(cli, ["data", "import", str(path), "--task", "qa", "--name", "squad-dev"])
    assert res.exit_code == 0, res.output
    res = runner.invoke(cli, ["perturb", "squad-dev", "--suite-set", "dynaboard-augly"])
    assert res.exit_code == 0, res.output
    store = Workspace(home).open_store()
    try:
        digest = "sha256:" + hashlib.sha256(b"qa-model").hexdigest()
        store.models.add("qa-model", "qa", "hf-question-answering", "/models/qa-model", digest, {"task": "qa"})
        model = store.models.get("qa-model")
        ev = store.evaluations.create(model.id, "qa", RunSetup(worker=WorkerSettings(seed=13)), runner="docker",
                                      sandboxed=True, datasets=["squad-dev"], status="running")
        folder = RunFolder(Path(store.path).parent / "runs" / str(ev))
        prepare(store, folder, model, get_task("qa"), [store.datasets.get("squad-dev")],
                Settings(batch_size=32, seed=13))
        lines = []
        for entry in json.loads(folder.spec_file.read_text())["datasets"]:
            for i, line in enumerate((folder.data_dir / entry["file"]).read_text().splitlines()):
                answer = "x" if entry["role"] == "test" or i % 2 else "y"  # every other perturbed copy changes
                lines.append(json.dumps({"dataset": entry["name"], "id": json.loads(line)["id"],
                                         "prediction": {"answer": answer}}, sort_keys=True))
        folder.predictions_file.write_text("\n".join(lines) + "\n", encoding="utf-8")
        rows, _notes = recompute(folder.spec_file, folder.data_dir, folder.predictions_file)
        store.evaluations.set_metrics(
            ev, [MetricValue(r["dataset"], r["metric"], r["value"], r["unit"], True) for r in rows]
            + [MetricValue("", "throughput", 50.0, "examples/s", False), MetricValue("", "memory", 0.5, "GiB", False)],
            RunChange(image_id="sha256:" + "ab" * 32, evaluator_version="sha256:" + "cd" * 32, run_dir=str(folder.root),
                      predictions_digest="sha256:" + hashlib.sha256(folder.predictions_file.read_bytes()).hexdigest(),
                      environment={"cpu": "Test CPU", "cores": 2, "python": "3.11.2", "torch": "2.13.0", "gpu": None}),
            status="succeeded")
        got = {r["metric"]: r["value"] for r in rows if r["dataset"] == "squad-dev"}
        expected = {k: {"value": got[k], "sources": int(got[f"{k}_sources"]),
                        "low_confidence": bool(got[f"{k}_low_confidence"])} for k in ("robustness", "fairness")}
        assert expected["robustness"]["sources"] > 0 and expected["fairness"]["sources"] > 0, got
        return ev, expected
    finally:
        store.close()


def _n(cov: dict) -> str:
    return f"(n={cov['sources']}{' low' if cov['low_confidence'] else ''})"


def _coverage(expected: dict) -> dict:
    return {k: {"sources": v["sources"], "low_confidence": v["low_confidence"]} for k, v in expected.items()}


def test_the_local_board_shows_coverage_beside_robustness_and_fairness(home: Path, tmp_path: Path) -> None:
    _ev, exp = _qa_run(home, tmp_path)
    runner = CliRunner()
    res = runner.invoke(cli, ["leaderboard", "qa"])
    assert res.exit_code == 0, res.output
    line = next(ln for ln in res.output.splitlines() if "qa-model" in ln)
    rob, fair = exp["robustness"], exp["fairness"]
    assert f"{rob['value']:.2f} {_n(rob)}" in line and f"{fair['value']:.2f} {_n(fair)}" in line, res.output
    assert "n: source examples the robustness/fairness suites changed" in res.output
    assert "qa-model dynaboard-augly" in res.output  # the row's suite set, as before
    (row,) = json.loads(runner.invoke(cli, ["leaderboard", "qa", "--json"]).output)["rows"]
    assert row["coverage"] == _coverage(exp)
    assert row["values"]["robustness_sources"] == rob["sources"] and row["robustness_suites"] == ["dynaboard-augly"]


@pytest.mark.qt
def test_the_apps_board_shows_coverage_beside_the_values(require_qt, qtbot, home: Path, tmp_path: Path) -> None:
    from support.gui import loaded, make_window

    _ev, exp = _qa_run(home, tmp_path)
    services, window = make_window(qtbot, tmp_path, home)
    try:
        page = window.show_page("leaderboard")
        page.select_task("qa")
        loaded(qtbot, page)
        headers = [page.table.horizontalHeaderItem(c).text().split("\n")[0] for c in range(page.table.columnCount())]
        cells = {h: page.table.item(0, c).text() for c, h in enumerate(headers)}
        rob, fair = exp["robustness"], exp["fairness"]
        for k, want in (("robustness", rob), ("fairness", fair)):  # the value as the table rounds it, then coverage
            shown, _, cov = cells[k].partition(" ")
            assert abs(float(shown) - want["value"]) < 1e-3 and cov == _n(want), cells
        assert "source examples the robustness/fairness suites changed" in page.notes.text()
    finally:
        window.close()
        services.close()


def test_bundle_and_server_say_answerable_only_suite_set_and_coverage(home: Path, tmp_path: Path, browser) -> None:
    ev, exp = _qa_run(home, tmp_path)
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
    assert signed["robustness_sources"] == exp["robustness"]["sources"]  # coverage travels signed
    assert signed["fairness_sources"] == exp["fairness"]["sources"]
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
        assert row["coverage"] == _coverage(exp)
        model = requests.get(f"{url}/models/{bid}", timeout=10).text
        assert "answerable-only: unanswerable questions left out" in model
        assert "robustness suites: dynaboard-augly" in model
        assert f"robustness: {exp['robustness']['sources']} source examples changed" in model
        page = browser.new_page()
        page.goto(f"{url}/?task=qa")
        page.wait_for_selector("#task-qa[data-loaded] #board-qa tbody tr")
        cells = page.inner_text("#board-qa tbody tr")
        assert "answerable-only: squad-dev" in cells, cells
        assert all(_n(exp[k]).strip("()") in cells for k in ("robustness", "fairness")), cells
        assert "reference AugLy suites" in cells, cells
        page.close()
    finally:
        stop_server(proc)
