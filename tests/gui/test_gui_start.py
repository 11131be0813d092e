"""The start page (issue 47): a brand-new workspace opens on it; its steps fetch the bundled data and build the demo
zoo with progress, the other two open the pages that do them; afterwards the pages open on the task that has data.
Real workspace, the real pinned sdist (from the repository's download cache), real widgets."""

from __future__ import annotations

import shutil

import pytest
from PySide6.QtCore import Qt
from support.gui import loaded, make_window, write_jsonl

pytestmark = pytest.mark.qt


def _sdist_into(workspace_cache):
    """The pinned sdist where the workspace looks for it (one real download per machine, as the data tests do)."""
    from support import REPO

    from dynadesk.recipes import fetch_sdist, load_recipe

    cache = REPO / ".cache" / "downloads"
    cache.mkdir(parents=True, exist_ok=True)
    sdist = fetch_sdist(load_recipe(), cache)
    workspace_cache.mkdir(parents=True, exist_ok=True)
    shutil.copy(sdist, workspace_cache / sdist.name)


@pytest.fixture
def fresh(require_qt, qtbot, tmp_path):
    services, window = make_window(qtbot, tmp_path)
    yield services, window
    window.close()
    services.close()


def test_a_new_workspace_opens_on_the_start_page_and_fetches_the_bundled_data(fresh, qtbot):
    services, window = fresh
    page = window.stack.currentWidget()
    assert page is window.pages["start"]
    loaded(qtbot, page)
    assert page.states["fetch"].text() == "not yet" and page.states["import"].text() == "no dataset yet"
    _sdist_into(services.ws.workspace.cache_dir)
    lines: list[str] = []
    page._svc.progress.connect(lambda event: lines.append(event.message))
    with qtbot.waitSignal(page._svc.finished, timeout=120_000) as blocker:
        qtbot.mouseClick(page.buttons["fetch"], Qt.MouseButton.LeftButton)
        assert not page.buttons["zoo"].isEnabled() and page.cancel_button.isEnabled()  # one job at a time
    names = blocker.args[0]
    assert page.banner.kind == "ok" and f"{len(names)} datasets" in page.banner.text()
    assert any("registered" in line for line in lines)  # the progress lines reached the page
    loaded(qtbot, page)
    qtbot.waitUntil(lambda: page.states["fetch"].text().startswith("✔"), timeout=10_000)
    assert page.states["fetch"].text() == f"✔ {len(names)} bundled sets in the workspace"
    assert "tasks with data: sentiment" in page.states["import"].text()
    assert {d.name for d in services.ws.store.datasets.list("sentiment")} == set(names)
    # the pages now open on the task that has data, not on the first name (hate_speech)
    for key in ("evaluate", "annotate", "train", "validate"):
        assert window.show_page(key).task_combo.currentText() == "sentiment", key


def test_the_demo_zoo_is_built_from_the_page(fresh, qtbot):
    from dynadesk.models.zoo import MAJORITY

    services, window = fresh
    page = loaded(qtbot, window.show_page("start"))
    _sdist_into(services.ws.workspace.cache_dir)
    page._svc.zoo_only = (MAJORITY,)  # the cheapest demo model: the same job, minutes shorter
    with qtbot.waitSignal(page._svc.finished, timeout=300_000):
        qtbot.mouseClick(page.buttons["zoo"], Qt.MouseButton.LeftButton)
    assert page.banner.kind == "ok" and f"{MAJORITY} (built" in page.banner.text()
    assert [m.name for m in services.ws.store.models.list()] == [MAJORITY]
    qtbot.waitUntil(lambda: page.states["zoo"].text() == "✔ 1 demo models registered", timeout=10_000)
    assert page.states["fetch"].text().startswith("✔")  # the zoo fetched the data it trains on


def test_the_other_steps_open_their_pages(fresh, qtbot):
    _services, window = fresh
    page = loaded(qtbot, window.show_page("start"))
    qtbot.mouseClick(page.buttons["import"], Qt.MouseButton.LeftButton)
    assert window.stack.currentWidget() is window.pages["tasks_data"]
    page = window.show_page("start")
    qtbot.mouseClick(page.buttons["model"], Qt.MouseButton.LeftButton)
    assert window.stack.currentWidget() is window.pages["models"]


def test_a_workspace_with_data_opens_on_tasks_and_data(require_qt, qtbot, tmp_path):
    from support.gui import sentiment_rows

    from dynadesk.data import import_dataset
    from dynadesk.workspace import Workspace

    home = tmp_path / "ws"
    st = Workspace(home).open_store()
    import_dataset(st, "sentiment", write_jsonl(tmp_path / "d.jsonl", sentiment_rows(5)), name="d")
    st.close()
    services, window = make_window(qtbot, tmp_path, home)
    try:
        assert window.stack.currentWidget() is window.pages["tasks_data"]
    finally:
        window.close()
        services.close()
