"""Bundles & sync, keys and Audit pages over a real succeeded run in a real workspace."""

from __future__ import annotations

import pytest
from PySide6.QtCore import Qt
from support.gui import make_window

pytestmark = pytest.mark.qt


@pytest.fixture
def gui(require_qt, qtbot, tmp_path):
    from support.sync import make_run

    from dynadesk.workspace import Workspace

    home = tmp_path / "ws"
    ws = Workspace(home)
    st = ws.open_store()
    run_id = make_run(st, ws.runs_dir, model="bow-a")
    st.close()
    services, window = make_window(qtbot, tmp_path, home)
    yield services, window, run_id
    window.close()
    services.close()


def test_key_bundle_queue_sync_and_audit(gui, qtbot, tmp_path):
    from support.sync import free_port

    services, window, run_id = gui
    svc = services.bundles
    page = window.show_page("bundles")
    assert "no signing key yet" in page.keys.fingerprint.text()
    assert page.run_combo.currentData() == run_id

    with qtbot.waitSignal(svc.createFailed, timeout=20_000) as failed:  # no key yet: refused with the reason
        qtbot.mouseClick(page.create_button, Qt.MouseButton.LeftButton)
    assert "no signing key" in failed.args[0] and page.banner.kind == "error"

    qtbot.mouseClick(page.keys.create_button, Qt.MouseButton.LeftButton)
    info = svc.key_info()
    assert info is not None and info.fingerprint in page.keys.fingerprint.text()

    with qtbot.waitSignal(svc.created, timeout=20_000) as created:
        qtbot.mouseClick(page.create_button, Qt.MouseButton.LeftButton)
    bundle = created.args[0]
    assert page.banner.kind == "ok"
    assert page.table.rowCount() == 1
    assert [page.table.item(0, c).text() for c in (1, 2, 3, 4)] == ["sentiment", "bow-a", str(run_id), "queued"]
    assert window.queue_label.text() == "Sync queue: 1"

    page.server_edit.setText(f"http://127.0.0.1:{free_port()}")  # nobody listens: the bundle must stay queued
    with qtbot.waitSignal(svc.queueChanged, timeout=60_000):
        qtbot.mouseClick(page.sync_button, Qt.MouseButton.LeftButton)
    assert page.banner.kind == "error" and "stay queued" in page.banner.text()
    row = services.ws.store.bundles.get(bundle.id)
    assert (row.status, row.attempts) == ("queued", 1) and row.last_error
    assert page.table.item(0, 4).text() == "queued" and page.table.item(0, 5).text() == "1"
    assert window.queue_label.text() == "Sync queue: 1"

    audit = window.show_page("audit")
    assert audit.rerun_available and not audit.rerun_button.isEnabled()  # the audit library is there; no file yet
    audit.path_edit.setText(row.path)
    qtbot.mouseClick(audit.verify_button, Qt.MouseButton.LeftButton)
    assert "signature valid" in audit.verdict.text()
    fields = {audit.fields.item(r, 0).text(): audit.fields.item(r, 1).text() for r in range(audit.fields.rowCount())}
    assert fields["payload.task"] == "sentiment"
    assert fields["key fingerprint"] == info.fingerprint

    raw = open(row.path, "rb").read()
    tampered = tmp_path / "tampered.json"
    tampered.write_bytes(raw.replace(b'"bow-a"', b'"bow-b"', 1))
    audit.path_edit.setText(str(tampered))
    qtbot.mouseClick(audit.verify_button, Qt.MouseButton.LeftButton)
    assert "does not verify" in audit.verdict.text()
    assert audit.banner.kind == "error" and audit.fields.rowCount() == 0


def test_settings_page_manages_the_key(gui, qtbot):
    services, window, _run = gui
    page = window.show_page("settings")
    panel = page.keys_panel
    qtbot.keyClicks(panel.passphrase, "s3cret")
    qtbot.mouseClick(panel.create_button, Qt.MouseButton.LeftButton)
    info = services.bundles.key_info()
    assert info.encrypted and info.fingerprint in panel.fingerprint.text()
    qtbot.mouseClick(panel.create_button, Qt.MouseButton.LeftButton)  # replacing needs the box ticked
    assert page.banner.kind == "error" and "already exists" in page.banner.text()
    assert services.bundles.key_info().fingerprint == info.fingerprint
