"""Start and stop the hub from the app (issue 47): the Hub page runs the real ``dynadesk hub serve`` over its
workspace, shows the address it prints in large type with a QR code of it, lists the invite codes it gives (one
signs a person in on that very hub), and stops it. Real subprocess, real HTTP on loopback."""

from __future__ import annotations

import pytest
import requests
from PySide6.QtCore import Qt
from support.gui import make_window
from support.hub import Client, free_port

pytestmark = pytest.mark.qt


@pytest.fixture
def hub_page(require_qt, qtbot, tmp_path):
    services, window = make_window(qtbot, tmp_path)
    page = window.show_page("hub")
    yield services, window, page
    page.process.close()
    window.close()
    services.close()


def _painted_modules(qr) -> list[list[bool]]:
    """Read the QR code back off the widget's pixels: the colour at the centre of every module."""
    image = qr.grab().toImage()
    px, n = qr.module_px(), len(qr.matrix)
    return [[image.pixelColor(x * px + px // 2, y * px + px // 2).lightness() < 128 for x in range(n)]
            for y in range(n)]


def test_start_the_hub_show_its_address_and_qr_code_invite_and_stop(hub_page, qtbot):
    import qrcode

    services, _window, page = hub_page
    box = page.server
    assert box.address_label.text() == "The hub is not running." and not box.stop_button.isEnabled()
    port = free_port()
    box.lan_check.setChecked(False)  # loopback (HTTP): no certificate to make in a test
    box.port.setValue(port)
    qtbot.mouseClick(box.start_button, Qt.MouseButton.LeftButton)
    assert not box.start_button.isEnabled() and box.stop_button.isEnabled()
    url = f"http://127.0.0.1:{port}/"
    qtbot.waitUntil(lambda: box.address_label.text() == url, timeout=60_000)
    assert "This machine only" in box.detail_label.text()

    def answers() -> bool:
        try:
            return requests.get(url, timeout=2).status_code == 200
        except requests.ConnectionError:
            return False
    qtbot.waitUntil(answers, timeout=60_000)  # the hub the app started serves its web page

    # the QR code on screen encodes the address: its painted modules are the ones qrcode makes for the URL
    expected = qrcode.QRCode(border=4, error_correction=qrcode.constants.ERROR_CORRECT_M)
    expected.add_data(url)
    expected.make(fit=True)
    assert box.qr.text == url and box.qr.module_px() >= 3
    assert _painted_modules(box.qr) == [list(r) for r in expected.get_matrix()]

    page.invite_name.setText("ana")
    page.invite_role.setCurrentText("annotator")
    with qtbot.waitSignal(page._svc.invited, timeout=10_000) as blocker:
        qtbot.mouseClick(page.invite_button, Qt.MouseButton.LeftButton)
    code = blocker.args[0].code
    assert box.codes.count() == 1 and box.codes.item(0).text().startswith(code)
    assert "16pt" in box.codes.styleSheet()  # large enough to read out across a room
    assert Client(url.rstrip("/"), code).me["name"] == "ana"  # the code signs in on the hub the app runs

    with qtbot.waitSignal(page.process.stopped, timeout=30_000):
        qtbot.mouseClick(box.stop_button, Qt.MouseButton.LeftButton)
    assert not page.process.running and box.start_button.isEnabled()
    assert box.address_label.text() == "The hub is not running." and box.qr.matrix == []
    assert page.banner.text() == "The hub stopped."
    with pytest.raises(requests.ConnectionError):
        requests.get(url, timeout=2)


def test_a_hub_that_cannot_start_says_why(hub_page, qtbot):
    import socket

    _services, _window, page = hub_page
    box = page.server
    with socket.socket() as taken:  # the port is held: the hub exits, the page shows its last lines
        taken.bind(("127.0.0.1", 0))
        taken.listen(1)
        box.lan_check.setChecked(False)
        box.port.setValue(taken.getsockname()[1])
        with qtbot.waitSignal(page.process.stopped, timeout=60_000):
            qtbot.mouseClick(box.start_button, Qt.MouseButton.LeftButton)
    assert page.banner.kind == "error" and "The hub stopped by itself" in page.banner.text()
    assert box.start_button.isEnabled() and not box.stop_button.isEnabled()
