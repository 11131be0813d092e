"""Audit page over a real signed bundle of a real local evaluation (tiny model, a few dozen examples):
check its inputs, re-run it with the local runner and see the field-by-field verdicts, cancel a re-run."""

from __future__ import annotations

import math

import pytest
from PySide6.QtCore import Qt
from support.gui import make_window

pytestmark = pytest.mark.qt


@pytest.fixture(scope="module")
def made(tmp_path_factory):
    """One local evaluation of the tiny model on 16 + 8 examples and its signed bundle (shared: it costs CPU)."""
    from support.eval import signed_local_run

    ws, store, run, bundle, path = signed_local_run(tmp_path_factory.mktemp("gui-audit"))
    store.close()
    return ws, run, bundle, path


@pytest.fixture
def gui(require_qt, qtbot, tmp_path, made):
    ws, run, bundle, path = made
    services, window = make_window(qtbot, tmp_path, ws.home)
    yield services, window, run, bundle, path
    window.close()
    services.close()


def rows(page) -> dict[str, list[str]]:
    t = page.checks
    return {t.item(r, 0).text(): [t.item(r, c).text() for c in range(t.columnCount())] for r in range(t.rowCount())}


def test_check_inputs_then_rerun_and_compare_field_by_field(gui, qtbot):
    services, window, run, bundle, path = gui
    svc = services.audit
    page = window.show_page("audit")
    assert page.rerun_available and not page.check_button.isEnabled()  # no file chosen yet
    page.path_edit.setText(str(path))
    assert page.check_button.isEnabled() and page.rerun_button.isEnabled()

    with qtbot.waitSignal(svc.done, timeout=60_000):  # done (buttons back) comes after finished
        with qtbot.waitSignal(svc.finished, timeout=60_000) as got:
            qtbot.mouseClick(page.check_button, Qt.MouseButton.LeftButton)
    report = got.args[0]
    assert report.rerun_id is None and page.report is report
    assert page.check_button.isEnabled() and not page.progress.isVisible()
    table = rows(page)
    assert list(table) == [c.field for c in report.checks]
    assert table["signature"][1:3] == ["integrity", "identical"]
    assert table["signature"][3] == bundle.key_fingerprint
    assert not any(f.startswith("metrics[") for f in table)  # nothing re-computed without a re-run
    assert f"{len(report.checks)} checks" in page.summary.text() and "not re-computed" in page.summary.text()
    assert "inputs checked" in page.verdict.text() and "re-run: reproduced" not in page.verdict.text()

    page.runner_combo.setCurrentIndex(page.runner_combo.findData("local"))
    with qtbot.waitSignal(svc.done, timeout=120_000):  # done (buttons back) comes after finished
        with qtbot.waitSignal(svc.finished, timeout=120_000) as got:
            qtbot.mouseClick(page.rerun_button, Qt.MouseButton.LeftButton)
            assert page.cancel_button.isEnabled() and not page.rerun_button.isEnabled()
    report = got.args[0]
    # deterministic fields must reproduce; noise may make a measured claim differ (tests/audit/test_audit_measured.py)
    assert not report.failures and not report.incomplete and report.rerun_id not in (None, run.id)
    assert services.ws.store.evaluations.get(report.rerun_id).status == "succeeded"
    table = rows(page)
    assert set(table) == {c.field for c in report.checks}
    perf = table["metrics[set0-test].perf"]
    want = next(m.value for m in bundle.payload.metrics if m.metric == "perf" and m.dataset == "set0-test")
    assert perf[1:3] == ["deterministic", "identical"] and float(perf[3]) == want == float(perf[4])
    assert table["predictions.merkle_root"][2] == "identical"
    assert table["predictions.merkle_root"][4] == bundle.payload.to_json()["predictions"]["merkle_root"]
    mem = table["metrics[(run)].memory"]
    # a re-measurement taken on a loaded machine is noisy, so the claim is not judged against it
    assert mem[1] == "measured" and (mem[2] in ("within tolerance", "differs") or
                                     (mem[2] == "not comparable" and "noisy" in report.not_comparable))
    tol = bundle.payload.to_json()["tolerances"]["memory"]["relative"]
    assert mem[5] == f"±{tol * 100:g}%"
    col = page.checks.horizontalHeaderItem(2).text()
    assert col == "verdict"
    r = list(table).index("metrics[set0-test].perf")
    assert page.checks.item(r, 2).background().color().name() == "#e8f5e9"  # identical is green
    if report.ok:
        assert "audit passed" in page.verdict.text() and "re-run: reproduced" in page.verdict.text()
    else:  # a measured claim differed: the page says so, distinct from a deterministic failure
        assert "measured claims not reproduced" in page.verdict.text()
    counts = report.counts()
    assert f"{counts['identical']} identical" in page.summary.text()
    assert f"compared with run {report.rerun_id}" in page.summary.text()
    assert not page.progress.isVisible() and page.check_button.isEnabled()


def test_a_forged_metric_differs_after_a_rerun_and_a_rerun_can_be_cancelled(gui, qtbot, tmp_path):
    from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey

    from dynadesk.sync.format import keys as K
    from dynadesk.sync.format.envelope import sign_payload

    services, window, run, bundle, path = gui
    svc = services.audit
    payload = bundle.payload.to_json()
    target = next(m for m in payload["metrics"] if m["metric"] == "perf" and m["dataset"] == "set1-test")
    target["value"] = math.nextafter(target["value"], math.inf)
    key = Ed25519PrivateKey.generate()
    payload["submitter"]["key_fingerprint"] = K.fingerprint(K.public_raw(key))
    forged = tmp_path / "forged.json"
    forged.write_bytes(sign_payload(payload, key).raw)

    page = window.show_page("audit")
    page.path_edit.setText(str(forged))
    page.runner_combo.setCurrentIndex(page.runner_combo.findData("local"))
    with qtbot.waitSignal(svc.done, timeout=120_000):  # done (buttons back) comes after finished
        with qtbot.waitSignal(svc.finished, timeout=120_000) as got:
            qtbot.mouseClick(page.rerun_button, Qt.MouseButton.LeftButton)
    report = got.args[0]
    assert [c.field for c in report.failures] == ["metrics[set1-test].perf"]
    table = rows(page)
    assert table["metrics[set1-test].perf"][2] == "differs ✘"
    r = list(table).index("metrics[set1-test].perf")
    assert page.checks.item(r, 2).background().color().name() == "#fdecea"  # differs is red
    assert "audit failed" in page.verdict.text() and "metrics[set1-test].perf" in page.summary.text()
    before = services.ws.store.evaluations.list()

    with qtbot.waitSignal(svc.cancelled, timeout=120_000):
        qtbot.mouseClick(page.rerun_button, Qt.MouseButton.LeftButton)
        qtbot.mouseClick(page.cancel_button, Qt.MouseButton.LeftButton)
    qtbot.waitUntil(lambda: page.rerun_button.isEnabled(), timeout=10_000)
    assert "cancelled" in page.verdict.text() and page.banner.kind == "warn"
    new = [r for r in services.ws.store.evaluations.list() if r.id not in {b.id for b in before}]
    assert new and all(r.status == "cancelled" for r in new), [(r.id, r.status) for r in new]
