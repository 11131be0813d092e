"""A five-label workspace task in one flow: file → data → tiny model → annotation through the app's widgets
(create → validate → round stats) → Docker evaluation → bundle → a real server with the task registered → the
row read back from the API and the page.

The task exists only in the workspace (and, registered by file, on the server): the evaluator image's
resources/tasks/ does not know it, so the container must work from the definition the run spec carries.
Live prediction and the local board are checked on the same task without Docker.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import requests
from click.testing import CliRunner
from support.eval import IMAGE_CACHE, run_request
from support.sync import admin, free_port, start_server, stop_server
from support.tiny_models import make_tiny_classifier
from test_tasks_server import LABELS
from test_tasks_workspace import EMOTION

from dynadesk.cli import cli
from dynadesk.models.registry import register_model
from dynadesk.orchestration.evaluate import default_limits, evaluate
from dynadesk.tasks import parse_task_text, task_digest
from dynadesk.workspace import Workspace

WORDS = "she is so happy he was sad angry her brother afraid his mother scared what a day great awful".split()


def _write_data(path: Path, n: int) -> Path:
    """A JSONL file in the task's schema whose labels are numbered, read through --label-map."""
    rows = [{"id": f"emo-{i}", "statement": " ".join(WORDS[(i * k) % len(WORDS)] for k in range(1, 6)),
             "label": str(i % 5)} for i in range(n)]
    path.write_text("".join(json.dumps(r) + "\n" for r in rows))
    return path


def _define_and_import(home: Path, tmp_path: Path) -> CliRunner:
    runner = CliRunner()
    task_file = tmp_path / "emotion.yaml"
    task_file.write_text(EMOTION)
    res = runner.invoke(cli, ["tasks", "add", str(task_file)])
    assert res.exit_code == 0, res.output
    maps = [a for i, lab in enumerate(LABELS) for a in ("--label-map", f"{i}={lab}")]
    res = runner.invoke(cli, ["data", "import", str(_write_data(tmp_path / "emo.jsonl", 20)), "--task", "emotion",
                              "--name", "emotion-test", "--split", "test", *maps])
    assert res.exit_code == 0, res.output
    res = runner.invoke(cli, ["perturb", "emotion-test"])  # the task's suites: case, typos (robustness), gender
    assert res.exit_code == 0, res.output
    return runner


def _register_tiny(home: Path, tmp_path: Path) -> None:
    folder = make_tiny_classifier(tmp_path / "emo-tiny", list(LABELS), task="emotion", inputs=["statement"])
    store = Workspace(home).open_store()
    try:
        register_model(store, folder, "emotion", name="emo-tiny")
    finally:
        store.close()


def _annotate_in_the_app(qtbot, tmp_path: Path, home: Path) -> None:
    """Create two examples against the tiny model (one fooling it, one not) with the form's label buttons and
    keys, validate both as an owner, and read the round's statistics: all through the app's widgets."""
    from PySide6.QtCore import Qt
    from support.gui import make_window, open_round, round_row, submit_example, switch_annotator

    from dynadesk.models.live import predict_live

    texts = ("the storm tore the roof away", "what a lovely party")
    store = Workspace(home).open_store()
    try:  # the tiny model's answers decide which target fools it
        predicted = [predict_live(store, "emo-tiny", {"statement": t})["label"] for t in texts]
    finally:
        store.close()
    targets = [next(lab for lab in LABELS if lab != predicted[0]), predicted[1]]
    services, window = make_window(qtbot, tmp_path, home)
    ann = services.annotation
    ann.add_annotator("alice")
    ann.add_annotator("olga", role="owner")  # an owner's vote decides at once
    try:
        open_round(qtbot, window, "emotion")
        page = window.show_page("annotate")
        page.select_task("emotion")
        assert list(page.inputs) == ["statement"]
        buttons = [b.property("label") for b in page.target_group.buttons()]
        assert buttons == list(LABELS)  # one button per label of the task file, in its order
        for text, target, fooled in zip(texts, targets, (True, False)):
            qtbot.waitUntil(page.inputs["statement"].hasFocus, timeout=2000)
            qtbot.keyClicks(page.inputs["statement"], text)
            key = Qt.Key(Qt.Key.Key_1 + LABELS.index(target))
            qtbot.keyClick(page.focusWidget(), key, Qt.KeyboardModifier.ControlModifier)
            assert page.target_group.checkedButton().property("label") == target
            ex = submit_example(qtbot, page)
            assert (ex.target, ex.fooled) == (target, fooled)
        switch_annotator(window, "olga")
        val = window.show_page("validate")
        val.select_task("emotion")
        assert val.progress_label.text() == "0 done · 2 left"
        val.setFocus()
        qtbot.keyClick(val, Qt.Key.Key_C)
        assert val.banner.kind == "ok", val.banner.text()
        qtbot.keyClick(val, Qt.Key.Key_C)
        assert val.progress_label.text() == "2 done · 0 left"
        row = round_row(window, "emotion")
        assert row[3:8] == ["2", "1", "1", "50.0%", "50.0%"], row  # as for a bundled task
    finally:
        window.close()
        services.close()


