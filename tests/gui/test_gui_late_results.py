"""A job's outcome belongs to the view it was started for: an evaluation started in workspace A that ends after
workspace B was opened puts neither its run numbers nor "succeeded" on B's Evaluate page; the page says in one line
that the run ended in A (where it is stored) and goes idle, ready for the next run."""

from __future__ import annotations

import pytest
from PySide6.QtCore import Qt
from support.gui import loaded, majority_model, make_window, sentiment_rows, write_jsonl

pytestmark = pytest.mark.qt


def _workspace_a(tmp_path):
    from dynadesk.data import import_dataset
    from dynadesk.models import register_model
    from dynadesk.workspace import Workspace

    home = tmp_path / "ws-a"
    st = Workspace(home).open_store()
    import_dataset(st, "sentiment", write_jsonl(tmp_path / "set.jsonl", sentiment_rows(30)), name="set")
    register_model(st, majority_model(tmp_path / "maj"), "sentiment", name="m")
    st.close()
    return home


def test_an_evaluation_that_ends_after_the_workspace_changed_is_not_shown_as_the_new_workspaces(
        require_qt, qtbot, tmp_path):
    from dynadesk.workspace import Workspace

    home_a, home_b = _workspace_a(tmp_path), tmp_path / "ws-b"
    services, window = make_window(qtbot, tmp_path, home_a)
    try:
        page = window.show_page("evaluate")
        page.select_task("sentiment")
        page.set_checked(page.model_list, ["m"])
        page.set_checked(page.dataset_list, ["set"])
        page.runner.setCurrentIndex(page.runner.findData("local"))
        svc = page._svc
        shown: list[object] = []
        for signal in (svc.progress, svc.finished, svc.runCreated):
            signal.connect(lambda *args: shown.append(args))
        qtbot.mouseClick(page.start_button, Qt.MouseButton.LeftButton)
        assert svc.running
        # the user opens another workspace while the run goes on (no event is handled in between: whatever the
        # job reports arrives after the switch)
        services.ws.switch(home_b)
        qtbot.waitUntil(lambda: not svc.running, timeout=240_000)
        qtbot.waitUntil(page.start_button.isEnabled, timeout=10_000)
        loaded(qtbot, page)
        # nothing of A's run reached B's page: no run number, no progress, no "succeeded"
        assert shown == []
        assert "succeeded" not in page.banner.text() and page.status_label.text() == "Idle"
        assert page.runs_table.rowCount() == 0
        # the page says where the run ended, and is ready for the next one
        assert page.banner.kind == "info" and str(home_a) in page.banner.text()
        assert not page.cancel_button.isEnabled()
        # the run itself went on in A and is stored there
        st = Workspace(home_a).open_store()
        try:
            assert [r.status for r in st.evaluations.list()] == ["succeeded"]
        finally:
            st.close()
    finally:
        window.close()
        services.close()
