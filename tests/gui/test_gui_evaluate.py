"""Evaluate page: a real evaluation with the local runner through the widgets — progress
arrives, the window keeps processing events, Cancel stops it and the run is stored as cancelled."""

from __future__ import annotations

import pytest
from PySide6.QtCore import Qt, QTimer
from support.gui import loaded, majority_model, make_window, sentiment_rows, write_jsonl

pytestmark = pytest.mark.qt


@pytest.fixture
def gui(require_qt, qtbot, tmp_path):
    yield lambda home: make_window(qtbot, tmp_path, home)


def _workspace(tmp_path, n_examples: int, model_folder):
    from dynadesk.data import import_dataset
    from dynadesk.models import register_model
    from dynadesk.workspace import Workspace

    home = tmp_path / "ws"
    st = Workspace(home).open_store()
    import_dataset(st, "sentiment", write_jsonl(tmp_path / "big.jsonl", sentiment_rows(n_examples)), name="big")
    register_model(st, model_folder, "sentiment", name="m")
    st.close()
    return home


def _setup_page(window, runner="local"):
    page = window.show_page("evaluate")
    page.select_task("sentiment")
    page.set_checked(page.model_list, ["m"])
    page.set_checked(page.dataset_list, ["big"])
    page.runner.setCurrentIndex(page.runner.findData(runner))
    page.batch.setValue(1)
    return page


def test_start_local_evaluation_see_progress_cancel_and_stored_cancelled(gui, qtbot, tmp_path):
    from support.tiny_models import make_tiny_classifier

    home = _workspace(tmp_path, 3000, make_tiny_classifier(tmp_path / "tiny", ["negative", "neutral", "positive"]))
    services, window = gui(home)
    page = _setup_page(window)
    svc = page._svc
    ticks = []
    heartbeat = QTimer()
    heartbeat.setInterval(50)
    heartbeat.timeout.connect(lambda: ticks.append(1))
    heartbeat.start()

    qtbot.mouseClick(page.start_button, Qt.MouseButton.LeftButton)
    assert svc.running and not page.start_button.isEnabled() and page.cancel_button.isEnabled()
    # wait until examples are being predicted (a total is known), while the UI thread keeps turning
    qtbot.waitUntil(lambda: page.progress.maximum() > 0 and page.progress.value() > 0, timeout=120_000)
    assert len(ticks) > 5  # the event loop ran throughout: the window never froze
    assert page.progress.maximum() >= 3000
    assert "predict big" in page.status_label.text()
    assert "predict big" in page.log_view.toPlainText()
    run_id = max(r.id for r in services.ws.store.evaluations.list())
    assert services.ws.store.evaluations.get(run_id).status == "running"

    with qtbot.waitSignal(svc.cancelled, timeout=60_000):
        qtbot.mouseClick(page.cancel_button, Qt.MouseButton.LeftButton)
    heartbeat.stop()
    qtbot.waitUntil(lambda: not svc.running, timeout=10_000)
    rec = services.ws.store.evaluations.get(run_id)
    assert (rec.status, rec.verdict) == ("cancelled", "cancelled")
    loaded(qtbot, page)  # the run list is read off the GUI thread
    assert page.run_status(run_id) == "cancelled"
    assert page.banner.kind == "warn" and "cancelled" in page.banner.text()
    assert page.start_button.isEnabled() and not page.cancel_button.isEnabled()
    window.close()
    services.close()


def test_local_evaluation_succeeds_and_reaches_the_leaderboard(gui, qtbot, tmp_path):
    home = _workspace(tmp_path, 30, majority_model(tmp_path / "maj"))
    services, window = gui(home)
    page = _setup_page(window)
    with qtbot.waitSignal(page._svc.finished, timeout=240_000) as blocker:
        qtbot.mouseClick(page.start_button, Qt.MouseButton.LeftButton)
    (rec,) = blocker.args[0]
    assert rec.status == "succeeded", rec.error
    assert page.banner.kind == "ok"
    loaded(qtbot, page)
    assert page.run_status(rec.id) == "succeeded"
    page.select_run(rec.id)
    assert "perf" in page.run_detail.toPlainText()
    board = window.show_page("leaderboard")
    board.select_task("sentiment")
    loaded(qtbot, board)
    # a majority model answers one label for every example: a baseline, listed unranked, and the page says so
    # (issue 44); a model lacking a Dynascore metric would be left off, and the page would say that instead
    assert board.ranking() == []
    assert "m: a baseline (its predictions are constant" in board.notes.text() or "m left off" in board.notes.text()
    window.close()
    services.close()


def test_starting_without_a_model_says_what_is_missing(gui, qtbot, tmp_path):
    home = _workspace(tmp_path, 5, majority_model(tmp_path / "maj"))
    services, window = gui(home)
    page = _setup_page(window)
    page.set_checked(page.model_list, [])
    qtbot.mouseClick(page.start_button, Qt.MouseButton.LeftButton)
    assert page.banner.kind == "error" and "model" in page.banner.text()
    assert not page._svc.running
    window.close()
    services.close()


def test_default_limits_from_settings_reach_the_evaluate_page(gui, qtbot, tmp_path):
    home = _workspace(tmp_path, 5, majority_model(tmp_path / "maj"))
    services, window = gui(home)
    page = window.show_page("evaluate")
    settings = window.show_page("settings")
    settings.timeout.setValue(900)
    settings.runner.setCurrentText("local")
    assert page.timeout.value() == 900
    assert page.runner.currentData() == "local"
    window.close()
    services.close()