@pytest.mark.docker
@pytest.mark.qt
@pytest.mark.timeout(1800)
def test_a_five_label_task_from_file_to_a_public_board_row(home: Path, tmp_path: Path, docker_client,
                                                            require_debootstrap, require_qt, qtbot, browser) -> None:
    from dynadesk.orchestration.image import build_image

    image = build_image(IMAGE_CACHE, client=docker_client)
    runner = _define_and_import(home, tmp_path)
    _register_tiny(home, tmp_path)
    _annotate_in_the_app(qtbot, tmp_path, home)
    ws = Workspace(home)
    store = ws.open_store()
    try:
        rec = evaluate(store, ws, run_request("emo-tiny", ["emotion-test"], runner="docker", image=image.image_id,
                                              limits=default_limits(cpus=1.0, timeout_s=600), latency_samples=4,
                                              warmup=0), client=docker_client)
    finally:
        store.close()
    assert rec.status == "succeeded", f"{rec.error}\n{rec.log[-3000:]}"
    assert rec.sandboxed and rec.task == "emotion"
    preds = [json.loads(line) for line in (Path(rec.run_dir) / "out" / "predictions.jsonl").read_text().splitlines()]
    assert len([p for p in preds if p["dataset"] == "emotion-test"]) == 20
    assert len(preds) > 20 and {p["prediction"]["label"] for p in preds} <= set(LABELS)  # and the derived suites
    assert {m.metric for m in rec.metrics} >= {"perf", "macro_f1", "robustness", "fairness", "throughput", "memory"}

    assert runner.invoke(cli, ["keys", "init"]).exit_code == 0
    pub = tmp_path / "alice.pub"
    assert runner.invoke(cli, ["keys", "export", "-o", str(pub)]).exit_code == 0
    res = runner.invoke(cli, ["bundle", "create", str(rec.id), "--json"])
    assert res.exit_code == 0, res.output
    bid = json.loads(res.output)["id"]
    digest = task_digest(parse_task_text(EMOTION, "x"))
    assert json.loads((ws.bundles_dir / f"{bid}.json").read_text())["payload"]["task_digest"] == digest

    db = tmp_path / "board.db"
    admin(db, "keys", "add", str(pub), "--name", "alice")
    admin(db, "tasks", "add", str(tmp_path / "emotion.yaml"))
    assert "accepted 1 dataset(s)" in admin(db, "datasets", "import-workspace", "--home", str(home)).stdout
    port = free_port()
    proc = start_server(db, port)
    url = f"http://127.0.0.1:{port}"
    try:
        res = runner.invoke(cli, ["sync", "--server", url, "--json"])
        assert res.exit_code == 0, res.output
        assert json.loads(res.output)["sent"] == [bid]
        board = requests.get(f"{url}/api/leaderboard/emotion", timeout=10).json()
        # the tiny random model may answer one label for all 20 examples: then it is a baseline (issue 44), unranked
        base = [b["model"] for b in board["baselines"]]
        assert [r["model"] for r in board["rows"]] + base == ["emo-tiny"], json.dumps(board)[:1500]
        assert all(b["baseline"]["constant"] for b in board["baselines"])
        page = browser.new_page()  # the board page renders its tables from the API in the browser
        page.goto(f"{url}/")
        page.wait_for_selector("#task-emotion[data-loaded]")
        if base:
            assert "emo-tiny" in page.inner_text("#task-emotion .baselines-box")
            assert "only rows are baselines" in page.inner_text("#board-emotion")
        else:
            rows = page.inner_text("#board-emotion tbody")
            assert "emo-tiny" in rows and len(page.query_selector_all("#board-emotion tbody tr")) == 1, rows
        page.close()
    finally:
        stop_server(proc)


def test_live_prediction_and_the_local_board_for_a_workspace_task(home: Path, tmp_path: Path) -> None:
    from dynadesk.models.live import predict_live
    from dynadesk.scoring.leaderboard import build_leaderboard

    _define_and_import(home, tmp_path)
    _register_tiny(home, tmp_path)
    ws = Workspace(home)
    store = ws.open_store()
    try:
        out = predict_live(store, "emo-tiny", {"statement": "she is so happy"})
        assert out["label"] in LABELS and set(out["probs"]) == set(LABELS)
        assert sum(out["probs"].values()) == pytest.approx(1.0, abs=1e-4)
        rec = evaluate(store, ws, run_request("emo-tiny", ["emotion-test"], runner="local", latency_samples=2,
                                              warmup=0))
        assert rec.status == "succeeded", rec.error
        board = build_leaderboard(store, "emotion")
        # a tiny random model answering one label for every example is a baseline (issue 44), listed unranked
        assert [r.model for r in board.rows] + [b.model for b in board.baselines] == ["emo-tiny"]
        assert all(b.baseline and b.baseline["constant"] for b in board.baselines)
    finally:
        store.close()
    # the audit of its bundle: signature, model folder, the task's datasets and the run's fields
    runner = CliRunner()
    assert runner.invoke(cli, ["keys", "init"]).exit_code == 0
    res = runner.invoke(cli, ["bundle", "create", str(rec.id), "--json"])
    assert res.exit_code == 0, res.output
    path = ws.bundles_dir / f"{json.loads(res.output)['id']}.json"
    res = runner.invoke(cli, ["audit", str(path), "--against", str(rec.id), "--json"])
    assert res.exit_code == 0, res.output
    doc = json.loads(res.output)
    assert doc["verdict"].startswith("OK") and not [c for c in doc["checks"] if c["verdict"] == "differs"]
