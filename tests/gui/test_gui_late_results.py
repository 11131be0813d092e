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


def test_a_job_slot_holds_one_job_and_keeps_a_closed_views_outcome_off_the_new_one(require_qt, qtbot):
    """The slot itself, with a job that waits: a second start is refused while it runs; once the view changed,
    its progress and outcome are not relayed, ``left`` names the view it belonged to, and ``done`` still follows."""
    import threading

    from dynadesk.gui.jobs import JobSlot
    from dynadesk.progress import ProgressEvent

    view = ["A"]
    slot = JobSlot("a test job", lambda: view[0])
    go, reported = threading.Event(), threading.Event()
    heard: list[tuple[str, object]] = []
    for name in ("progress", "finished", "failed", "cancelled", "left"):
        getattr(slot, name).connect(lambda *args, name=name: heard.append((name, args)))

    def job(ctx):
        ctx.progress(ProgressEvent("step", 1, 2), job="first")
        reported.set()
        assert go.wait(10)
        ctx.progress(ProgressEvent("step", 2, 2))
        return "result"

    slot.start(job)
    assert slot.running
    with pytest.raises(RuntimeError, match="a test job is already running"):
        slot.start(job)
    assert reported.wait(10)
    qtbot.waitUntil(lambda: len(heard) == 1)
    (name, (event,)), = heard
    assert name == "progress" and (event.done, event.total, event.detail["job"]) == (1, 2, "first")
    view[0] = "B"  # the user opened another view while the job runs
    with qtbot.waitSignal(slot.done, timeout=10_000):
        go.set()
    assert not slot.running
    assert heard[1:] == [("left", ("A test job started in A finished after another workspace was opened; what it "
                                   "wrote is in A.",))]
