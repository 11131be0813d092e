"""The Evaluate page's Queue field: a broker URL sends the run to a real `dynadesk worker`; no password is refused."""

from __future__ import annotations

import pytest
from support.gui import majority_model, make_window, sentiment_rows, write_jsonl
from support.queue import start_worker, trust

pytestmark = pytest.mark.qt


def _page(qtbot, tmp_path):
    from PySide6.QtCore import Qt

    from dynadesk.data import import_dataset
    from dynadesk.models import register_model
    from dynadesk.workspace import Workspace

    home = tmp_path / "ws"
    st = Workspace(home).open_store()
    import_dataset(st, "sentiment", write_jsonl(tmp_path / "d.jsonl", sentiment_rows(30)), name="small")
    register_model(st, majority_model(tmp_path / "m"), "sentiment", name="m")
    st.close()
    _services, window = make_window(qtbot, tmp_path, home)
    page = window.show_page("evaluate")
    page.select_task("sentiment")
    page.set_checked(page.model_list, ["m"])
    page.set_checked(page.dataset_list, ["small"])
    page.runner.setCurrentIndex(page.runner.findData("local"))
    return page, Qt.MouseButton.LeftButton


def test_a_broker_url_without_password_is_refused_on_the_page(require_qt, qtbot, tmp_path):
    page, left = _page(qtbot, tmp_path)
    page.queue.setText("redis://127.0.0.1:6379/0")
    qtbot.mouseClick(page.start_button, left)
    assert "has no password" in page.banner.text() and not page._svc.running


def test_a_queued_run_from_the_page_runs_on_a_worker_and_is_stored_here(require_qt, qtbot, tmp_path, redis_server):
    page, left = _page(qtbot, tmp_path)
    worker = start_worker(redis_server, tmp_path / "box" / "ws", "box-1", "--allow-unsandboxed")
    from dynadesk.workspace import Workspace

    st = Workspace(tmp_path / "ws").open_store()
    trust(st, worker)
    st.close()
    try:
        page.queue.setText(redis_server.url)
        qtbot.mouseClick(page.start_button, left)
        assert page._svc.running
        qtbot.waitUntil(lambda: not page._svc.running, timeout=180_000)
    finally:
        worker.stop()
    (record,) = page._svc.runs()
    assert record.status == "succeeded", record.error
    assert record.queue.worker == "box-1" and not record.sandboxed
