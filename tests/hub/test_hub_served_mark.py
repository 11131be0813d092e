"""A served target (an endpoint answers, nothing sandboxes it) is marked "served, not sandboxed" in the hub's
task list, which the page shows beside the round's targets."""

from __future__ import annotations

import json
from pathlib import Path

from dynadesk import annotation as ann
from dynadesk import hub
from dynadesk.hub.service import HubCore
from dynadesk.models.served import SERVED_NOTE, served_manifest
from dynadesk.workspace import Workspace


def test_the_hubs_targets_name_a_served_model(tmp_path):
    from support.gui import majority_model

    from dynadesk.models.registry import register_model

    home = tmp_path / "ws"
    store = Workspace(home).ensure().open_store()
    try:
        register_model(store, majority_model(tmp_path / "local"), "sentiment", name="local")
        remote = tmp_path / "remote"
        remote.mkdir()
        (remote / "dynadesk-model.json").write_text(json.dumps(served_manifest("http://127.0.0.1:9", "tiny",
                                                                               "sentiment")))
        (remote / "endpoint.json").write_text(json.dumps({"endpoint": "http://127.0.0.1:9"}))
        register_model(store, remote, "sentiment", name="remote")
        ann.new_round(store, "sentiment", ["local", "remote"])
    finally:
        store.close()
    core = HubCore(home)
    try:
        task = next(t for t in core.tasks() if t["name"] == "sentiment")
    finally:
        core.close()
    assert task["targets"] == ["local", "remote"] and task["served"] == ["remote"]
    script = (Path(hub.__file__).parent / "static" / "hub.js").read_text(encoding="utf-8")
    assert f"({SERVED_NOTE})" in script and "state.task.served" in script  # what the page prints beside the target
