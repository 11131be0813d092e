"""The local runner's site view (dynadesk/orchestration/worker_site.py) holds what the image holds: a view cached
before a requirement was added is not reused without it."""

from __future__ import annotations

from dynadesk.orchestration import worker_site


def test_a_view_built_before_a_requirement_was_added_is_not_reused(tmp_path, monkeypatch):
    assert "onnx" in worker_site.TOP_REQUIREMENTS  # the onnxruntime backend's exporter, added to the image
    with monkeypatch.context() as m:  # the view an older DynaDesk built on this host, with the same packages
        m.setattr(worker_site, "TOP_REQUIREMENTS", tuple(r for r in worker_site.TOP_REQUIREMENTS if r != "onnx"))
        older = worker_site.site_view(tmp_path)
    assert not (older / "onnx").exists()
    current = worker_site.site_view(tmp_path)
    assert current != older and (current / "onnx").is_dir()
    assert worker_site.site_view(tmp_path) == current  # and the current one is cached