@pytest.mark.docker
def test_gpu_option_follows_a_gpu_answering_and_a_cli_gpu_run_shows_its_line_on_resume(
        gui, qtbot, tmp_path, docker_client, require_debootstrap):
    """No GPU answers here: the page's GPU option is disabled with the reason. A `--gpus all` run made from the
    CLI fails with one line; resumed from the page (the stored request, no dummy values) the page shows that line."""
    import subprocess
    import sys

    from support.eval import IMAGE_CACHE
    from support.tiny_models import make_tiny_classifier

    from dynadesk.orchestration.evaluate import failure_line, gpu_status
    from dynadesk.orchestration.image import build_image

    if gpu_status("docker").ok:
        pytest.skip("a GPU answers through this Docker: the GPU request is honoured here")
    build_image(IMAGE_CACHE, client=docker_client)  # tagged for this evaluator version: the page's default image
    home = _workspace(tmp_path, 5, make_tiny_classifier(tmp_path / "tiny", ["negative", "neutral", "positive"]))
    cli = subprocess.run([sys.executable, "-c", "from dynadesk.cli import main; main()", "--home", str(home),
                          "eval", "m", "--runner", "docker", "--gpus", "all", "--dataset", "big"],
                         capture_output=True, text=True, timeout=600)
    assert cli.returncode == 1, cli.stderr[-2000:]
    services, window = gui(home)
    page = window.show_page("evaluate")
    with qtbot.waitSignal(page._svc.gpuChecked, timeout=30_000):
        page.runner.setCurrentIndex(page.runner.findData("docker"))
    assert not page.gpu.isEnabled() and not page.gpu.isChecked()
    assert page.gpu_reason.text() == gpu_status("docker").detail
    (rec,) = services.ws.store.evaluations.list()
    assert (rec.status, rec.verdict) == ("failed", "gpu_unavailable")
    line = failure_line(rec)
    assert "\n" not in line and "nvidia-container-toolkit" in line and "without --gpus" in line
    assert line in cli.stdout + cli.stderr  # the line the CLI printed
    page.refresh_runs()
    loaded(qtbot, page)
    page.select_run(rec.id)
    with qtbot.waitSignal(page._svc.finished, timeout=240_000) as blocker:
        qtbot.mouseClick(page.resume_button, Qt.MouseButton.LeftButton)
    (again,) = blocker.args[0]
    assert again.id == rec.id and again.verdict == "gpu_unavailable"  # the stored request, not dummy values
    assert page.banner.kind == "error" and page.banner.text() == failure_line(again)
    loaded(qtbot, page)
    assert "gpu_unavailable" in page.run_detail.toPlainText()  # the detail pane follows the run
    window.close()
    services.close()


def test_cli_app_and_library_share_one_set_of_defaults(gui, qtbot, tmp_path):
    from dynadesk import defaults
    from dynadesk.cli.eval_cmd import eval_cmd
    from dynadesk.gui.services.settings import DEFAULTS
    from dynadesk.orchestration.request import RunSettings, default_limits
    from dynadesk.sync.server.cli import cli as server_cli

    options = {p.name: p for p in eval_cmd.params}
    assert options["batch_size"].default == RunSettings().batch_size == DEFAULTS["limits/batch_size"] \
        == defaults.BATCH_SIZE
    limits = default_limits()
    assert limits.timeout_s == DEFAULTS["limits/timeout_s"] and limits.cpus == DEFAULTS["limits/cpus"]
    assert limits.memory_bytes == DEFAULTS["limits/memory_gib"] * (1 << 30)
    serve = {p.name: p for p in server_cli.commands["serve"].params}
    assert DEFAULTS["server_url"].endswith(f":{serve['port'].default}")
    home = _workspace(tmp_path, 5, majority_model(tmp_path / "maj"))
    services, window = gui(home)
    page = window.show_page("evaluate")
    assert (page.batch.value(), page.timeout.value(), page.cpus.value()) == (
        defaults.BATCH_SIZE, int(defaults.TIMEOUT_S), defaults.cpus())
    window.close()
    services.close()


def test_the_backend_chosen_on_the_page_is_the_runs_and_a_model_it_cannot_run_is_refused_by_name(
        gui, qtbot, tmp_path):
    """Issue 50 item 3 on the page: the CLI's --backend as a choice; the request carries it (so the run, its bundle
    and its audit do), and a model kind the backend does not run is refused before any run is stored."""
    from dynadesk.workspace import Workspace

    home = _workspace(tmp_path, 5, majority_model(tmp_path / "maj"))
    services, window = gui(home)
    page = _setup_page(window)
    assert [page.backend.itemData(i) for i in range(page.backend.count())] == ["torch", "onnxruntime"]
    assert page.request_for("m", ["big"]).settings.backend == "torch"  # the default keeps a torch run's bytes
    assert "backend" not in page.request_for("m", ["big"]).settings.to_dict()
    page.backend.setCurrentIndex(page.backend.findData("onnxruntime"))
    assert page.request_for("m", ["big"]).settings.to_dict()["backend"] == "onnxruntime"
    qtbot.mouseClick(page.start_button, Qt.MouseButton.LeftButton)
    qtbot.waitUntil(lambda: page.banner.kind == "error", timeout=60_000)
    qtbot.waitUntil(lambda: not page._svc.running, timeout=60_000)
    assert "of kind 'majority', which the onnxruntime backend does not run" in page.banner.text()
    st = Workspace(home).open_store()
    try:
        assert st.evaluations.list() == []  # refused before the run: nothing stored
    finally:
        st.close()
    window.close()
    services.close()
