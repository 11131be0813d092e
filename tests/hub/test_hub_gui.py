"""The lead's Hub page in the desktop app (issue 37), through the real widgets: invite from the page, a
person signs in to a real hub (uvicorn on loopback) with that code and works, and the page follows live
(its timer polls the store on a worker): connected, examples and votes per person, MER/vMER per target;
revoking from the page ends the person's session on the hub."""

from __future__ import annotations

import pytest
from support.gui import make_window
from support.hub import Client, build_workspace, hub_in_thread, rid

from dynadesk import annotation as ann
from dynadesk.workspace import Workspace

pytestmark = [pytest.mark.qt, pytest.mark.timeout(600)]


def _row(table, name: str) -> list[str] | None:
    for r in range(table.rowCount()):
        if table.item(r, 0).text() == name:
            return [table.item(r, c).text() for c in range(table.columnCount())]
    return None


def test_the_hub_page_follows_the_room_live(require_qt, qtbot, tmp_path):
    home = tmp_path / "ws"
    build_workspace(home, tmp_path / "models")
    services, window = make_window(qtbot, tmp_path, home)
    try:
        page = window.show_page("hub")
        page.timer.setInterval(200)
        page.timer.start()
        qtbot.waitUntil(lambda: page.overview is not None, timeout=10_000)
        assert page.people_table.rowCount() == 0

        page.invite_name.setText("ada")
        page.invite_role.setCurrentText("annotator")
        qtbot.mouseClick(page.invite_button, qtbot_button())
        qtbot.waitUntil(lambda: len(page.code.text()) == 14, timeout=10_000)
        code = page.code.text()
        page.invite_name.setText("val")
        page.invite_role.setCurrentText("validator")
        qtbot.mouseClick(page.invite_button, qtbot_button())
        qtbot.waitUntil(lambda: page.code.text() != code, timeout=10_000)
        val_code = page.code.text()
        qtbot.waitUntil(lambda: _row(page.people_table, "val") is not None, timeout=10_000)
        assert _row(page.people_table, "ada")[1:3] == ["annotator", "no"]

        with hub_in_thread(home) as hub:
            ada, val = Client(hub.url, code), Client(hub.url, val_code)
            qtbot.waitUntil(lambda: (_row(page.people_table, "ada") or [""] * 3)[2] == "yes", timeout=10_000)
            made = [ada.post("/api/examples", {"task": "sentiment", "inputs": {"statement": t}, "target": "positive",
                                               "request_id": rid(t)}).json() for t in ("one film", "two films")]
            ctx = ada.get("/api/context", task="qa").json()["context"]
            ada.post("/api/examples", {"task": "qa", "inputs": {"question": "which?"}, "context_id": ctx["id"],
                                       "answer": {"start": 0, "end": 3}, "request_id": rid("qa")})
            assert val.post("/api/votes", {"uid": made[0]["uid"], "verdict": "correct",
                                           "request_id": rid("v")}).status_code == 200
            qtbot.waitUntil(lambda: _row(page.people_table, "ada")[5:7] == ["3", "0"]
                            and _row(page.people_table, "val")[5:7] == ["0", "1"], timeout=10_000)
            fooled = sum(m["fooled"] for m in made)
            st = Workspace(home).open_store()
            s = ann.round_stats(st, "sentiment")
            st.close()
            assert s.collected == 2 and s.fooled == fooled
            targets = {(page.targets_table.item(r, 0).text(), page.targets_table.item(r, 3).text()):
                       [page.targets_table.item(r, c).text() for c in range(page.targets_table.columnCount())]
                       for r in range(page.targets_table.rowCount())}
            assert targets[("sentiment", "tiny-sentiment")][4:8] == ["2", str(fooled), "0", f"{50.0 * fooled:.1f}%"]
            assert targets[("qa", "tiny-qa")][4] == "1"
            assert page.summary.text().startswith("2 connected")

            # revoke ada from the page: her session ends on the running hub
            for r in range(page.people_table.rowCount()):
                if page.people_table.item(r, 0).text() == "ada":
                    page.people_table.selectRow(r)
            qtbot.mouseClick(page.revoke_button, qtbot_button())
            qtbot.waitUntil(lambda: _row(page.people_table, "ada")[1] == "annotator (revoked)", timeout=10_000)
            assert "1 live session(s) ended" in page.banner.text()
            assert ada.get("/api/me").status_code == 401
            assert _row(page.people_table, "ada")[2] == "no"
    finally:
        window.close()
        services.close()


def qtbot_button():
    from PySide6.QtCore import Qt

    return Qt.MouseButton.LeftButton
